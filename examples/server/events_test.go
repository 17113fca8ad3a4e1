package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/testnet"
)

// envNATS names the NATS server of the tests that need one.
const envNATS = "PARLEY_TEST_NATS"

// serverStderr receives the log of the servers that start runs.
var serverStderr io.Writer = os.Stderr

// sseFrame is one event of a stream.
type sseFrame struct{ ID, Type, Data string }

// openStream opens GET /v1/events as the token's caller, resuming after
// lastID when set, and returns its frames (comments skipped); the channel
// closes when the stream ends.
func openStream(t testing.TB, base, token, lastID string) <-chan sseFrame {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/v1/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	out := make(chan sseFrame, 100)
	go func() {
		defer close(out)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var f sseFrame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if f.Type != "" {
					out <- f
				}
				f = sseFrame{}
			case strings.HasPrefix(line, "id: "):
				f.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				f.Type = line[7:]
			case strings.HasPrefix(line, "data: "):
				f.Data = line[6:]
			}
		}
	}()
	return out
}

// nextFrame returns the stream's next event, failing after timeout.
func nextFrame(t testing.TB, frames <-chan sseFrame, timeout time.Duration) sseFrame {
	t.Helper()
	select {
	case f, ok := <-frames:
		require.True(t, ok, "the stream ended")
		return f
	case <-time.After(timeout):
		t.Fatalf("no event within %v", timeout)
	}
	return sseFrame{}
}

// noFrame checks that no event comes within d.
func noFrame(t *testing.T, frames <-chan sseFrame, d time.Duration) {
	t.Helper()
	select {
	case f, ok := <-frames:
		if ok {
			t.Fatalf("unexpected event %s %s", f.Type, f.ID)
		}
	case <-time.After(d):
	}
}

// objectID returns the id of the object an event carries.
func objectID(t testing.TB, f sseFrame) string {
	t.Helper()
	var e struct {
		Data struct {
			Object struct{ ID string } `json:"object"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(f.Data), &e), "data: %s", f.Data)
	return e.Data.Object.ID
}

// post sends a message as token and returns its id.
func post(t testing.TB, base, token, conv, text string) string {
	t.Helper()
	var m struct{ ID string }
	require.Equal(t, http.StatusCreated, call(t, "POST", base+"/v1/messages", token, url.Values{"conversation_id": {conv}, "message": {text}}, &m))
	return m.ID
}

// TestKillAfterCommitDeliversAfterRestart kills the server with SIGKILL
// after a write committed and before its event was delivered (delivery is
// held with -hold-events), restarts it, and finds the event delivered: to
// a client that resumes with Last-Event-ID, once, and to the -event-log
// handler.
func TestKillAfterCommitDeliversAfterRestart(t *testing.T) {
	bin := buildServer(t)
	data := t.TempDir()
	logPath := filepath.Join(t.TempDir(), "events.jsonl")
	addr := testnet.FreeAddr(t)
	base := "http://" + addr
	args := []string{"-addr", addr, "-data", data, "-tokens", "alice=tok-alice,bob=tok-bob", "-event-log", logPath}

	// A first run delivers as usual; it stops cleanly, giving up its
	// handler's claim.
	srv := start(t, bin, args...)
	frames := openStream(t, base, "tok-bob", "")
	m0 := post(t, base, "tok-alice", "durable", "before")
	e0 := nextFrame(t, frames, 10*time.Second)
	require.Equal(t, "message.created", e0.Type)
	require.Equal(t, m0, objectID(t, e0))
	require.Eventually(t, func() bool { return strings.Contains(readFile(t, logPath), e0.ID) }, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, srv.Process.Signal(syscall.SIGTERM))
	_, _ = srv.Process.Wait()

	// A second run holds delivery: the write commits (201), nothing is
	// delivered, and the process is killed.
	srv = start(t, bin, append(args, "-hold-events")...)
	held := openStream(t, base, "tok-bob", e0.ID)
	m1 := post(t, base, "tok-alice", "durable", "committed, not delivered")
	noFrame(t, held, 500*time.Millisecond)
	require.NoError(t, srv.Process.Signal(syscall.SIGKILL))
	_, _ = srv.Process.Wait()
	assert.NotContains(t, readFile(t, logPath), m1, "the handler did not run")

	// After the restart the event is delivered.
	start(t, bin, args...)
	resumed := openStream(t, base, "tok-bob", e0.ID)
	e1 := nextFrame(t, resumed, 10*time.Second)
	assert.Equal(t, "message.created", e1.Type)
	assert.Equal(t, m1, objectID(t, e1), "the event of the committed write")
	noFrame(t, resumed, 300*time.Millisecond)
	require.Eventually(t, func() bool { return strings.Contains(readFile(t, logPath), e1.ID) }, 10*time.Second, 20*time.Millisecond,
		"the handler gets it after the restart")
	assert.Equal(t, 1, strings.Count(readFile(t, logPath), e0.ID), "the handler resumed after the events it had handled")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return ""
	}
	require.NoError(t, err)
	return string(b)
}

// TestTwoServersFanOutThroughNATS runs two servers on one PostgreSQL
// database, joined by a NATS subject (-pubsub): a message posted through
// one reaches an event stream of the other at once, though each reads the
// outbox on its own only every minute.
func TestTwoServersFanOutThroughNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary; skipped with -short")
	}
	natsURL := os.Getenv(envNATS)
	if natsURL == "" {
		t.Skipf("%s is not set (such as nats://127.0.0.1:4222): not testing fan-out through NATS", envNATS)
	}
	if os.Getenv(backendtest.EnvPostgres) == "" {
		t.Skipf("%s is not set: not testing two servers on PostgreSQL", backendtest.EnvPostgres)
	}
	var dsn string
	for _, e := range backendtest.SQL(t) {
		if e.Name == "postgres" {
			dsn = e.DSN(t)
		}
	}
	bin := buildServer(t)
	t.Setenv("NATS_SERVER_URL", natsURL) // inherited by the servers
	var r [6]byte
	_, _ = rand.Read(r[:])
	subject := "nats://parley-test-" + hex.EncodeToString(r[:])
	bucket := "file://" + filepath.ToSlash(t.TempDir())
	var bases [2]string
	for i := range bases {
		addr := testnet.FreeAddr(t)
		bases[i] = "http://" + addr
		start(t, bin, "-addr", addr, "-data", t.TempDir(), "-db", dsn, "-bucket", bucket, "-tokens", "alice=tok-alice,bob=tok-bob",
			"-pubsub", subject, "-event-poll", "1m")
	}
	onB := openStream(t, bases[1], "tok-bob", "")
	onA := openStream(t, bases[0], "tok-bob", "")
	time.Sleep(200 * time.Millisecond) // the subscriptions of NATS are set up at start; give the streams a moment
	for i := range 3 {
		begin := time.Now()
		id := post(t, bases[0], "tok-alice", "general", "through A "+string(rune('a'+i)))
		f := nextFrame(t, onB, 5*time.Second)
		assert.Equal(t, id, objectID(t, f), "a message posted through A reaches B's stream")
		t.Logf("POST on A to SSE on B: %v", time.Since(begin))
		assert.Equal(t, id, objectID(t, nextFrame(t, onA, 5*time.Second)))
	}
	id := post(t, bases[1], "tok-alice", "general", "through B")
	assert.Equal(t, id, objectID(t, nextFrame(t, onA, 5*time.Second)), "and back")

	assert.Equal(t, id, objectID(t, nextFrame(t, onB, 5*time.Second)))

	// Typing through A reaches B's stream, with no id: it is not stored.
	require.Equal(t, http.StatusOK, call(t, "POST", bases[0]+"/v1/conversations/general/typing", "tok-alice", url.Values{}, nil))
	f := nextFrame(t, onB, 5*time.Second)
	assert.Equal(t, "conversation.typing", f.Type)
	assert.Empty(t, f.ID)
	assert.Contains(t, f.Data, `"username":"alice"`)
}
