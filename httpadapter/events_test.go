package httpadapter_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

// sseEvent is one event of a Server-Sent Events stream, or a comment.
type sseEvent struct {
	id, typ, data string
	comment       string
}

// sseStream reads an event stream in the background.
type sseStream struct {
	res    *http.Response
	frames chan sseEvent
	done   chan error // the read's end: io.EOF when the server ended it
}

// stream opens GET /v1/events?query as user, with Accept:
// text/event-stream and hdr, and checks the response's head.
func (e *env) stream(t testing.TB, user, query string, hdr ...string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", e.url+"/v1/events?"+query, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tok-"+user)
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := e.srv.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { res.Body.Close() })
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/event-stream; charset=utf-8", res.Header.Get("Content-Type"))
	assert.Equal(t, "no-cache", res.Header.Get("Cache-Control"))
	s := &sseStream{res: res, frames: make(chan sseEvent, 1000), done: make(chan error, 1)}
	go func() { s.done <- readSSE(res.Body, s.frames) }()
	return s
}

// readSSE parses frames from r until it ends.
func readSSE(r io.Reader, out chan<- sseEvent) error {
	br := bufio.NewReader(r)
	var cur sseEvent
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			close(out)
			return err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if cur != (sseEvent{}) {
				out <- cur
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, ":"):
			cur.comment = strings.TrimSpace(line[1:])
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data += line[6:]
		}
	}
}

// next returns the next event of the stream, skipping comments.
func (s *sseStream) next(t testing.TB) sseEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case f, ok := <-s.frames:
			require.True(t, ok, "the stream ended")
			if f.comment != "" && f.typ == "" {
				continue
			}
			return f
		case <-timeout:
			t.Fatal("no event within 10 s")
		}
	}
}

// none checks that no event comes within d.
func (s *sseStream) none(t testing.TB, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case f, ok := <-s.frames:
			if ok && f.comment != "" && f.typ == "" {
				continue
			}
			t.Fatalf("unexpected frame %+v", f)
		case <-timeout:
			return
		}
	}
}

// object returns the event's JSON, decoded.
func (f sseEvent) object(t testing.TB) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(f.data), &v), "data: %s", f.data)
	return v
}

func newEventsEnv(t *testing.T, store storetest.Store, o events.Options) *env {
	return newEnv(t, store, envConfig{events: &o})
}

func eachStore(t *testing.T, f func(t *testing.T, store storetest.Store)) {
	for _, b := range backendtest.All(t) {
		t.Run(b.Name, func(t *testing.T) { f(t, b.New(t)) })
	}
}

// TestEventStream follows the stream of three callers while changes are
// made over HTTP: each gets the events it may see, as SSE frames whose
// data is the Event object, with the resource as GET shows it.
func TestEventStream(t *testing.T) {
	eachStore(t, func(t *testing.T, store storetest.Store) {
		e := newEventsEnv(t, store, events.Options{})
		alice := e.stream(t, "alice", "")
		mal := e.stream(t, "mallory", "")
		inConv := e.stream(t, "bob", "conversation_id=general")

		res := e.as(t, "bob", "POST", "/v1/messages", form("conversation_id=general&message=hello"))
		require.Equal(t, http.StatusCreated, res.StatusCode)
		msg := res.json(t)
		id := msg["id"].(string)
		e.as(t, "alice", "POST", "/v1/messages", form("conversation_id=private-x&message=secret"))
		res = e.as(t, "alice", "PUT", "/v1/messages/"+id, form("reactions[wave][]=alice"))
		require.Equal(t, http.StatusOK, res.StatusCode)
		e.as(t, "alice", "PUT", "/v1/conversations/general", form("read_through="+id))
		e.as(t, "bob", "DELETE", "/v1/messages/"+id, nil)

		for _, tc := range []struct {
			s    *sseStream
			want []string
		}{
			{alice, []string{"message.created", "message.created", "message.updated", "conversation.read", "message.deleted"}},
			{mal, []string{"message.created", "message.updated", "message.deleted"}},
			{inConv, []string{"message.created", "message.updated", "message.deleted"}},
		} {
			var got []string
			var frames []sseEvent
			for range tc.want {
				f := tc.s.next(t)
				got = append(got, f.typ)
				frames = append(frames, f)
			}
			assert.Equal(t, tc.want, got)
			tc.s.none(t, 50*time.Millisecond)
			assert.Equal(t, msg, frames[0].object(t)["data"].(map[string]any)["object"], "live: the resource as the write answered it")
			for _, f := range frames {
				obj := f.object(t)
				assert.Equal(t, f.id, obj["id"], "id: is the event's id")
				assert.Equal(t, f.typ, obj["type"])
				assert.Equal(t, "event", obj["object"])
				assert.IsType(t, float64(0), obj["created"])
			}
		}

		get := e.as(t, "alice", "GET", "/v1/events?conversation_id=general&limit=10", nil)
		require.Equal(t, http.StatusOK, get.StatusCode)
		list := get.json(t)
		assert.Equal(t, "list", list["object"])
		data := list["data"].([]any)
		require.Len(t, data, 4, "the polling list: newest first")
		created := data[3].(map[string]any)
		assert.Equal(t, "message.created", created["type"])
		assert.Equal(t, "general", created["conversation_id"])
		assert.Equal(t, map[string]any{"id": id, "object": "message", "deleted": true}, created["data"].(map[string]any)["object"],
			"the message is deleted since: its id only")
		del := data[0].(map[string]any)
		assert.Equal(t, map[string]any{"id": id, "object": "message", "deleted": true}, del["data"].(map[string]any)["object"])
		read := data[1].(map[string]any)
		assert.Equal(t, "conversation.read", read["type"])
		conv := read["data"].(map[string]any)["object"].(map[string]any)
		assert.Equal(t, "conversation", conv["object"])
		assert.Equal(t, id, conv["last_read_message_id"])
	})
}

// TestEventStreamResumes reconnects with Last-Event-ID (header or
// parameter) and with an id no longer kept.
func TestEventStreamResumes(t *testing.T) {
	eachStore(t, func(t *testing.T, store storetest.Store) {
		e := newEventsEnv(t, store, events.Options{})
		s := e.stream(t, "bob", "")
		send := func(text string) string {
			res := e.as(t, "alice", "POST", "/v1/messages", form("conversation_id=general&message="+text))
			require.Equal(t, http.StatusCreated, res.StatusCode)
			return res.json(t)["id"].(string)
		}
		send("one")
		last := s.next(t)
		s.res.Body.Close() // the client goes away
		missed := []string{send("two"), send("three")}

		for _, tc := range []struct{ name, query string }{
			{"header", ""},
			{"parameter", "last_event_id=" + last.id},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var r *sseStream
				if tc.query == "" {
					r = e.stream(t, "bob", "", "Last-Event-ID", last.id)
				} else {
					r = e.stream(t, "bob", tc.query)
				}
				for _, id := range missed {
					f := r.next(t)
					assert.Equal(t, "message.created", f.typ)
					assert.Equal(t, id, f.object(t)["data"].(map[string]any)["object"].(map[string]any)["id"])
				}
				r.none(t, 50*time.Millisecond)
			})
		}
		missed = append(missed, send("four"))
		// The list renders "four" (and keeps its JSON) before the stream
		// below makes an events.lost that carries its id.
		require.Equal(t, http.StatusOK, e.as(t, "bob", "GET", "/v1/events?limit=1", nil).StatusCode)

		// An id no longer kept: events.lost, then live.
		gone := e.stream(t, "bob", "", "Last-Event-ID", "evt_01jz8k3x4y5z6a7b8c9d0e1f2g")
		lost := gone.next(t)
		assert.Equal(t, "events.lost", lost.typ)
		assert.Equal(t, map[string]any{"object": nil}, lost.object(t)["data"])
		gone.none(t, 50*time.Millisecond)
		five := send("five")
		assert.Equal(t, five, gone.next(t).object(t)["data"].(map[string]any)["object"].(map[string]any)["id"])

		res := e.as(t, "bob", "GET", "/v1/events", nil, "Accept", "text/event-stream", "Last-Event-ID", "not-an-id")
		assert.Equal(t, http.StatusBadRequest, res.StatusCode)
		assert.Equal(t, "last_event_id", res.json(t)["error"].(map[string]any)["param"])
		res = e.as(t, "bob", "GET", "/v1/events?conversation_id=a%20b", nil, "Accept", "text/event-stream")
		assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	})
}

// TestEventStreamHeartbeat checks the comment line of an idle stream.
func TestEventStreamHeartbeat(t *testing.T) {
	e := newEnv(t, memstore.New().Driver(), envConfig{events: &events.Options{}, opts: httpadapter.Options{EventHeartbeat: 30 * time.Millisecond}})
	s := e.stream(t, "bob", "")
	var comments []string
	timeout := time.After(5 * time.Second)
	for len(comments) < 3 {
		select {
		case f := <-s.frames:
			comments = append(comments, f.comment)
		case <-timeout:
			t.Fatal("no heartbeat")
		}
	}
	assert.Equal(t, []string{"stream of events", "heartbeat", "heartbeat"}, comments)
}

// smallBuffers makes the test server's sockets small, so that a client
// that does not read fills them soon.
func smallBuffers(srv *httptest.Server) {
	srv.Listener = &smallListener{srv.Listener}
}

type smallListener struct{ net.Listener }

func (l *smallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// TestSlowEventStreamIsCutOff opens a stream that never reads and one that
// does: the slow one is disconnected, the fast one gets every event, and
// the writes never wait.
func TestSlowEventStreamIsCutOff(t *testing.T) {
	eachStore(t, func(t *testing.T, store storetest.Store) {
		e := newEnv(t, store, envConfig{events: &events.Options{Buffer: 8}, server: smallBuffers})
		fast := e.stream(t, "bob", "")

		// The slow client: a socket with a small receive buffer, never read.
		d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		}}
		conn, err := d.Dial("tcp", e.srv.Listener.Addr().String())
		require.NoError(t, err)
		defer conn.Close()
		fmt.Fprintf(conn, "GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok-bob\r\nAccept: text/event-stream\r\n\r\n")

		text := strings.Repeat("x", 3000)
		const n = 200
		for i := range n {
			start := time.Now()
			res := e.as(t, "alice", "POST", "/v1/messages", form(fmt.Sprintf("conversation_id=general&message=%d%s", i, text)))
			require.Equal(t, http.StatusCreated, res.StatusCode)
			assert.Less(t, time.Since(start), 5*time.Second, "a write never waits for a reader")
			assert.Equal(t, "message.created", fast.next(t).typ, "the fast reader keeps up")
		}
		// The slow client finds its stream ended: what it can still read
		// ends well before the last event.
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		got, err := io.ReadAll(conn)
		if err != nil {
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server must close a slow stream")
		}
		t.Logf("the slow client read %d events, %d bytes, then %v", strings.Count(string(got), "event: message.created"), len(got), err)
		assert.Less(t, strings.Count(string(got), "event: message.created"), n, "the slow client was cut off")
	})
}

// TestEventStreamBadQuery: a stream request whose query string cannot be
// parsed is a 400, as it is for the list of events, and not a stream of
// every conversation (the malformed conversation_id dropped unseen); so is
// one with two Last-Event-ID headers, as any parameter given twice.
func TestEventStreamBadQuery(t *testing.T) {
	e := newEnv(t, memstore.New().Driver(), envConfig{events: &events.Options{}})
	e.as(t, "alice", "POST", "/v1/messages", form("conversation_id=general&message=one"))
	e.as(t, "alice", "POST", "/v1/messages", form("conversation_id=general&message=two"))
	evs := e.as(t, "alice", "GET", "/v1/events?limit=2", nil).json(t)["data"].([]any)
	require.Len(t, evs, 2)
	t.Run("two Last-Event-IDs", func(t *testing.T) {
		req, err := http.NewRequest("GET", e.url+"/v1/events", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer tok-alice")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Add("Last-Event-ID", evs[1].(map[string]any)["id"].(string))
		req.Header.Add("Last-Event-ID", evs[0].(map[string]any)["id"].(string))
		res, err := e.srv.Client().Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, http.StatusBadRequest, res.StatusCode, "Content-Type %s", res.Header.Get("Content-Type"))
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		assertError(t, &response{Response: res, body: b}, 400, wantErr{"invalid_request_error", "parameter_invalid", "last_event_id"})
	})
	for _, query := range []string{
		"conversation_id=%zz",
		"last_event_id=%zz",
		"conversation_id=general&x=%",
		"conversation_id=general;x=1",
	} {
		for _, accept := range []string{"text/event-stream", ""} {
			t.Run(query+"/"+accept, func(t *testing.T) {
				req, err := http.NewRequest("GET", e.url+"/v1/events?"+query, nil)
				require.NoError(t, err)
				req.Header.Set("Authorization", "Bearer tok-alice")
				req.Header.Set("Accept", accept)
				res, err := e.srv.Client().Do(req)
				require.NoError(t, err)
				defer res.Body.Close()
				require.Equal(t, http.StatusBadRequest, res.StatusCode, "Content-Type %s", res.Header.Get("Content-Type"))
				b, err := io.ReadAll(res.Body)
				require.NoError(t, err)
				assertError(t, &response{Response: res, body: b}, 400, wantErr{"invalid_request_error", "parameter_invalid", ""})
			})
		}
	}
}
