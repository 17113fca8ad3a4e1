package storecopy_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gocloud.dev/blob/fileblob"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/blobstore"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

// TestConformance runs the copy tests of the conformance suite over
// memstore (with a memory bucket) and every SQL engine whose environment
// variable is set (each with a folder bucket): every pair, and the chain
// memstore → SQLite → PostgreSQL → MySQL → memstore.
func TestConformance(t *testing.T) {
	backends := []storetest.CopyBackend{{Name: "memstore", New: func(testing.TB) (messaging.Storage, attachments.BlobStore) {
		return memstore.New(), memstore.NewBlobStore()
	}}}
	for _, e := range backendtest.SQL(t) {
		backends = append(backends, storetest.CopyBackend{Name: e.Name, New: func(tb testing.TB) (messaging.Storage, attachments.BlobStore) {
			b, err := fileblob.OpenBucket(tb.TempDir(), nil)
			require.NoError(tb, err)
			tb.Cleanup(func() { _ = b.Close() })
			return e.Open(tb), blobstore.New(b)
		}})
	}
	storetest.RunCopyTests(t, backends)
}
