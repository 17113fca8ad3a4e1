package main

import (
	"bytes"
	"context"
	"io"
	"net"
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
