package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/testnet"
)

// The benchmarks of this file run the server binary, as a deployment does,
// and measure from a client: the time from sending a POST to reading its
// event on a stream, and what idle streams cost the server.

// buildOnce returns a function that builds the package pkg (a path from
// this directory) into a temporary directory the first time it is called,
// and returns the binary's path.
func buildOnce(pkg, name string) func() (string, error) {
	return sync.OnceValues(func() (string, error) {
		dir, err := os.MkdirTemp("", "parley-bench")
		if err != nil {
			return "", err
		}
		bin := filepath.Join(dir, name)
		build := exec.Command("go", "build", "-o", bin, pkg)
		build.Stderr = os.Stderr
		return bin, build.Run()
	})
}

var buildBenchServer = buildOnce(".", "server")

// serverBinary builds the server once for all benchmarks, whose servers
// log nothing (their log would cut into the lines of results).
func serverBinary(b *testing.B) string {
	serverStderr = io.Discard
	bin, err := buildBenchServer()
	require.NoError(b, err, "go build")
	return bin
}

// BenchmarkEventLatency measures the time from sending POST /v1/messages
// to reading the message's event on an open event stream, and reports its
// median and 99th percentile (goal: p99 under 50 ms):
//
//   - sqlite: one server, its default SQLite database;
//
//   - postgres: one server on PostgreSQL (PARLEY_TEST_POSTGRES);
//
//   - postgres-two-nats: two servers on one PostgreSQL database joined by
//     NATS (and PARLEY_TEST_NATS); the POST goes to one, the stream reads
//     from the other, whose own reads of the outbox are a minute apart.
//
//     go test ./examples/server -run '^$' -bench EventLatency -benchtime 2000x
func BenchmarkEventLatency(b *testing.B) {
	bin := serverBinary(b)
	tokens := "alice=tok-alice,bob=tok-bob"
	b.Run("sqlite", func(b *testing.B) {
		addr := testnet.FreeAddr(b)
		start(b, bin, "-addr", addr, "-data", b.TempDir(), "-tokens", tokens)
		measureLatency(b, "http://"+addr, "http://"+addr)
	})
	pg := os.Getenv(backendtest.EnvPostgres)
	if pg == "" {
		b.Logf("%s is not set: not measuring PostgreSQL", backendtest.EnvPostgres)
		return
	}
	postgresDSN := func(b *testing.B) string {
		for _, e := range backendtest.SQL(b) {
			if e.Name == "postgres" {
				return e.DSN(b)
			}
		}
		return ""
	}
	b.Run("postgres", func(b *testing.B) {
		addr := testnet.FreeAddr(b)
		start(b, bin, "-addr", addr, "-data", b.TempDir(), "-db", postgresDSN(b), "-tokens", tokens)
		measureLatency(b, "http://"+addr, "http://"+addr)
	})
	natsURL := os.Getenv(envNATS)
	if natsURL == "" {
		b.Logf("%s is not set: not measuring two servers over NATS", envNATS)
		return
	}
	b.Run("postgres-two-nats", func(b *testing.B) {
		dsn := postgresDSN(b)
		b.Setenv("NATS_SERVER_URL", natsURL)
		var r [6]byte
		_, _ = rand.Read(r[:])
		subject := "nats://parley-bench-" + hex.EncodeToString(r[:])
		var bases [2]string
		for i := range bases {
			addr := testnet.FreeAddr(b)
			bases[i] = "http://" + addr
			start(b, bin, "-addr", addr, "-data", b.TempDir(), "-db", dsn, "-tokens", tokens, "-pubsub", subject, "-event-poll", "1m")
		}
		measureLatency(b, bases[0], bases[1])
	})
}

// BenchmarkTypingLatency measures the time from POST
// /v1/conversations/general/typing on one server to the conversation.typing
// frame on a stream of another, the two on one PostgreSQL database joined
// by NATS (PARLEY_TEST_POSTGRES, PARLEY_TEST_NATS; goal: p99 under 300 ms),
// each iteration by another caller (a stream takes one typing a second of
// each), and reports its median and 99th percentile, and the events stored
// meanwhile (goal: none).
//
//	go test ./examples/server -run '^$' -bench TypingLatency -benchtime 500x
func BenchmarkTypingLatency(b *testing.B) {
	natsURL, pg := os.Getenv(envNATS), os.Getenv(backendtest.EnvPostgres)
	if natsURL == "" || pg == "" {
		b.Skipf("%s and %s must be set: two servers on PostgreSQL joined by NATS", envNATS, backendtest.EnvPostgres)
	}
	var dsn string
	for _, e := range backendtest.SQL(b) {
		if e.Name == "postgres" {
			dsn = e.DSN(b)
		}
	}
	bin := serverBinary(b)
	const callers = 2000
	tokens := "bob=tok-bob"
	for i := range callers {
		tokens += fmt.Sprintf(",u%d=tok-u%d", i, i)
	}
	b.Setenv("NATS_SERVER_URL", natsURL)
	var r [6]byte
	_, _ = rand.Read(r[:])
	subject := "nats://parley-bench-" + hex.EncodeToString(r[:])
	var bases [2]string
	for i := range bases {
		addr := testnet.FreeAddr(b)
		bases[i] = "http://" + addr
		start(b, bin, "-addr", addr, "-data", b.TempDir(), "-db", dsn, "-tokens", tokens, "-pubsub", subject, "-event-poll", "1m")
	}
	lastEvent := func() string {
		var l struct{ Data []struct{ ID string } }
		require.Equal(b, http.StatusOK, call(b, "GET", bases[0]+"/v1/events?limit=1", "tok-bob", nil, &l))
		if len(l.Data) == 0 {
			return ""
		}
		return l.Data[0].ID
	}
	post(b, bases[0], "tok-bob", "general", "hello")
	before := lastEvent()
	frames := openStream(b, bases[1], "tok-bob", "")
	time.Sleep(200 * time.Millisecond) // the stream is registered
	if b.N > callers {
		b.Fatalf("at most %d iterations (one caller each)", callers)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		begin := time.Now()
		require.Equal(b, http.StatusOK, call(b, "POST", bases[0]+"/v1/conversations/general/typing", fmt.Sprintf("tok-u%d", i), url.Values{}, nil))
		for {
			f := nextFrame(b, frames, 10*time.Second)
			if f.Type == "conversation.typing" && strings.Contains(f.Data, fmt.Sprintf(`"username":"u%d"`, i)) {
				break
			}
		}
		lat = append(lat, time.Since(begin))
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	stored := 0.0
	if lastEvent() != before {
		stored = 1
	}
	b.ReportMetric(stored, "events-stored")
}

// measureLatency posts b.N messages to postBase and times each until its
// event is read from a stream of streamBase.
func measureLatency(b *testing.B, postBase, streamBase string) {
	frames := openStream(b, streamBase, "tok-bob", "")
	time.Sleep(100 * time.Millisecond) // the stream is registered
	for i := range 10 {                // warm up
		id := post(b, postBase, "tok-alice", "bench", "warm-up "+strconv.Itoa(i))
		waitForObject(b, frames, id)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		begin := time.Now()
		id := post(b, postBase, "tok-alice", "bench", "message "+strconv.Itoa(i))
		waitForObject(b, frames, id)
		lat = append(lat, time.Since(begin))
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// waitForObject reads the stream until the event of the object id.
func waitForObject(b *testing.B, frames <-chan sseFrame, id string) {
	for {
		f := nextFrame(b, frames, 10*time.Second)
		if objectID(b, f) == id {
			return
		}
	}
}

// BenchmarkIdleStreams opens b.N event streams to one server (SQLite) and
// leaves them idle, then reports what they cost the server (the growth of
// its resident memory per stream) and the time one message takes to reach
// the first and the last stream opened.
//
//	go test ./examples/server -run '^$' -bench IdleStreams -benchtime 10000x
func BenchmarkIdleStreams(b *testing.B) {
	bin := serverBinary(b)
	addr := testnet.FreeAddr(b)
	srv := start(b, bin, "-addr", addr, "-data", b.TempDir(), "-tokens", "alice=tok-alice,bob=tok-bob")
	base := "http://" + addr
	post(b, base, "tok-alice", "bench", "warm-up")
	time.Sleep(200 * time.Millisecond)
	before := rss(b, srv.Process.Pid)

	b.ResetTimer()
	conns := make([]*idleStream, 0, b.N)
	b.Cleanup(func() {
		for _, c := range conns {
			c.conn.Close()
		}
	})
	for range b.N {
		conns = append(conns, openIdleStreamAs(b, addr, "tok-bob"))
	}
	b.StopTimer()
	time.Sleep(500 * time.Millisecond) // let the server settle
	after := rss(b, srv.Process.Pid)

	// One message reaches every stream; time the first and the last opened.
	begin := time.Now()
	id := post(b, base, "tok-alice", "bench", "to everyone")
	first := conns[0].waitFor(b, id)
	last := first
	if len(conns) > 1 {
		last = conns[len(conns)-1].waitFor(b, id)
	}
	b.ReportMetric(float64(b.N), "streams")
	b.ReportMetric(float64(after-before)/float64(b.N), "server-bytes/stream")
	b.ReportMetric(float64(after)/(1<<20), "server-rss-MiB")
	b.ReportMetric(float64(first.Sub(begin).Microseconds())/1000, "first-ms")
	b.ReportMetric(float64(last.Sub(begin).Microseconds())/1000, "last-ms")
}

// idleStream is an event stream on a raw connection, read only on demand.
type idleStream struct {
	conn net.Conn
	r    *bufio.Reader
}

// openIdleStreamAs opens an event stream of the caller of token.
func openIdleStreamAs(b *testing.B, addr, token string) *idleStream {
	c, err := net.Dial("tcp", addr)
	require.NoError(b, err)
	fmt.Fprintf(c, "GET /v1/events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", addr, token)
	s := &idleStream{conn: c, r: bufio.NewReaderSize(c, 512)}
	// The head and the first comment: the stream is open.
	require.NoError(b, c.SetReadDeadline(time.Now().Add(30*time.Second)))
	for {
		line, err := s.r.ReadString('\n')
		require.NoError(b, err)
		if strings.HasPrefix(line, ": ") || strings.Contains(line, ": stream of events") {
			return s
		}
	}
}

// waitFor reads until the event of the object id, and returns when it came.
func (s *idleStream) waitFor(b *testing.B, id string) time.Time {
	require.NoError(b, s.conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	for {
		line, err := s.r.ReadString('\n')
		require.NoError(b, err)
		if strings.Contains(line, id) {
			return time.Now()
		}
	}
}

// rss returns the resident memory of the process, in bytes.
func rss(b *testing.B, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(b, err)
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(b, err)
			return kb << 10
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
