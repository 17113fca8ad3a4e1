package main

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/testnet"
)

// These tests hold defect 7 of issue 10: every startup error names the
// thing at fault and what to do, and the server checks its listen address
// before it touches storage.

func startErr(t *testing.T, args ...string) error {
	t.Helper()
	err := run(t.Context(), args, io.Discard, io.Discard)
	require.Error(t, err)
	return err
}

func TestAddressInUseFailsFirst(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { taken.Close() })
	data := filepath.Join(t.TempDir(), "data")
	err = startErr(t, "-addr", taken.Addr().String(), "-data", data)
	assert.Contains(t, err.Error(), "-addr "+taken.Addr().String())
	assert.Contains(t, err.Error(), "address already in use")
	assert.NoDirExists(t, data, "storage was touched before the address was checked")
}

func TestUnknownDatabaseScheme(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, dsn := range []string{"postgress://u@host/db", "sqlite://parley.db", "mariadb://root@host/db"} {
		err := startErr(t, "-addr", "127.0.0.1:0", "-data", "data", "-db", dsn)
		assert.Contains(t, err.Error(), "unknown database scheme", dsn)
		assert.Contains(t, err.Error(), "postgres://", "the error says what would do")
	}
	entries, _ := os.ReadDir(dir)
	assert.Empty(t, entries, "nothing was created")
}

func TestUnopenableSQLitePath(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-folder", "parley.db")
	err := startErr(t, "-addr", "127.0.0.1:0", "-data", t.TempDir(), "-db", missing)
	assert.Contains(t, err.Error(), missing, "the path is named")
	assert.Contains(t, err.Error(), "does not exist")
	assert.NotContains(t, err.Error(), "out of memory")
}

// TestGreetingHidesHostTokens: the greeting prints the demo tokens, but not
// tokens a host passed in (issue 10, defect 6: it printed every one).
func TestGreetingHidesHostTokens(t *testing.T) {
	addr := testnet.FreeAddr(t)
	var out syncBuffer
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", addr, "-data", t.TempDir(), "-tokens", "carol=c4rol-s3cret,dave=d4ve-s3cret"}, &out, io.Discard)
	}()
	waitListening(t, addr)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "curl") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	require.NoError(t, <-done)
	g := out.String()
	assert.Contains(t, g, "carol")
	assert.Contains(t, g, "dave")
	assert.NotContains(t, g, "s3cret")
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
