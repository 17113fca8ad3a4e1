// Command embed shows Parley mounted inside an existing net/http server that
// has its own notion of users: the host's browser sessions and API keys
// become Parley callers, and the /v1 API is served under the host's /chat
// prefix.
//
// Run it from the repository's root (the first run compiles for a minute or
// more):
//
//	go run ./examples/embed              # or -addr 127.0.0.1:9000
//
// It keeps its SQLite database and files in a temporary folder, which it
// removes when it stops: on Ctrl-C (SIGINT) or SIGTERM it ends the event
// streams, finishes the requests under way, closes storage and deletes the
// folder. The setup is the README's embedding program: the database claims
// its files folder, a handler logs each event, and the caller's live
// events are served at /chat/v1/events.
//
// A program calls with an API key as bearer token; a browser signs in at the
// host's /login and calls with its session cookie:
//
//	curl -H 'Authorization: Bearer key-ann' -d conversation_id=team -d message=hi \
//	     http://127.0.0.1:8081/chat/v1/messages
//	curl -c jar -d key=key-ben http://127.0.0.1:8081/login
//	curl -b jar 'http://127.0.0.1:8081/chat/v1/messages?conversation_id=team'
//	curl -N -b jar -H 'Accept: text/event-stream' http://127.0.0.1:8081/chat/v1/events
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	_ "gocloud.dev/blob/fileblob" // file:// buckets

	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/blobstore"
	"github.com/parleychat/parley/storage/sqlstore"
	_ "github.com/parleychat/parley/storage/sqlstore/sqlite" // SQLite files
)

func main() { os.Exit(command(os.Args[1:], os.Stderr)) }

// command runs the program with its arguments until SIGINT or SIGTERM, and
// returns its exit code. Everything run opens, and its temporary folder,
// is closed and removed before command returns (log.Fatal, which exits
// without running deferred calls, is not used for that reason).
func command(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("embed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8081", "the address to listen on")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := log.New(stderr, "", log.LstdFlags)
	if err := run(ctx, *addr, logger); err != nil {
		logger.Print(err)
		return 1
	}
	return 0
}

// run serves the host until ctx ends, then shuts the server down, closes
// storage and removes its temporary folder.
func run(ctx context.Context, addr string, logger *log.Logger) error {
	dir, err := os.MkdirTemp("", "parley-embed")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// Storage and services: SQLite and a local folder here, with the two
	// drivers imported above; PostgreSQL and S3 in production are a
	// different DSN and bucket URL, and the imports of their drivers
	// (storage/sqlstore/postgres, storage/blobstore/s3).
	store, err := sqlstore.Open(ctx, filepath.Join(dir, "chat.db"), nil)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	// The files in a folder of their own; create_dir makes it.
	blobs, err := blobstore.Open(ctx, "file://"+filepath.ToSlash(filepath.Join(dir, "files"))+"?create_dir=true")
	if err != nil {
		return err
	}
	defer blobs.Close()
	// The messaging Service, with its files Service and events Feed;
	// closed after the server's shutdown (deferred calls run last first).
	msgs, err := messaging.New(ctx, store, blobs, nil)
	if err != nil {
		return err
	}
	defer msgs.Close()
	// The folder must be this database's files: another database's (or a
	// new database over old files) is refused rather than touched.
	if err := msgs.Files().Claim(ctx); err != nil {
		return err
	}
	// Every write records its events; after the commit the Feed delivers
	// them to /chat/v1/events (see newHost), to Go subscribers
	// (msgs.Events().Subscribe) and to the host's handlers, such as this
	// one: at least once, in order, retried, resumed after a restart.
	err = msgs.Events().Handle(ctx, "log", func(ctx context.Context, e messaging.Event) error {
		logger.Printf("event: %s in %s", e.Type, e.ConversationID) // or send a push notification
		return nil
	})
	if err != nil {
		return err
	}

	mux, err := newHost(msgs)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := newServer(addr, mux, serverTimeouts)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Printf("listening on http://%s (chat API under /chat/v1); data in %s until Ctrl-C", ln.Addr(), dir)

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// Shutdown ends the event streams (their clients resume after their
	// last event) and waits for the other requests under way.
	logger.Print("stopping: finishing the requests under way, then removing ", dir)
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		// Requests still under way after the grace period are cut.
		_ = srv.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
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
func newHost(msgs *messaging.Service) (http.Handler, error) {
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
	api, err := httpadapter.New(msgs, &httpadapter.Options{
		Authenticator: auth,
		Events:        true, // GET /chat/v1/events: the caller's live events (server-sent events)
	})
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
