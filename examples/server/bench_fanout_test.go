package main

import (
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
// percentile, the server's resident memory per stream while they were
// idle, and its CPU time per delivery (the streams' server's, from /proc).
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
	// the one that completes the count notes the time.
	var (
		want      atomic.Pointer[string]
		left      atomic.Int64
		lastAt    atomic.Int64 // unix nanoseconds
		allRead   = make(chan struct{}, 1)
		readers   sync.WaitGroup
		openConns []*idleStream
	)
	none := ""
	want.Store(&none)
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
	for _, s := range openConns {
		require.NoError(b, s.conn.SetReadDeadline(time.Time{}))
		readers.Go(func() {
			typ := ""
			for {
				line, err := s.r.ReadString('\n')
				if err != nil {
					return
				}
				if t, ok := strings.CutPrefix(line, "event: "); ok {
					typ = strings.TrimSpace(t)
					continue
				}
				if w := *want.Load(); w != "" && typ == "message.created" && strings.HasPrefix(line, "data:") && strings.Contains(line, w) {
					if left.Add(-1) == 0 {
						lastAt.Store(time.Now().UnixNano())
						allRead <- struct{}{}
					}
				}
			}
		})
	}

	send := func(text string) (answered time.Time, last time.Time) {
		left.Store(int64(n))
		quoted := strconv.Quote(text)
		want.Store(&quoted)
		post(b, postBase, "tok-alice", "fanout", text)
		answered = time.Now()
		select {
		case <-allRead:
		case <-time.After(30 * time.Second):
			b.Fatalf("%q reached %d of %d streams in 30 s", text, int64(n)-left.Load(), n)
		}
		return answered, time.Unix(0, lastAt.Load())
	}
	for i := range 5 {
		send("fanout warm-up " + strconv.Itoa(i))
	}
	lat := make([]time.Duration, 0, b.N)
	cpu := processCPU(b, pid)
	b.ResetTimer()
	for i := range b.N {
		answered, last := send("fanout message " + strconv.Itoa(i))
		lat = append(lat, max(0, last.Sub(answered)))
	}
	b.StopTimer()
	cpu = processCPU(b, pid) - cpu
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	c := fanOutCost{
		cpuMicros: float64(cpu.Microseconds()) / float64(b.N*n),
		memKiB:    float64(after-before) / float64(n) / 1024,
	}
	b.ReportMetric(float64(n), "streams")
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(c.memKiB, "server-KiB/stream")
	b.ReportMetric(c.cpuMicros, "server-µs/delivery")
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
