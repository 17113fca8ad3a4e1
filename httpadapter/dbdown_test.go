package httpadapter_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/storage/sqlstore"
)

// blackHole forwards TCP connections to target until it is switched on;
// from then on it forwards nothing, in either direction, and answers
// nothing: a database server that hangs, or a network that drops packets.
type blackHole struct {
	ln     net.Listener
	target string
	on     atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newBlackHole(t *testing.T, target string) *blackHole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b := &blackHole{ln: ln, target: target}
	go b.serve()
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		for _, c := range b.conns {
			c.Close()
		}
		b.mu.Unlock()
	})
	return b
}

func (b *blackHole) serve() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.conns = append(b.conns, c)
		b.mu.Unlock()
		if b.on.Load() {
			continue // accepted, never answered
		}
		up, err := net.Dial("tcp", b.target)
		if err != nil {
			c.Close()
			continue
		}
		b.mu.Lock()
		b.conns = append(b.conns, up)
		b.mu.Unlock()
		go b.pipe(up, c)
		go b.pipe(c, up)
	}
}

// pipe copies until the hole is switched on, then swallows everything.
func (b *blackHole) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		if b.on.Load() {
			continue
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			return
		}
	}
}

// TestDatabaseHangsAnswers503: with PostgreSQL or MariaDB behind a network
// that stops answering mid-service, requests answer 503 with Retry-After
// within their deadline, rather than hang (issue 10).
func TestDatabaseHangsAnswers503(t *testing.T) {
	for _, eng := range backendtest.SQL(t)[1:] { // the servers, not SQLite
		t.Run(eng.Name, func(t *testing.T) {
			dsn := eng.DSN(t)
			u, err := url.Parse(dsn)
			require.NoError(t, err)
			hole := newBlackHole(t, u.Host)
			u.Host = hole.ln.Addr().String()
			store, err := sqlstore.Open(context.Background(), u.String(), &sqlstore.Options{Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, err)
			t.Cleanup(func() { _ = store.Close() })
			require.NoError(t, store.Migrate(context.Background()))

			// The deadlines hold once the hole is on: before, the fixture's
			// requests take what a loaded machine gives them.
			e := newEnv(t, store.Driver(), envConfig{files: attachments.Options{FinishTimeout: time.Second}, wrap: func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if !hole.on.Load() {
						h.ServeHTTP(w, r)
						return
					}
					ctx, cancel := context.WithTimeout(r.Context(), requestDeadline)
					defer cancel()
					h.ServeHTTP(w, r.WithContext(ctx))
				})
			}})
			fx := e.fixture(t)
			hole.on.Store(true)
			for _, rq := range []struct {
				method, path string
				body         *reqBody
			}{
				{"GET", "/v1/messages/" + fx.msgA, nil},
				{"GET", "/v1/messages?conversation_id=" + fx.conv, nil},
				{"POST", "/v1/messages", form("conversation_id=" + fx.conv + "&message=hi")},
				{"PUT", "/v1/messages/" + fx.msgB, form("reactions[tada][]=alice")},
				{"POST", "/v1/attachments", multipartBody(field("conversation_id", fx.conv), file("a.txt", "text/plain", "x"))},
			} {
				start := time.Now()
				res := e.as(t, "alice", rq.method, rq.path, rq.body)
				took := time.Since(start)
				assertError(t, res, 503, wantErr{"api_error", "unavailable", ""})
				assert.Equal(t, "5", res.Header.Get("Retry-After"))
				assert.Less(t, took, requestDeadline+2*time.Second, "%s %s took %v", rq.method, rq.path, took)
			}
		})
	}
}
