package httpadapter

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/messaging"
)

// GET /v1/events: with Accept: text/event-stream, a Server-Sent Events
// stream of the caller's events (events.Feed.Subscribe); otherwise the
// list of past events (events.Feed.Events), newest first, for clients that
// poll.

// defaultHeartbeat is how often an idle stream gets a comment line.
const defaultHeartbeat = 15 * time.Second

// shutdownWriteGrace is how long the write under way of a stream ended by
// its server's shutdown may still take.
const shutdownWriteGrace = 100 * time.Millisecond

// minWriteTimeout is the least time a stream's write may take before the
// client is deemed gone (or too slow) and the stream ends.
const minWriteTimeout = 10 * time.Second

func (a *api) getEvents(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	if r.Method == http.MethodGet && acceptsEventStream(r) {
		a.streamEvents(w, r, &caller)
		return
	}
	a.listEvents(w, r, &caller)
}

// listEvents answers the list of the caller's events.
func (a *api) listEvents(w http.ResponseWriter, r *http.Request, c *messaging.Contact) {
	caller := *c
	ctx, u := r.Context(), a.urls(r, caller)
	serveList(a, w, r, func(conversationID string, o messaging.ListOptions) (messaging.Page[messaging.Event], error) {
		return a.events.Events(ctx, caller, conversationID, o)
	}, func(e messaging.Event) eventJSON { return eventJSON{b: a.renderEvent(ctx, u, e)} })
}

// acceptsEventStream reports whether the request accepts
// text/event-stream.
func acceptsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/event-stream" {
				return true
			}
		}
	}
	return false
}

// streamEvents serves the caller's events as Server-Sent Events: one event
// per change, "id:" its id, "event:" its type, "data:" the Event object;
// a comment line after Options.EventHeartbeat without any. The stream
// resumes after the Last-Event-ID header (or the last_event_id parameter),
// and ends when the client is too slow (it resumes with its last id), when
// it goes away, when the http.Server that serves it shuts down (see
// streams), or when the Feed closes. A caller beyond
// Options.MaxStreamsPerCaller open streams, or any stream beyond
// Options.MaxStreams, gets a 429.
//
// An idle stream's goroutine waits in a few small frames (wait, and
// events.Subscription.Wait): the stream's state is kept in an eventStream,
// and the deep work (opening, taking and writing an event) is done in
// calls that have returned by then. The runtime halves a goroutine's stack
// at a collection only when under a quarter of it is in use, so a stream
// that waited below those frames (about 6 KiB of them with the server's
// own) kept the 16 KiB its first write grew it to; waiting in about 3 KiB,
// it is halved back to 8 KiB, as the bare net/http floor's are
// (BENCHMARKS.md §5).
func (a *api) streamEvents(w http.ResponseWriter, r *http.Request, caller *messaging.Contact) {
	s := a.openStream(w, r, caller)
	if s == nil {
		return
	}
	defer s.close()
	for s.wait() && s.step() {
	}
}

// eventStream is an open event stream (streamEvents).
type eventStream struct {
	a      *api
	w      http.ResponseWriter
	rc     *http.ResponseController
	ctx    context.Context // the request's, ended by end
	cancel context.CancelFunc
	st     *stream
	sub    *events.Subscription
	u      *urls
	caller string
	frame  []byte // the frame being written, reused

	// A client cut off for being too slow is likely stuck in a write: end
	// the write at once (with a deadline in the past) rather than wait for
	// writeTimeout. A stream ended by its server's shutdown writes no more
	// events, and what is being written gets a short deadline, so that the
	// server's Shutdown need not wait for a client that does not read.
	mu  sync.Mutex
	cut bool

	// Every write may take writeTimeout. Setting a deadline costs about as
	// much as a small write, so it is set half as far again ahead, and
	// renewed only once less than writeTimeout of it is left: most writes
	// set none.
	writeTimeout        time.Duration
	deadline, lastWrite time.Time

	// The heartbeat's context ends a.heartbeat after the last write as of
	// its making; it is made again only when it ends (a heartbeat is
	// written if nothing else was since), not for every event.
	idle     context.Context
	stopIdle context.CancelFunc
}

// openStream starts the stream: counted against the limits, subscribed,
// its head and first comment written. It answers the request itself and
// returns nil when the stream does not start (or ends at once).
func (a *api) openStream(w http.ResponseWriter, r *http.Request, caller *messaging.Contact) *eventStream {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		// As for every list: r.URL.Query would drop the malformed pair,
		// and with it the conversation_id that narrows the stream.
		a.writeError(w, r, badParam("", "the query string cannot be parsed"))
		return nil
	}
	conv, err := single(q, "conversation_id")
	if err != nil {
		a.writeError(w, r, err)
		return nil
	}
	after, err := single(q, "last_event_id")
	if err != nil {
		a.writeError(w, r, err)
		return nil
	}
	switch hs := r.Header.Values("Last-Event-ID"); {
	case len(hs) > 1:
		a.writeError(w, r, twice("last_event_id"))
		return nil
	case len(hs) == 1 && strings.TrimSpace(hs[0]) != "":
		after = strings.TrimSpace(hs[0]) // what a reconnecting EventSource sends: newer than the URL's
	}
	s := &eventStream{a: a, w: w, rc: http.NewResponseController(w), caller: caller.ID,
		writeTimeout: max(minWriteTimeout, 2*a.heartbeat)}
	s.ctx, s.cancel = context.WithCancel(r.Context())
	s.st, err = a.streams.start(r, caller.ID, s.end)
	if err != nil {
		s.cancel()
		w.Header().Set("Retry-After", retryAfterSeconds)
		a.writeError(w, r, err)
		return nil
	}
	s.sub, err = a.events.Subscribe(s.ctx, *caller, events.SubscribeOptions{ConversationID: conv, After: after, OnTooSlow: s.onCut})
	if err != nil {
		if s.ctx.Err() != nil && r.Context().Err() == nil {
			// Ended by the server's shutdown before it began: an empty
			// stream, which an EventSource resumes (elsewhere).
			writeStreamHead(w)
		} else {
			a.writeError(w, r, err)
		}
		a.streams.stop(s.st)
		s.cancel()
		return nil
	}
	writeStreamHead(w)
	s.u = a.urls(r, *caller)
	ok := s.send([]byte(": stream of events\n\n"))
	s.newIdle()
	if !ok {
		s.close()
		return nil
	}
	return s
}

// close ends the subscription and uncounts the stream.
func (s *eventStream) close() {
	s.stopIdle()
	s.sub.Close()
	s.a.streams.stop(s.st)
	s.cancel()
}

// stopWrites makes the write under way, and every later one, end by
// deadline.
func (s *eventStream) stopWrites(deadline time.Time) {
	s.mu.Lock()
	s.cut = true
	_ = s.rc.SetWriteDeadline(deadline)
	s.mu.Unlock()
}

// onCut is called by the Feed when it cut the subscription off.
func (s *eventStream) onCut() { s.stopWrites(time.Now().Add(-time.Second)) }

// end ends the stream promptly: its server shuts down.
func (s *eventStream) end() {
	s.stopWrites(time.Now().Add(shutdownWriteGrace))
	s.cancel()
}

// newIdle makes the heartbeat's context.
func (s *eventStream) newIdle() {
	s.idle, s.stopIdle = context.WithDeadline(s.ctx, s.lastWrite.Add(s.a.heartbeat))
}

// send writes and flushes b, and reports whether it was taken.
func (s *eventStream) send(b []byte) bool {
	now := time.Now()
	s.mu.Lock()
	if s.cut {
		s.mu.Unlock()
		return false
	}
	if s.deadline.Sub(now) < s.writeTimeout {
		s.deadline = now.Add(s.writeTimeout + s.writeTimeout/2)
		_ = s.rc.SetWriteDeadline(s.deadline)
	}
	s.mu.Unlock()
	s.lastWrite = now
	if _, err := s.w.Write(b); err != nil {
		return false
	}
	return s.rc.Flush() == nil
}

// wait waits for an event, writing heartbeats meanwhile, and reports
// whether there is one (false: the stream is over).
func (s *eventStream) wait() bool {
	for {
		err := s.sub.Wait(s.idle)
		if err == nil {
			return true
		}
		if !s.goOn(err) {
			return false
		}
	}
}

// step writes the event that wait found, and reports whether the stream
// goes on.
func (s *eventStream) step() bool {
	e, err := s.sub.Next(s.idle)
	if err != nil {
		return s.goOn(err)
	}
	var f []byte
	f, s.frame = s.a.eventFrame(s.ctx, s.u, &e, s.frame)
	return s.send(f)
}

// goOn handles an error of the subscription's Wait or Next: after the
// heartbeat's period it writes a heartbeat, if nothing else was written
// since, and reports true; otherwise the stream is over.
func (s *eventStream) goOn(err error) bool {
	a := s.a
	switch {
	case errors.Is(err, context.DeadlineExceeded) && s.ctx.Err() == nil:
		s.stopIdle()
		if !time.Now().Before(s.lastWrite.Add(a.heartbeat)) && !s.send([]byte(": heartbeat\n\n")) {
			return false
		}
		s.newIdle()
		return true
	case errors.Is(err, events.ErrTooSlow):
		a.log.DebugContext(s.ctx, "httpadapter: event stream too slow; closed", "caller", s.caller)
	case errors.Is(err, events.ErrClosed) || s.ctx.Err() != nil:
	default:
		// The outbox or the Policy cannot be read now: end the stream;
		// the client resumes after its last event.
		a.log.WarnContext(s.ctx, "httpadapter: event stream ended", "err", err)
	}
	return false
}

// writeStreamHead answers 200 with the headers of an event stream.
func writeStreamHead(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies such as nginx: do not buffer
	w.WriteHeader(http.StatusOK)
}

// single returns the one value of a query parameter; twice is a 400, and
// so is an empty value.
func single(q map[string][]string, name string) (string, error) {
	vs := q[name]
	switch {
	case len(vs) > 1:
		return "", twice(name)
	case len(vs) == 1 && vs[0] == "":
		return "", badParam(name, name+" must not be empty")
	case len(vs) == 1:
		return vs[0], nil
	}
	return "", nil
}

// eventJSON is an Event as the API shows it, rendered.
type eventJSON struct{ b []byte }

func (x eventJSON) MarshalJSON() ([]byte, error) { return x.b, nil }

// eventFields are the members of an Event object before its data.
type eventFields struct {
	ID             *string `json:"id"`
	Object         string  `json:"object"`
	Type           string  `json:"type"`
	ConversationID *string `json:"conversation_id"`
	Created        int64   `json:"created"`
}

// renderEvent returns the JSON of e:
//
//	{"id": "evt_…", "object": "event", "type": "message.created",
//	 "conversation_id": "general", "created": 1700000000,
//	 "data": {"object": <the resource after the change, or {"id": …, "object": …, "deleted": true}>}}
//
// The JSON of an event is the same for every caller of a base URL (a
// conversation.read has one audience), so it is made once and kept a
// while, unless file URLs are signed per request.
func (a *api) renderEvent(ctx context.Context, u *urls, e messaging.Event) []byte {
	key, cacheable := a.renderKey(u, &e, false)
	if cacheable {
		if b, ok := a.rendered.get(key); ok {
			return b
		}
	}
	b := a.render(ctx, u, &e)
	if cacheable {
		a.rendered.put(key, b)
	}
	return b
}

// eventFrame returns the Server-Sent Events frame of e: "id:" its id,
// "event:" its type, "data:" its JSON (one line: JSON has no raw
// newline). Like the JSON, the frame is the same for every stream of a
// base URL, and is kept: a stream writes the frame made for the first.
// One that cannot be kept is made in buf, which eventFrame returns
// second for the next.
func (a *api) eventFrame(ctx context.Context, u *urls, e *messaging.Event, buf []byte) (frame, next []byte) {
	key, cacheable := a.renderKey(u, e, true)
	f := buf[:0]
	if cacheable {
		if b, ok := a.rendered.get(key); ok {
			return b, buf
		}
		f = nil // the frame is kept: a buffer of its own
	}
	if e.ID != "" {
		f = append(f, "id: "...)
		f = append(f, e.ID...)
		f = append(f, '\n')
	}
	f = append(f, "event: "...)
	f = append(f, e.Type...)
	f = append(f, "\ndata: "...)
	f = append(f, a.render(ctx, u, e)...)
	f = append(f, "\n\n"...)
	if !cacheable {
		return f, f
	}
	a.rendered.put(key, f)
	return f, buf
}

// renderKey returns the key of e's JSON (or its frame) in a.rendered,
// and whether it may be kept there: only stored events (Seq > 0: an
// events.lost carries the id of the stored event it resumes after), and
// none with signed file URLs.
func (a *api) renderKey(u *urls, e *messaging.Event, frame bool) (renderKey, bool) {
	if e.Seq <= 0 || a.signExpiry > 0 {
		return renderKey{}, false
	}
	if u.base == "" {
		u.base = a.baseURL(u.r)
	}
	// A read after a delete redacts what it deleted (Event.Redacted
	// counts it, and only grows): never the JSON of an earlier read.
	return renderKey{base: u.base, id: e.ID, redacted: e.Redacted, frame: frame}, true
}

// render makes the JSON of e (renderEvent).
func (a *api) render(ctx context.Context, u *urls, e *messaging.Event) []byte {
	var obj any = nil
	switch {
	case e.Message != nil:
		obj = u.message(ctx, *e.Message)
	case e.Attachment != nil:
		obj = u.attachment(ctx, *e.Attachment)
	case e.Conversation != nil:
		obj = u.conversation(ctx, *e.Conversation)
	case e.Thread != nil:
		obj = u.thread(ctx, *e.Thread)
	case e.Typing != nil:
		obj = typingJSON{*e.Typing}
	case e.DeletedID != "":
		// The event of a delete, or one about what was deleted since.
		kind := "message"
		if strings.HasPrefix(string(e.Type), "attachment.") {
			kind = "attachment"
		}
		obj = deleted{ID: e.DeletedID, Object: kind, Deleted: true, ParentID: e.DeletedParentID}
	}
	head, err := json.Marshal(eventFields{
		ID:             nullable(e.ID),
		Object:         "event",
		Type:           string(e.Type),
		ConversationID: nullable(e.ConversationID),
		Created:        e.Created.Unix(),
	})
	data := []byte("null")
	if err == nil && obj != nil {
		if m, ok := obj.(json.Marshaler); ok {
			data, err = m.MarshalJSON()
		} else {
			data, err = json.Marshal(obj)
		}
	}
	if err != nil {
		a.log.ErrorContext(ctx, "httpadapter: cannot render an event", "event", e.ID, "err", err)
		data = []byte("null")
	}
	b := make([]byte, 0, len(head)+len(data)+24)
	b = append(b, head[:len(head)-1]...)
	b = append(b, `,"data":{"object":`...)
	b = append(b, data...)
	b = append(b, "}}"...)
	return b
}

// renderCache keeps the JSON and the frames of the latest events, so that
// an event delivered to many streams is rendered once per base URL.
type renderCache struct {
	mu   sync.Mutex
	m    map[renderKey][]byte
	keys []renderKey // ring of the keys in m, oldest at next
	next int
}

// renderKey is what an event's rendering depends on: the base URL of its
// links, the event, what was redacted from it, and whether it is the
// stream's frame or the bare JSON.
type renderKey struct {
	base, id string
	redacted int
	frame    bool
}

// renderCacheSize bounds the events kept.
const renderCacheSize = 1024

func (c *renderCache) get(key renderKey) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[key]
	return b, ok
}

func (c *renderCache) put(key renderKey, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[renderKey][]byte, renderCacheSize)
		c.keys = make([]renderKey, renderCacheSize)
	}
	if _, ok := c.m[key]; ok {
		return
	}
	if old := c.keys[c.next]; old != (renderKey{}) {
		delete(c.m, old)
	}
	c.keys[c.next] = key
	c.next = (c.next + 1) % renderCacheSize
	c.m[key] = b
}
