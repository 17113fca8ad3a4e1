package main

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/blobstore"
)

// chatFiles is the chat page: plain HTML, CSS and JavaScript over the /v1
// API, with no build step.
//
//go:embed chat
var chatFiles embed.FS

// chatPageCSP keeps the page to its own scripts and styles and its own
// origin's API, and the origins the page may send files to (the bucket's,
// for direct uploads to signed URLs); blob: is the source of downloaded
// files and of previews.
func chatPageCSP(uploadOrigins []string) string {
	connect := strings.Join(append([]string{"'self'"}, uploadOrigins...), " ")
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src " + connect +
		"; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
}

// chatMaxMessageChars is the longest message the server takes, which the
// page counts against (as the server counts: in Unicode code points). This
// server runs messaging with its default limit, which this is;
// TestChatMeTellsTheLimit holds the two together.
const chatMaxMessageChars = 4000

// mountChat serves the chat page at / and its files under /chat/, next to
// the API that mux already serves at /. GET /chat/me tells the page who its
// token belongs to (auth is the API's own Authenticator), so that it can
// react in its caller's name and tell its caller's messages apart, and the
// longest message the server takes. It asks limit, when not nil, as the API
// asks its Options.Limit: about refused credentials (with no caller) and
// about each caller, so that it is no way around the rate limit. GET
// /favicon.ico, which browsers ask for on their own, is the page's icon,
// served without a token (the API under / would answer it 401).
// uploadOrigins are the origins (scheme://host) of the URLs the bucket signs
// for direct uploads, which the page's Content Security Policy lets it send
// bytes to.
func mountChat(mux *http.ServeMux, auth httpadapter.Authenticator, limit func(*http.Request, messaging.Contact) (time.Duration, bool), uploadOrigins ...string) {
	files, _ := fs.Sub(chatFiles, "chat") // the embedded folder exists: cannot fail
	static := http.StripPrefix("/chat/", http.FileServerFS(files))
	csp := chatPageCSP(uploadOrigins)
	page := func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
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
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/x-icon")
		w.Header().Set("Cache-Control", "public, max-age=86400")
		http.ServeFileFS(w, r, files, "favicon.ico")
	})
	mux.HandleFunc("GET /chat/me", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		c, err := auth.Authenticate(r)
		if err != nil {
			if limited(w, r, limit, messaging.Contact{}) {
				return
			}
			h.Set("WWW-Authenticate", "Bearer")
			writeChatError(w, http.StatusUnauthorized, "authentication_error", "unauthenticated", "a valid bearer token is required")
			return
		}
		if limited(w, r, limit, c) {
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"id": c.ID, "object": "contact", "username": c.Username,
			"max_message_chars": chatMaxMessageChars})
	})
}

// limited asks limit about the request of caller and, when it refuses,
// answers 429 with Retry-After, as the API does, and reports true.
func limited(w http.ResponseWriter, r *http.Request, limit func(*http.Request, messaging.Contact) (time.Duration, bool), caller messaging.Contact) bool {
	if limit == nil {
		return false
	}
	after, ok := limit(r, caller)
	if ok {
		return false
	}
	secs := strconv.FormatInt(max(1, int64((after+time.Second-1)/time.Second)), 10)
	w.Header().Set("Retry-After", secs)
	writeChatError(w, http.StatusTooManyRequests, "rate_limit_error", "rate_limited", "too many requests; retry after "+secs+" s")
	return true
}

// writeChatError answers the API's error object.
func writeChatError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"type": typ, "code": code, "message": msg}})
}

// uploadOrigin is the origin (scheme://host) of the URLs blobs signs for
// direct uploads, learnt by signing one (which sends nothing), or "" for a
// bucket that signs none (a local folder: the bytes go to the API's own
// route, on the page's origin).
func uploadOrigin(ctx context.Context, blobs *blobstore.Store) string {
	p, err := blobs.SignPut(ctx, "chat-page-probe", blobstore.PutOptions{
		ContentType: "application/octet-stream", SHA256: make([]byte, sha256.Size), Expiry: time.Minute})
	if err != nil {
		return ""
	}
	u, err := url.Parse(p.URL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
