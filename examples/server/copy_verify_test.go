package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/sqlstore"
)

// TestCopyVerifyChangesNothing: copy -verify against a destination bucket
// folder that does not exist fails, naming the bucket, and does not make
// the folder (a verification writes nothing).
func TestCopyVerifyChangesNothing(t *testing.T) {
	ctx := t.Context()
	data, dest := t.TempDir(), t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(data, "files"), 0o755))
	for _, db := range []string{filepath.Join(data, "parley.db"), filepath.Join(dest, "parley.db")} {
		s, err := sqlstore.Open(ctx, db, nil)
		require.NoError(t, err)
		require.NoError(t, s.Migrate(ctx))
		require.NoError(t, s.Close())
	}
	missing := filepath.Join(dest, "files")
	var stderr strings.Builder
	err := runCopy(ctx, []string{"-data", data, "-to-db", filepath.Join(dest, "parley.db"), "-to-bucket", fileURL(missing), "-verify", "-quiet"}, io.Discard, &stderr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-to-bucket")
	assert.NoDirExists(t, missing, "a verification makes no folder")
}

// TestCopyLeavesSourceFileAsItWas: copy opens a SQLite source read-only.
// Opening it as the server does sets its journal mode (WAL), a write: a
// source in another mode (a file from before, or from a host that set
// journal_mode itself) had its header rewritten by the copy that reads
// it. Nor does copy -verify write to its destination.
func TestCopyLeavesSourceFileAsItWas(t *testing.T) {
	ctx := t.Context()
	data, dest := t.TempDir(), t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(data, "files"), 0o755))
	src := filepath.Join(data, "parley.db")
	s, err := sqlstore.Open(ctx, "file:"+src+"?_pragma=journal_mode(DELETE)", nil)
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	require.NoError(t, s.Driver().PutContact(ctx, messaging.Contact{ID: "ctc_a", Username: "a", CreatedAt: time.Unix(1, 0).UTC()}))
	require.NoError(t, s.Close())
	before, err := os.ReadFile(src)
	require.NoError(t, err)
	require.Equal(t, byte(1), before[18], "a rollback-journal file")

	dst := filepath.Join(dest, "parley.db")
	bucket := fileURL(filepath.Join(dest, "files"))
	err = runCopy(ctx, []string{"-data", data, "-to-db", dst, "-to-bucket", bucket, "-quiet"}, io.Discard, io.Discard)
	require.NoError(t, err)
	after, err := os.ReadFile(src)
	require.NoError(t, err)
	assert.Equal(t, byte(1), after[18], "the source keeps its journal mode")
	assert.True(t, bytes.Equal(before, after), "the source file is left as it was")
	assert.NoFileExists(t, src+"-wal")

	// The destination, in rollback-journal mode too, is only read by
	// -verify.
	s, err = sqlstore.Open(ctx, "file:"+dst+"?_pragma=journal_mode(DELETE)", nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	before, err = os.ReadFile(dst)
	require.NoError(t, err)
	require.Equal(t, byte(1), before[18], "a rollback-journal file")
	err = runCopy(ctx, []string{"-data", data, "-to-db", dst, "-to-bucket", bucket, "-verify", "-quiet"}, io.Discard, io.Discard)
	require.NoError(t, err)
	after, err = os.ReadFile(dst)
	require.NoError(t, err)
	assert.Equal(t, byte(1), after[18], "the destination keeps its journal mode")
	assert.True(t, bytes.Equal(before, after), "copy -verify leaves the destination as it was")
}

func TestReadOnlyDSN(t *testing.T) {
	for dsn, want := range map[string]string{
		"data/parley.db":                              "file:data/parley.db?mode=ro",
		"file:/srv/p.db?mode=rwc":                     "file:/srv/p.db?mode=ro",
		"file:p.db?_pragma=synchronous(FULL)&MODE=rw": "file:p.db?mode=ro&_pragma=synchronous(FULL)",
		"postgres://u@h/db":                           "postgres://u@h/db",
		"mysql://u@h/db":                              "mysql://u@h/db",
	} {
		assert.Equal(t, want, readOnly(dsn), dsn)
	}
}
