// Command ssefloor is the floor of Parley's event fan-out: a bare net/http
// server that holds Server-Sent Events streams and sends each posted text,
// encoded once, to every one of them. BenchmarkFanOut (examples/server)
// runs it as it runs the server, with the same client, so that Parley's
// server CPU and memory per stream are measured against it in one run.
//
//	go run ./tools/ssefloor -addr 127.0.0.1:8090
//
// GET /v1/events holds a stream (after a first comment line);
// POST /v1/messages (form field "message") builds one frame
//
//	id: <n>
//	event: message.created
//	data: {"id":"msg_<n>","object":"message","text":<the text>}
//
// queues it for every open stream and answers 201 once it is queued. There
// is no authentication, storage, heartbeat, write deadline or slow-client
// cut-off: a stream whose queue (256 frames) is full misses the frame.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
)

// hub is the set of open streams, each a queue of frames.
type hub struct {
	mu      sync.Mutex
	streams map[chan []byte]struct{}
	seq     int64
}

func (h *hub) events(w http.ResponseWriter, r *http.Request) {
	ch := make(chan []byte, 256)
	h.mu.Lock()
	h.streams[ch] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.streams, ch)
		h.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if _, err := w.Write([]byte(": stream of events\n\n")); err != nil || rc.Flush() != nil {
		return
	}
	for {
		select {
		case b := <-ch:
			if _, err := w.Write(b); err != nil || rc.Flush() != nil {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

func (h *hub) messages(w http.ResponseWriter, r *http.Request) {
	text, err := json.Marshal(r.FormValue("message"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.seq++
	n := strconv.FormatInt(h.seq, 10)
	frame := []byte("id: " + n + "\nevent: message.created\ndata: {\"id\":\"msg_" + n + "\",\"object\":\"message\",\"text\":" + string(text) + "}\n\n")
	for ch := range h.streams {
		select {
		case ch <- frame:
		default:
		}
	}
	h.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(`{"id":"msg_` + n + `","object":"message"}`))
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "address to listen on")
	flag.Parse()
	h := &hub{streams: make(map[chan []byte]struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/events", h.events)
	mux.HandleFunc("POST /v1/messages", h.messages)
	srv := &http.Server{Addr: *addr, Handler: mux}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
