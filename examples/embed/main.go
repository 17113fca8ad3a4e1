// Command embed shows Parley mounted inside an existing net/http server that
// has its own notion of users: the host's browser sessions and API keys
// become Parley callers, and the /v1 API is served under the host's /chat
// prefix.
//
//	go run ./examples/embed
//
// A program calls with an API key as bearer token; a browser signs in at the
// host's /login and calls with its session cookie:
//
//	curl -H 'Authorization: Bearer key-ann' -d conversation_id=team -d message=hi \
//	     http://127.0.0.1:8081/chat/v1/messages
//	curl -c jar -d key=key-ben http://127.0.0.1:8081/login
//	curl -b jar 'http://127.0.0.1:8081/chat/v1/messages?conversation_id=team'
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	_ "gocloud.dev/blob/fileblob" // file:// buckets

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/blobstore"
	"github.com/parleychat/parley/storage/sqlstore"
	_ "github.com/parleychat/parley/storage/sqlstore/sqlite" // SQLite files
)

func main() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "parley-embed")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// Storage and services: SQLite and a local folder here, with the two
	// drivers imported above; PostgreSQL and S3 in production are a
	// different DSN and bucket URL, and the imports of their drivers
	// (storage/sqlstore/postgres, storage/blobstore/s3).
	store, err := sqlstore.Open(ctx, filepath.Join(dir, "chat.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	blobs, err := blobstore.Open(ctx, "file://"+filepath.ToSlash(dir))
	if err != nil {
		log.Fatal(err)
	}
	defer blobs.Close()
	msgs := messaging.New(store, nil)
	files := attachments.New(store, blobs, msgs, nil)

	mux, err := newHost(msgs, files)
	if err != nil {
		log.Fatal(err)
	}
	log.Println("listening on http://127.0.0.1:8081 (chat API under /chat/v1)")
	log.Fatal(newServer("127.0.0.1:8081", mux, serverTimeouts).ListenAndServe())
}

// timeouts bound what a slow or idle client may hold: a server on the open
// internet sets them all (http.ListenAndServe sets none).
type timeouts struct {
	header, request, idle time.Duration
}

// serverTimeouts suit the small uploads of this example: headers within 10
// seconds, a whole request (an upload included) and its answer within 2
// minutes each. A host that serves large files gives bodies deadlines that
// move with their progress instead, as examples/server does.
var serverTimeouts = timeouts{header: 10 * time.Second, request: 2 * time.Minute, idle: 2 * time.Minute}

// newServer returns the host's HTTP server.
func newServer(addr string, h http.Handler, t timeouts) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: t.header,
		ReadTimeout:       t.request,
		WriteTimeout:      t.request,
		IdleTimeout:       t.idle,
		MaxHeaderBytes:    64 << 10,
	}
}

// host is the host application: its users, their API keys and the browser
// sessions of those who signed in.
type host struct {
	apiKeys map[string]string // API key → user name

	mu       sync.Mutex
	sessions map[string]string // session id → user name
}

// newHost returns the host's mux, with Parley's API under /chat.
func newHost(msgs *messaging.Service, files *attachments.Service) (http.Handler, error) {
	h := &host{apiKeys: map[string]string{"key-ann": "ann", "key-ben": "ben"}, sessions: map[string]string{}}

	// The host's authentication, as a Parley Authenticator. A request that
	// carries a bearer token is a program with an API key; any other is a
	// browser with the session cookie of the host's /login. Each user gets
	// a contact on first use.
	contact := func(ctx context.Context, name string, ok bool) (messaging.Contact, error) {
		if !ok {
			return messaging.Contact{}, messaging.ErrUnauthenticated
		}
		return msgs.SaveContact(ctx, messaging.Contact{Username: name})
	}
	apiKeys := httpadapter.BearerToken(func(ctx context.Context, key string) (messaging.Contact, error) {
		name, ok := h.apiKeys[key]
		return contact(ctx, name, ok)
	})
	auth := httpadapter.AuthenticatorFunc(func(r *http.Request) (messaging.Contact, error) {
		if r.Header.Get("Authorization") != "" {
			return apiKeys.Authenticate(r)
		}
		name, ok := h.session(r)
		return contact(r.Context(), name, ok)
	})
	// Requests with the session cookie are safe from other sites: the
	// adapter refuses cross-origin POST, PUT and DELETE that carry no bearer
	// token (httpadapter.Options.CrossOriginProtection).
	api, err := httpadapter.New(msgs, files, &httpadapter.Options{Authenticator: auth})
	if err != nil {
		return nil, err
	}

	// Mount under /chat: the adapter serves /v1/… below whatever prefix it is
	// given, and file_url and Location carry the prefix.
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "the host's own home page")
	})
	mux.HandleFunc("POST /login", h.login)
	mux.Handle("/chat/", http.StripPrefix("/chat", api))
	return mux, nil
}

// login signs a user in by API key (a password, in a real host) and sets
// the session cookie.
func (h *host) login(w http.ResponseWriter, r *http.Request) {
	name, ok := h.apiKeys[r.PostFormValue("key")]
	if !ok {
		http.Error(w, "unknown key", http.StatusUnauthorized)
		return
	}
	id := rand.Text()
	h.mu.Lock()
	h.sessions[id] = name
	h.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: "session", Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
	fmt.Fprintln(w, "signed in as", name)
}

// session returns the user of the request's session cookie.
func (h *host) session(r *http.Request) (string, bool) {
	c, err := r.Cookie("session")
	if err != nil {
		return "", false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	name, ok := h.sessions[c.Value]
	return name, ok
}
