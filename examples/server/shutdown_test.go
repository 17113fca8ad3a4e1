package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/testnet"
)

// TestRunStopsReconcileBeforeClosing: when run returns, after a shutdown or
// an error, the reconcile goroutine has returned too, so it never works on
// the database and bucket that run closed.
func TestRunStopsReconcileBeforeClosing(t *testing.T) {
	t.Run("shutdown", func(t *testing.T) {
		addr := testnet.FreeAddr(t)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- run(ctx, []string{"-addr", addr, "-data", t.TempDir()}, io.Discard, io.Discard) }()
		waitListening(t, addr)
		// The address is taken first, before storage is opened: wait for
		// the reconcile loop to start.
		for deadline := time.Now().Add(30 * time.Second); !reconciling() && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		require.True(t, reconciling(), "the reconcile goroutine runs while the server does")
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("run did not return after its context was canceled")
		}
		assert.False(t, reconciling(), "the reconcile goroutine outlived run")
	})

	t.Run("listen fails", func(t *testing.T) {
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { taken.Close() })
		// The context is not canceled: run returns on its own error.
		ctx, cancel := context.WithCancel(t.Context())
		t.Cleanup(cancel)
		err = run(ctx, []string{"-addr", taken.Addr().String(), "-data", t.TempDir()}, io.Discard, io.Discard)
		require.Error(t, err)
		assert.False(t, reconciling(), "the reconcile goroutine outlived run")
	})
}

// reconciling reports whether a goroutine is inside reconcile.
func reconciling() bool {
	frame := []byte(runtime.FuncForPC(reflect.ValueOf(reconcile).Pointer()).Name() + "(")
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Contains(buf[:n], frame)
		}
		buf = make([]byte, 2*len(buf))
	}
}

// waitListening waits until addr accepts connections.
func waitListening(tb testing.TB, addr string) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("nothing listens on %s", addr)
}

// TestRunShutsDownWithOpenStreams: with ten event streams open, run
// returns within a second of its context's end: the streams end with the
// server's Shutdown, and nothing closes the Feed before it.
func TestRunShutsDownWithOpenStreams(t *testing.T) {
	addr := testnet.FreeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", addr, "-data", t.TempDir(), "-tokens", "alice=tok-alice,bob=tok-bob"}, io.Discard, io.Discard)
	}()
	waitListening(t, addr)
	var streams []<-chan sseFrame
	for i := range 10 {
		token := []string{"tok-alice", "tok-bob"}[i%2]
		streams = append(streams, openStreamEventually(t, "http://"+addr, token))
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return with streams open")
	}
	elapsed := time.Since(start)
	t.Logf("run returned %v after its context ended, with %d open streams", elapsed, len(streams))
	assert.Less(t, elapsed, time.Second)
	for _, frames := range streams {
		for range frames { // ends when the server ended the stream
		}
	}
}

// openStreamEventually opens a stream as openStream does, retrying while
// the server is not yet serving (it takes its address before it opens
// storage).
func openStreamEventually(t testing.TB, base, token string) <-chan sseFrame {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, err := http.NewRequest("GET", base+"/v1/events", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return openStream(t, base, token, "")
			}
		}
		require.True(t, time.Now().Before(deadline), "the server does not serve /v1/events: %v", err)
		time.Sleep(20 * time.Millisecond)
	}
}
