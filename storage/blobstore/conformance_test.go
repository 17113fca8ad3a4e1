package blobstore_test

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gocloud.dev/blob/fileblob"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/storage/blobstore"
	"github.com/parleychat/parley/storage/storetest"
)

func TestConformanceMem(t *testing.T) {
	storetest.RunBlobConformanceTests(t, func(t *testing.T) attachments.BlobStore { return openStore(t, "mem://") })
}

func TestConformanceFile(t *testing.T) {
	storetest.RunBlobConformanceTests(t, func(t *testing.T) attachments.BlobStore {
		return openStore(t, "file://"+filepath.ToSlash(t.TempDir()))
	})
}

// TestConformanceFileSigned runs the suite on a directory bucket that signs
// URLs, with its temporary files next to the objects.
func TestConformanceFileSigned(t *testing.T) {
	storetest.RunBlobConformanceTests(t, func(t *testing.T) attachments.BlobStore {
		base, err := url.Parse("https://files.example.com/signed")
		require.NoError(t, err)
		b, err := fileblob.OpenBucket(t.TempDir(), &fileblob.Options{
			URLSigner: fileblob.NewURLSignerHMAC(base, []byte("secret")),
			NoTempDir: true,
		})
		require.NoError(t, err)
		s := blobstore.New(b)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestConformanceS3(t *testing.T) {
	u := os.Getenv("PARLEY_TEST_S3")
	if u == "" {
		t.Skip("PARLEY_TEST_S3 is not set (an s3:// bucket URL; see .ci/minio.sh)")
	}
	storetest.RunBlobConformanceTests(t, func(t *testing.T) attachments.BlobStore { return openS3(t, u) })
}
