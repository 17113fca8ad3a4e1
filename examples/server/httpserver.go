package main

import (
	"io"
	"log/slog"
	"net/http"
	"time"
)

// limits are the server's defences against slow and greedy clients.
type limits struct {
	// header is how long the request line and headers may take.
	header time.Duration
	// idle is how long a keep-alive connection may wait for its next
	// request.
	idle time.Duration
	// maxHeaderBytes bounds the request line and headers.
	maxHeaderBytes int
	// grace and chunk make the progress deadlines of bodies and answers:
	// each chunk bytes of a request body must arrive, and each chunk bytes
	// of an answer be taken by the client, within grace. A large upload
	// or download at any usable speed takes as long as it takes; a trickle
	// (a byte every two seconds) is cut off after grace (an answer's
	// after at most one and a half: see progressWriter).
	grace time.Duration
	chunk int
}

var defaultLimits = limits{
	header:         10 * time.Second,
	idle:           2 * time.Minute,
	maxHeaderBytes: 64 << 10,
	grace:          30 * time.Second,
	chunk:          64 << 10, // at least about 2 KiB/s
}

// newHTTPServer returns the server of h with the limits l.
func newHTTPServer(h http.Handler, log *slog.Logger, l limits) *http.Server {
	return &http.Server{
		Handler:           progressDeadlines(h, l),
		ReadHeaderTimeout: l.header,
		IdleTimeout:       l.idle,
		MaxHeaderBytes:    l.maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// progressDeadlines gives each request's body and answer deadlines that
// move with their progress (see limits), through http.ResponseController.
// Once the body has been read its deadline is lifted, so that a long
// answer is bounded by the write deadlines alone.
func progressDeadlines(h http.Handler, l limits) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if r.Body != nil && r.Body != http.NoBody {
			if err := rc.SetReadDeadline(time.Now().Add(l.grace)); err == nil {
				r.Body = &progressReader{ReadCloser: r.Body, rc: rc, l: l}
			}
		}
		defer func() {
			// The connection may serve another request: no deadline of
			// this one may outlive it.
			_ = rc.SetWriteDeadline(time.Time{})
		}()
		h.ServeHTTP(&progressWriter{ResponseWriter: w, rc: rc, l: l}, r)
	})
}

// progressReader moves the read deadline on with each chunk of a body.
// The handler reads a body from one goroutine at a time.
type progressReader struct {
	io.ReadCloser
	rc   *http.ResponseController
	l    limits
	n    int // bytes since the deadline last moved
	done bool
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.ReadCloser.Read(b)
	if p.done {
		return n, err
	}
	p.n += n
	switch {
	case err == io.EOF:
		// The whole body: lift the deadline, so that the server's watch
		// for a closed connection cannot cancel a long answer. (After any
		// other error the deadline stays: the server must not wait for the
		// rest of a trickle.)
		p.done = true
		_ = p.rc.SetReadDeadline(time.Time{})
	case err != nil:
		p.done = true
	case p.n >= p.l.chunk:
		p.n = 0
		_ = p.rc.SetReadDeadline(time.Now().Add(p.l.grace))
	}
	return n, err
}

// progressWriter gives each chunk of an answer grace to be taken. Setting
// a deadline costs about as much as a small write (an event stream's), so
// it is set half as far again ahead and moved only once less than grace of
// it is left: each chunk still gets grace, a client that takes nothing is
// cut off after at most one and a half.
type progressWriter struct {
	http.ResponseWriter
	rc       *http.ResponseController
	l        limits
	deadline time.Time
}

func (p *progressWriter) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		c := b[:min(len(b), p.l.chunk)]
		if now := time.Now(); p.deadline.Sub(now) < p.l.grace {
			p.deadline = now.Add(p.l.grace + p.l.grace/2)
			_ = p.rc.SetWriteDeadline(p.deadline)
		}
		n, err := p.ResponseWriter.Write(c)
		written += n
		if err != nil {
			return written, err
		}
		b = b[len(c):]
	}
	return written, nil
}

// ReadFrom copies through Write, so that every chunk moves the deadline.
func (p *progressWriter) ReadFrom(src io.Reader) (int64, error) {
	return io.CopyBuffer(onlyWriter{p}, src, make([]byte, p.l.chunk))
}

type onlyWriter struct{ io.Writer }

// Unwrap lets http.ResponseController reach the connection's writer
// (Flush, deadlines).
func (p *progressWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }
