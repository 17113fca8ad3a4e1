package main

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"

	"github.com/parleychat/parley/httpadapter"
)

// chatFiles is the chat page: plain HTML, CSS and JavaScript over the /v1
// API, with no build step.
//
//go:embed chat
var chatFiles embed.FS

// chatPageCSP keeps the page to its own scripts and styles and its own
// origin's API; blob: is the source of downloaded files.
const chatPageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// mountChat serves the chat page at / and its files under /chat/, next to
// the API that mux already serves at /. GET /chat/me tells the page who its
// token belongs to (auth is the API's own Authenticator), so that it can
// react in its caller's name and tell its caller's messages apart.
func mountChat(mux *http.ServeMux, auth httpadapter.Authenticator) {
	files, _ := fs.Sub(chatFiles, "chat") // the embedded folder exists: cannot fail
	static := http.StripPrefix("/chat/", http.FileServerFS(files))
	page := func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", chatPageCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		if r.URL.Path == "/" {
			http.ServeFileFS(w, r, files, "index.html")
			return
		}
		static.ServeHTTP(w, r)
	}
	mux.HandleFunc("GET /{$}", page)
	mux.HandleFunc("GET /chat/", page)
	mux.HandleFunc("GET /chat/me", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		c, err := auth.Authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", "Bearer")
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{
				"type": "authentication_error", "code": "unauthenticated", "message": "a valid bearer token is required"}})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"id": c.ID, "object": "contact", "username": c.Username})
	})
}
