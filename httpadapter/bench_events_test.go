package httpadapter_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

// eventsBenchServer is a handler over fresh services on a store, served on
// loopback, with or without /v1/events served.
type eventsBenchServer struct {
	url  string
	feed *events.Feed
}

func newEventsBenchServer(b *testing.B, store storetest.Store, withEvents bool) *eventsBenchServer {
	b.Helper()
	ctx := context.Background()
	msgs := svctest.New(b, storetest.Storage(store), memstore.NewBlobStore(), &messaging.Options{Logger: quietLog, Files: &attachments.Options{Logger: quietLog}, Events: &events.Options{Logger: quietLog}})
	table := map[string]messaging.Contact{}
	for _, name := range []string{"alice", "bob"} {
		c, err := msgs.SaveContact(ctx, messaging.Contact{Username: name})
		require.NoError(b, err)
		table["tok-"+name] = c
	}
	o := &httpadapter.Options{Authenticator: httpadapter.StaticTokens(table), Logger: quietLog}
	s := &eventsBenchServer{}
	if withEvents {
		o.Events, s.feed = true, msgs.Events()
	}
	h, err := httpadapter.New(msgs, o)
	require.NoError(b, err)
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

var quietLog = slog.New(slog.DiscardHandler)

var benchClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}

// post sends a message as alice and returns its id.
func (s *eventsBenchServer) post(b *testing.B, text string) string {
	req, _ := http.NewRequest("POST", s.url+"/v1/messages", strings.NewReader(url.Values{"conversation_id": {"general"}, "message": {text}}.Encode()))
	req.Header.Set("Authorization", "Bearer tok-alice")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := benchClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		b.Fatalf("POST: %d %s", res.StatusCode, body)
	}
	const key = `"id":"`
	i := strings.Index(string(body), key)
	return string(body[i+len(key) : i+len(key)+30])
}

// BenchmarkEvents measures events over HTTP on each backend:
//
//   - PostCost: POST /v1/messages to a server without events and to one
//     with a Feed (and a stream open), alternately; the ratio is what the
//     outbox and its delivery add to a send as a client sees it.
//
//   - Latency: the time from sending a POST to reading its event on an
//     open stream of the same server, reported as the median and the 99th
//     percentile (goal: p99 under 50 ms).
//
//     go test ./httpadapter -run '^$' -bench Events -benchtime 2000x
func BenchmarkEvents(b *testing.B) {
	for _, be := range benchBackends(b) {
		b.Run(be.name+"/PostCost", func(b *testing.B) {
			storeA, _ := be.new(b)
			storeB, _ := be.new(b)
			plain, recorded := newEventsBenchServer(b, storeA, false), newEventsBenchServer(b, storeB, true)
			frames := openBenchStream(b, recorded.url)
			for i := range 20 { // warm up
				plain.post(b, "warm-up")
				recorded.post(b, "warm-up")
				_ = i
			}
			var tPlain, tRecorded time.Duration
			b.ResetTimer()
			for i := range b.N {
				order := []*eventsBenchServer{plain, recorded}
				if i%2 == 1 {
					slices.Reverse(order)
				}
				for _, s := range order {
					start := time.Now()
					s.post(b, fmt.Sprintf("message %d", i))
					if s == plain {
						tPlain += time.Since(start)
					} else {
						tRecorded += time.Since(start)
					}
				}
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64(tPlain.Nanoseconds())/n, "ns/post")
			b.ReportMetric(float64(tRecorded.Nanoseconds())/n, "ns/post+event")
			b.ReportMetric(float64(tRecorded)/float64(tPlain), "outbox-ratio")
			_ = frames
		})
		b.Run(be.name+"/Latency", func(b *testing.B) {
			store, _ := be.new(b)
			s := newEventsBenchServer(b, store, true)
			frames := openBenchStream(b, s.url)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				id := s.post(b, fmt.Sprintf("message %d", i))
				waitFor(b, frames, id)
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportLatency(b, lat)
		})
	}
}

// openBenchStream opens an event stream as bob and returns the data lines
// of its events.
func openBenchStream(b *testing.B, base string) <-chan string {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer tok-bob")
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	require.NoError(b, err)
	require.Equal(b, http.StatusOK, res.StatusCode)
	out := make(chan string, 1<<16)
	go func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "data: ") {
				out <- line
			}
		}
		close(out)
	}()
	return out
}

// waitFor reads the stream until the event of the message id.
func waitFor(b *testing.B, frames <-chan string, id string) {
	timeout := time.After(10 * time.Second)
	for {
		select {
		case line, ok := <-frames:
			if !ok {
				b.Fatal("the stream ended")
			}
			if strings.Contains(line, id) {
				return
			}
		case <-timeout:
			b.Fatalf("no event of %s within 10 s", id)
		}
	}
}

// reportLatency reports the median and the 99th percentile of lat, in
// milliseconds.
func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	pct := func(p float64) float64 {
		i := min(len(lat)-1, int(p*float64(len(lat))))
		return float64(lat[i].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
