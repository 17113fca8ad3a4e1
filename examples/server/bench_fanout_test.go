package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/testnet"
)

// BenchmarkFanOut opens PARLEY_BENCH_STREAMS event streams (default 1,000:
// 100 callers with 10 each, the most a caller may open) that all see one
// conversation, then sends b.N messages to it, one at a time, and times
// each from the POST's answer to its event on the last of the streams
// (goal: p99 under 100 ms). It reports the median and the 99th
// percentile (p50-ms, p99-ms), the server's resident memory per stream
// while they were idle, its CPU time per delivery (the streams' server's,
// from /proc), and the client's own (client-µs/delivery).
//
// The client reads every stream on the same cores as the server, and at
// 10,000 streams a reader may run long after its bytes came. So each
// stream also notes when the event reached its socket (the kernel's
// receive time, SO_TIMESTAMPNS, on Linux): arrived-p50-ms and
// arrived-p99-ms are from the POST's answer to that time on the last
// stream, the server's time without the client's reading, and
// sent-arrived-p50-ms and sent-arrived-p99-ms the same from before the
// POST was sent, which count the fan-out the floor does before it
// answers; sent-first-p50-ms is from then to the first stream's socket.
//
//   - floor: tools/ssefloor, a bare net/http server that sends one
//     pre-encoded frame to every stream (no authentication, storage,
//     heartbeat or deadlines): the least a Go server can do. It runs
//     first; the others report their CPU per delivery and memory per
//     stream as multiples of its own in the same run (x-floor-cpu,
//     x-floor-mem), and its figures (floor-µs/delivery, floor-KiB/stream);
//
//   - sqlite: one server, its default SQLite database;
//
//   - postgres-two-nats: two servers on one PostgreSQL database joined by
//     NATS (PARLEY_TEST_POSTGRES, PARLEY_TEST_NATS); the POSTs go to one,
//     the streams read from the other, whose own reads of the outbox are a
//     minute apart.
//
//     go test ./examples/server -run '^$' -bench FanOut -benchtime 200x
func BenchmarkFanOut(b *testing.B) {
	bin := serverBinary(b)
	streams := benchStreams(b)
	callers := (streams + 9) / 10
	tokens := "alice=tok-alice"
	for i := range callers {
		tokens += fmt.Sprintf(",u%d=tok-u%d", i, i)
	}
	var floor fanOutCost
	b.Run("floor", func(b *testing.B) {
		addr := testnet.FreeAddr(b)
		srv := start(b, floorBinary(b), "-addr", addr)
		floor = measureFanOut(b, "http://"+addr, addr, srv.Process.Pid, streams)
	})
	b.Run("sqlite", func(b *testing.B) {
		addr := testnet.FreeAddr(b)
		srv := start(b, bin, "-addr", addr, "-data", b.TempDir(), "-tokens", tokens)
		measureFanOut(b, "http://"+addr, addr, srv.Process.Pid, streams).reportAgainst(b, floor)
	})
	natsURL, pg := os.Getenv(envNATS), os.Getenv(backendtest.EnvPostgres)
	if natsURL == "" || pg == "" {
		b.Logf("%s and %s must be set to measure two servers over NATS", envNATS, backendtest.EnvPostgres)
		return
	}
	b.Run("postgres-two-nats", func(b *testing.B) {
		var dsn string
		for _, e := range backendtest.SQL(b) {
			if e.Name == "postgres" {
				dsn = e.DSN(b)
			}
		}
		b.Setenv("NATS_SERVER_URL", natsURL)
		var r [6]byte
		_, _ = rand.Read(r[:])
		subject := "nats://parley-bench-" + hex.EncodeToString(r[:])
		var addrs [2]string
		var pid int
		for i := range addrs {
			addrs[i] = testnet.FreeAddr(b)
			srv := start(b, bin, "-addr", addrs[i], "-data", b.TempDir(), "-db", dsn, "-tokens", tokens, "-pubsub", subject, "-event-poll", "1m")
			pid = srv.Process.Pid
		}
		measureFanOut(b, "http://"+addrs[0], addrs[1], pid, streams).reportAgainst(b, floor)
	})
}

var buildFloor = buildOnce("../../tools/ssefloor", "ssefloor")

// floorBinary builds tools/ssefloor once.
func floorBinary(b *testing.B) string {
	bin, err := buildFloor()
	require.NoError(b, err, "go build ./tools/ssefloor")
	return bin
}

// fanOutCost is what a server spent on a fan-out: CPU per delivery and
// resident memory per idle stream.
type fanOutCost struct{ cpuMicros, memKiB float64 }

// reportAgainst reports c as multiples of the floor's, when it was
// measured in this run.
func (c fanOutCost) reportAgainst(b *testing.B, floor fanOutCost) {
	if floor.cpuMicros <= 0 || floor.memKiB <= 0 {
		return
	}
	b.ReportMetric(floor.cpuMicros, "floor-µs/delivery")
	b.ReportMetric(floor.memKiB, "floor-KiB/stream")
	b.ReportMetric(c.cpuMicros/floor.cpuMicros, "x-floor-cpu")
	b.ReportMetric(c.memKiB/floor.memKiB, "x-floor-mem")
}

// benchStreams returns PARLEY_BENCH_STREAMS, or 1,000.
func benchStreams(b *testing.B) int {
	v := os.Getenv("PARLEY_BENCH_STREAMS")
	if v == "" {
		return 1000
	}
	n, err := strconv.Atoi(v)
	require.NoError(b, err, "PARLEY_BENCH_STREAMS")
	require.Positive(b, n, "PARLEY_BENCH_STREAMS")
	return n
}

// measureFanOut opens n streams (callers u0, u1, … ten each) on the server
// at streamAddr, whose process is pid, and times b.N messages posted to
// postBase until every stream has read its event.
func measureFanOut(b *testing.B, postBase, streamAddr string, pid, n int) fanOutCost {
	post(b, postBase, "tok-alice", "fanout", "warm-up")
	time.Sleep(200 * time.Millisecond)
	before := rss(b, pid)

	// Each stream's reader counts the lines that carry the text awaited;
	// the one that completes the count notes the time. Each also keeps
	// the latest kernel receive time of such a line (arrivals).
	var (
		want      atomic.Pointer[[]byte]
		left      atomic.Int64
		lastAt    atomic.Int64 // unix nanoseconds
		arrivedAt atomic.Int64 // unix nanoseconds, the latest
		firstAt   atomic.Int64 // unix nanoseconds, the earliest
		allRead   = make(chan struct{}, 1)
		readers   sync.WaitGroup
		openConns []*idleStream
	)
	want.Store(new([]byte))
	b.Cleanup(func() {
		for _, s := range openConns {
			_ = s.conn.Close()
		}
		readers.Wait()
	})
	for i := range n {
		s := openIdleStreamAs(b, streamAddr, fmt.Sprintf("tok-u%d", i/10))
		openConns = append(openConns, s)
	}
	time.Sleep(500 * time.Millisecond) // let the server settle
	after := rss(b, pid)
	var (
		eventLine = []byte("event: ")
		created   = []byte("event: message.created\n")
		dataLine  = []byte("data:")
	)
	for _, s := range openConns {
		require.NoError(b, s.conn.SetReadDeadline(time.Time{}))
		a := newArrivals(b, s)
		readers.Go(func() {
			isCreated := false
			a.lines(func(line []byte, at time.Time) {
				if bytes.HasPrefix(line, eventLine) {
					isCreated = bytes.Equal(line, created)
					return
				}
				if w := *want.Load(); len(w) > 0 && isCreated && bytes.HasPrefix(line, dataLine) && bytes.Contains(line, w) {
					for t := at.UnixNano(); ; {
						old := arrivedAt.Load()
						if t <= old || arrivedAt.CompareAndSwap(old, t) {
							break
						}
					}
					for t := at.UnixNano(); ; {
						old := firstAt.Load()
						if (old != 0 && t >= old) || firstAt.CompareAndSwap(old, t) {
							break
						}
					}
					if left.Add(-1) == 0 {
						lastAt.Store(time.Now().UnixNano())
						allRead <- struct{}{}
					}
				}
			})
		})
	}

	// One send's times: sent before the POST, answered after its
	// answer, read when the last stream's reader had the event, arrived
	// when the event reached the last stream's socket (the kernel's
	// time), first when it reached the first stream's.
	type times struct{ sent, answered, read, arrived, first time.Time }
	send := func(text string) times {
		left.Store(int64(n))
		arrivedAt.Store(0)
		firstAt.Store(0)
		quoted := []byte(strconv.Quote(text))
		want.Store(&quoted)
		sent := time.Now()
		post(b, postBase, "tok-alice", "fanout", text)
		answered := time.Now()
		select {
		case <-allRead:
		case <-time.After(30 * time.Second):
			b.Fatalf("%q reached %d of %d streams in 30 s", text, int64(n)-left.Load(), n)
		}
		return times{sent, answered, time.Unix(0, lastAt.Load()), time.Unix(0, arrivedAt.Load()), time.Unix(0, firstAt.Load())}
	}
	for i := range 5 {
		send("fanout warm-up " + strconv.Itoa(i))
	}
	var read, arrived, sentArrived, sentFirst []time.Duration
	cpu, clientCPU := processCPU(b, pid), ownCPU(b)
	b.ResetTimer()
	for i := range b.N {
		t := send("fanout message " + strconv.Itoa(i))
		read = append(read, max(0, t.read.Sub(t.answered)))
		arrived = append(arrived, max(0, t.arrived.Sub(t.answered)))
		sentArrived = append(sentArrived, max(0, t.arrived.Sub(t.sent)))
		sentFirst = append(sentFirst, max(0, t.first.Sub(t.sent)))
	}
	b.StopTimer()
	cpu, clientCPU = processCPU(b, pid)-cpu, ownCPU(b)-clientCPU
	pct := func(lat []time.Duration, p float64) float64 {
		slices.Sort(lat)
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	c := fanOutCost{
		cpuMicros: float64(cpu.Microseconds()) / float64(b.N*n),
		memKiB:    float64(after-before) / float64(n) / 1024,
	}
	b.ReportMetric(float64(n), "streams")
	b.ReportMetric(pct(read, 0.5), "p50-ms")
	b.ReportMetric(pct(read, 0.99), "p99-ms")
	b.ReportMetric(pct(arrived, 0.5), "arrived-p50-ms")
	b.ReportMetric(pct(arrived, 0.99), "arrived-p99-ms")
	b.ReportMetric(pct(sentArrived, 0.5), "sent-arrived-p50-ms")
	b.ReportMetric(pct(sentArrived, 0.99), "sent-arrived-p99-ms")
	b.ReportMetric(pct(sentFirst, 0.5), "sent-first-p50-ms")
	b.ReportMetric(c.memKiB, "server-KiB/stream")
	b.ReportMetric(c.cpuMicros, "server-µs/delivery")
	b.ReportMetric(float64(clientCPU.Microseconds())/float64(b.N*n), "client-µs/delivery")
	return c
}

// processCPU returns the CPU time (user and system) process pid has used,
// from /proc, at the kernel's clock tick (10 ms).
func processCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(b, err)
	// pid (comm) state ppid … utime stime: fields 14 and 15, counted
	// after the command, which may hold spaces.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, err := strconv.ParseInt(f[11], 10, 64)
	require.NoError(b, err)
	stime, err := strconv.ParseInt(f[12], 10, 64)
	require.NoError(b, err)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
