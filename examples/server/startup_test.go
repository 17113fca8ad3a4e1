package main

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
