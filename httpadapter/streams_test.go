package httpadapter_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/storage/memstore"
)

// TestEventStreamsEndAtShutdown: with ten streams open, the host's
// http.Server shuts down within a second, without closing the Feed first:
// the handler ends its streams when its server shuts down.
func TestEventStreamsEndAtShutdown(t *testing.T) {
	e := newEnv(t, memstore.New().Driver(), envConfig{events: &events.Options{}})
	var open []*sseStream
	for i := range 10 {
		open = append(open, e.stream(t, users[i%2], ""))
	}
	for _, s := range open {
		f, ok := <-s.frames
		require.True(t, ok)
		require.NotEmpty(t, f.comment, "the stream's opening comment")
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, e.srv.Config.Shutdown(ctx), "Shutdown returns within a second")
	t.Logf("Shutdown took %v with %d open streams", time.Since(start), len(open))
	for _, s := range open {
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			t.Fatal("a stream was not ended by the shutdown")
		}
	}
}

// TestEventStreamEndsWithRequest: served without an http.Server (ServeHTTP
// called directly), a stream ends when the request's context is done.
func TestEventStreamEndsWithRequest(t *testing.T) {
	e := newEnv(t, memstore.New().Driver(), envConfig{events: &events.Options{}})
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequestWithContext(ctx, "GET", "/v1/events", nil)
	req.Header.Set("Authorization", "Bearer tok-alice")
	req.Header.Set("Accept", "text/event-stream")
	done := make(chan struct{})
	rec := httptest.NewRecorder()
	go func() {
		defer close(done)
		e.srv.Config.Handler.ServeHTTP(rec, req)
	}()
	select {
	case <-done:
		t.Fatal("the stream ended before its request")
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream outlived its request")
	}
	assert.Equal(t, http.StatusOK, rec.Code)
}

// TestEventStreamLimits: a caller holds at most MaxStreamsPerCaller
// streams (one more is a 429 with Retry-After), others are not affected,
// and a closed stream frees its slot; the handler holds at most
// MaxStreams in all.
func TestEventStreamLimits(t *testing.T) {
	t.Run("per caller", func(t *testing.T) {
		e := newEnv(t, memstore.New().Driver(), envConfig{events: &events.Options{}})
		var alice []*sseStream
		for range 10 {
			alice = append(alice, e.stream(t, "alice", ""))
		}
		e.tooManyStreams(t, "alice")
		bob := e.stream(t, "bob", "")

		// Alice's and Bob's streams go on.
		res := e.as(t, "bob", "POST", "/v1/messages", form("conversation_id=general&message=hi"))
		require.Equal(t, http.StatusCreated, res.StatusCode)
		assert.Equal(t, "message.created", bob.next(t).typ)
		for _, s := range alice {
			assert.Equal(t, "message.created", s.next(t).typ)
		}

		// A closed stream frees its slot (once the server sees it gone).
		alice[0].res.Body.Close()
		deadline := time.Now().Add(5 * time.Second)
		for {
			res := e.openStream(t, "alice")
			if res.StatusCode == http.StatusOK {
				break
			}
			require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
			require.True(t, time.Now().Before(deadline), "the closed stream's slot was not freed")
			time.Sleep(20 * time.Millisecond)
		}
		e.tooManyStreams(t, "alice")
	})

	t.Run("in all", func(t *testing.T) {
		e := newEnv(t, memstore.New().Driver(), envConfig{events: &events.Options{}, opts: httpadapter.Options{MaxStreams: 2}})
		e.stream(t, "alice", "")
		e.stream(t, "bob", "")
		e.tooManyStreams(t, "mallory")
	})
}

// openStream opens GET /v1/events as user with Accept: text/event-stream;
// the response's body is closed at the test's end.
func (e *env) openStream(t testing.TB, user string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", e.url+"/v1/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tok-"+user)
	req.Header.Set("Accept", "text/event-stream")
	res, err := e.srv.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// tooManyStreams checks that one more stream of user is refused.
func (e *env) tooManyStreams(t testing.TB, user string) {
	t.Helper()
	res := e.openStream(t, user)
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	assert.NotEmpty(t, res.Header.Get("Retry-After"))
	var body struct {
		Error struct{ Type, Code, Message string }
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
	assert.Equal(t, "rate_limit_error", body.Error.Type)
	assert.Equal(t, "too_many_streams", body.Error.Code)
	assert.NotEmpty(t, body.Error.Message)
}
