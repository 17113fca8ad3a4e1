package httpadapter_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gocloud.dev/blob/fileblob"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/storage/blobstore"
	"github.com/parleychat/parley/storage/memstore"
)

// TestLocalDiskErrorIs500 holds defect 6 of issue 10: a local disk error
// (here the folder an object goes to is a file: ENOTDIR, as a full disk
// gives ENOSPC and a forbidden folder EACCES) was a 503 "try again later"
// with Retry-After, because syscall.Errno is a net.Error. It is a 500,
// logged at ERROR with the request id.
func TestLocalDiskErrorIs500(t *testing.T) {
	dir := t.TempDir()
	b, err := fileblob.OpenBucket(dir, nil)
	require.NoError(t, err)
	disk := blobstore.New(b)
	t.Cleanup(func() { _ = disk.Close() })
	var logs bytes.Buffer
	e := newEnv(t, memstore.New().Driver(), envConfig{
		blobs: func(listingBlobs) attachments.BlobStore { return disk },
		opts:  httpadapter.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))},
	})
	// Whatever the installation's prefix, "attachments" cannot be a folder.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "attachments"), []byte("in the way"), 0o644))

	res := e.as(t, "alice", "POST", "/v1/attachments", multipartBody(field("conversation_id", "c"), file("a.txt", "text/plain", "hello")))
	assertError(t, res, http.StatusInternalServerError, wantErr{"api_error", "internal_error", ""})
	assert.Empty(t, res.Header.Get("Retry-After"))
	id := res.Header.Get("Request-Id")
	require.NotEmpty(t, id)
	assert.Contains(t, logs.String(), "level=ERROR")
	assert.Contains(t, logs.String(), id)
	assert.Contains(t, logs.String(), "not a directory", "the cause is logged")
	assert.NotContains(t, string(res.body), dir, "no path reaches the client")
}
