package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
