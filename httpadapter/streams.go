package httpadapter

import (
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"weak"
)

// Defaults of Options.MaxStreamsPerCaller and Options.MaxStreams.
const (
	defaultMaxStreamsPerCaller = 10
	defaultMaxStreams          = 10_000
)

// streams counts the open event streams, per caller and in all, and ends
// those of a server when it shuts down.
//
// The handler learns its server from each stream's request
// (http.ServerContextKey) and registers with it once
// (http.Server.RegisterOnShutdown): Shutdown waits for every handler to
// return, and a stream's handler returns only when the stream ends, so
// without this a host would have to end the streams itself (by closing
// the Feed) before Shutdown. A request served without an http.Server in
// its context (ServeHTTP called directly) has its stream end with the
// request's context only.
type streams struct {
	perCaller, max int // the limits

	mu       sync.Mutex
	open     int            // streams open
	byCaller map[string]int // streams open, by caller id
	servers  map[weak.Pointer[http.Server]]*serverStreams
}

// serverStreams are the open streams of one http.Server.
type serverStreams struct {
	down bool                 // the server shut down
	open map[*stream]struct{} // each stream's end
}

// stream is one open event stream.
type stream struct {
	caller string
	srv    *serverStreams // nil when the server is not known
	end    func()         // ends the stream promptly; called at most once, under streams.mu
}

func newStreams(perCaller, max int) *streams {
	return &streams{perCaller: perCaller, max: max, byCaller: map[string]int{},
		servers: map[weak.Pointer[http.Server]]*serverStreams{}}
}

// start counts a stream of caller, served for r, which end ends, and
// returns it; nil with the error to answer when a limit is reached. A
// stream whose server has already shut down is ended at once. Pass the
// stream to stop when it has ended.
func (s *streams) start(r *http.Request, caller string, end func()) (*stream, error) {
	srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.byCaller[caller] >= s.perCaller:
		return nil, tooManyStreams("too many event streams open: at most " + strconv.Itoa(s.perCaller) +
			" per caller; close one, or retry after " + retryAfterSeconds + " s")
	case s.open >= s.max:
		return nil, tooManyStreams("too many event streams open on this server; retry after " + retryAfterSeconds + " s")
	}
	st := &stream{caller: caller, end: end}
	s.open++
	s.byCaller[caller]++
	if srv != nil {
		st.srv = s.server(srv)
		if st.srv.down {
			end()
		} else {
			st.srv.open[st] = struct{}{}
		}
	}
	return st, nil
}

// server returns the streams of srv, and registers with srv the first
// time; the caller holds s.mu.
func (s *streams) server(srv *http.Server) *serverStreams {
	key := weak.Make(srv) // the handler does not keep a server alive
	if g := s.servers[key]; g != nil {
		return g
	}
	g := &serverStreams{open: map[*stream]struct{}{}}
	s.servers[key] = g
	srv.RegisterOnShutdown(func() { s.shutdown(g) })
	runtime.AddCleanup(srv, func(key weak.Pointer[http.Server]) {
		s.mu.Lock()
		delete(s.servers, key)
		s.mu.Unlock()
	}, key)
	return g
}

// shutdown ends the streams of a server that shuts down, and those it
// would start from now on.
func (s *streams) shutdown(g *serverStreams) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g.down = true
	for st := range g.open {
		st.end()
		delete(g.open, st)
	}
}

// stop uncounts a stream that has ended.
func (s *streams) stop(st *stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open--
	if n := s.byCaller[st.caller] - 1; n > 0 {
		s.byCaller[st.caller] = n
	} else {
		delete(s.byCaller, st.caller)
	}
	if st.srv != nil {
		delete(st.srv.open, st)
	}
}

// tooManyStreams is the 429 of a stream beyond a limit.
func tooManyStreams(msg string) *httpError {
	return newHTTPError(http.StatusTooManyRequests, typeRateLimit, codeTooManyStreams, msg)
}
