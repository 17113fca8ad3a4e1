package blobstore_test

import (
	"io"
	"net/http"
	"net/http/httptest"
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
// URLs, with its temporary files next to the objects. A test server plays
// the host that serves the signed URLs: it checks each with KeyFromURL.
func TestConformanceFileSigned(t *testing.T) {
	storetest.RunBlobConformanceTests(t, func(t *testing.T) attachments.BlobStore {
		var s *blobstore.Store
		var signer *fileblob.URLSignerHMAC
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key, err := signer.KeyFromURL(r.Context(), r.URL)
			if err != nil {
				http.Error(w, "bad signature", http.StatusForbidden)
				return
			}
			rd, err := s.Open(r.Context(), key)
			if err != nil {
				http.NotFound(w, r)
				return
			}
			defer rd.Close()
			// The URL names no file: the host serves the type and the
			// disposition stored with the object.
			if attrs, err := s.Bucket().Attributes(r.Context(), key); err == nil {
				w.Header().Set("Content-Type", attrs.ContentType)
				w.Header().Set("Content-Disposition", attrs.ContentDisposition)
			}
			w.Header().Set("X-Content-Type-Options", "nosniff")
			_, _ = io.Copy(w, rd)
		}))
		t.Cleanup(srv.Close)
		base, err := url.Parse(srv.URL + "/signed")
		require.NoError(t, err)
		signer = fileblob.NewURLSignerHMAC(base, []byte("secret"))
		b, err := fileblob.OpenBucket(t.TempDir(), &fileblob.Options{URLSigner: signer, NoTempDir: true})
		require.NoError(t, err)
		s = blobstore.New(b)
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
