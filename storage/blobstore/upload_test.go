package blobstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gocloud.dev/blob/fileblob"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/blobstore"
	_ "github.com/parleychat/parley/storage/blobstore/azure"
	_ "github.com/parleychat/parley/storage/blobstore/gcs"
	"github.com/parleychat/parley/storage/memstore"
)

// uploadDrivers returns the drivers of the upload tests: those of
// drivers(), and Azure and Google Cloud Storage (Azurite and
// fake-gcs-server) when their variables are set. The GCS bucket signs
// with a key made for the test: the emulator checks no signature, but the
// URL is made as for Cloud Storage.
func uploadDrivers(t *testing.T) []driver {
	t.Helper()
	ds := drivers(t)
	if u := os.Getenv("PARLEY_TEST_AZURE"); u != "" {
		ensureBucket(t, u)
		ds = append(ds, driver{name: "azure", open: func(tb testing.TB) *blobstore.Store { return openS3(tb, u) }})
	}
	if u := os.Getenv("PARLEY_TEST_GCS"); u != "" {
		ensureBucket(t, u)
		signed := u + sep(u) + "access_id=parley-test@example.iam.gserviceaccount.com&private_key_path=" + url.QueryEscape(signingKey(t))
		ds = append(ds, driver{name: "gcs", open: func(tb testing.TB) *blobstore.Store { return openS3(tb, signed) }})
	}
	return ds
}

func sep(u string) string {
	if strings.Contains(u, "?") {
		return "&"
	}
	return "?"
}

// signingKey writes an RSA key in PEM to a file of the test's and returns
// its path.
func signingKey(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	name := filepath.Join(t.TempDir(), "key.pem")
	require.NoError(t, os.WriteFile(name, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	return name
}

// TestSignPutCannotSign: a bucket that cannot sign upload URLs says so
// with ErrCannotSign, which is ErrUnimplemented; a directory bucket that
// signs URLs for its host does not sign uploads either (the host would
// have to take the bytes: its own route does that).
func TestSignPutCannotSign(t *testing.T) {
	ctx := context.Background()
	base, _ := url.Parse("https://files.example.com/signed")
	b, err := fileblob.OpenBucket(t.TempDir(), &fileblob.Options{URLSigner: fileblob.NewURLSignerHMAC(base, []byte("secret"))})
	require.NoError(t, err)
	signing := blobstore.New(b)
	t.Cleanup(func() { _ = signing.Close() })
	sum := sha256.Sum256([]byte("x"))
	for name, s := range map[string]*blobstore.Store{
		"mem":         openStore(t, "mem://"),
		"file":        openStore(t, "file://"+filepath.ToSlash(t.TempDir())),
		"file_signed": signing,
	} {
		p, err := s.SignPut(ctx, "attachments/a", blobstore.PutOptions{ContentType: "text/plain", SHA256: sum[:]})
		assert.Nil(t, p, name)
		assert.ErrorIs(t, err, blobstore.ErrCannotSign, name)
		assert.ErrorIs(t, err, messaging.ErrUnimplemented, name)
	}
}

func TestSignPutValidates(t *testing.T) {
	s := openStore(t, "mem://")
	sum := sha256.Sum256([]byte("x"))
	for name, opts := range map[string]blobstore.PutOptions{
		"no_type":   {SHA256: sum[:]},
		"no_sum":    {ContentType: "text/plain"},
		"short_sum": {ContentType: "text/plain", SHA256: sum[:16]},
		"neg_size":  {ContentType: "text/plain", SHA256: sum[:], Size: -1},
	} {
		_, err := s.SignPut(context.Background(), "k", opts)
		require.Error(t, err, name)
		assert.NotErrorIs(t, err, blobstore.ErrCannotSign, name)
	}
}

// TestInspectObject: Stat, ReadHead and SHA256 on every bucket: what the
// bucket says of a stored object, its first bytes, and the digest of all
// of them read once; a missing object is ErrNotFound for each.
func TestInspectObject(t *testing.T) {
	ctx := context.Background()
	for _, d := range uploadDrivers(t) {
		t.Run(d.name, func(t *testing.T) {
			s := d.open(t)
			data := randomBytes(t, 3<<20+17) // several of Put's writes and SHA256's reads
			require.NoError(t, s.Put(ctx, "attachments/big", "image/png", bytes.NewReader(data)))
			require.NoError(t, s.Put(ctx, "attachments/small", "text/html", strings.NewReader("<p>hi")))

			info, err := s.Stat(ctx, "attachments/big")
			require.NoError(t, err)
			assert.Equal(t, int64(len(data)), info.Size)
			assert.Equal(t, "image/png", info.ContentType)
			assert.Equal(t, "inline", info.ContentDisposition)
			assert.WithinDuration(t, time.Now(), info.ModTime, time.Hour)
			info, err = s.Stat(ctx, "attachments/small")
			require.NoError(t, err)
			assert.Equal(t, int64(5), info.Size)
			assert.Equal(t, "attachment", info.ContentDisposition, "a type a browser runs")

			head, err := s.ReadHead(ctx, "attachments/big", 512)
			require.NoError(t, err)
			assert.Equal(t, data[:512], head)
			head, err = s.ReadHead(ctx, "attachments/small", 512)
			require.NoError(t, err)
			assert.Equal(t, []byte("<p>hi"), head, "shorter than asked")

			sum, size, err := s.SHA256(ctx, "attachments/big")
			require.NoError(t, err)
			want := sha256.Sum256(data)
			assert.Equal(t, want[:], sum)
			assert.Equal(t, int64(len(data)), size)

			_, err = s.Stat(ctx, "attachments/missing")
			assert.ErrorIs(t, err, messaging.ErrNotFound)
			_, err = s.ReadHead(ctx, "attachments/missing", 512)
			assert.ErrorIs(t, err, messaging.ErrNotFound)
			_, _, err = s.SHA256(ctx, "attachments/missing")
			assert.ErrorIs(t, err, messaging.ErrNotFound)
		})
	}
}

// put sends body to a signed URL with its headers (and extra ones, "" to
// leave one out) and returns the status and the body of the answer.
func put(t *testing.T, p *blobstore.SignedPut, body []byte, extra map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(p.Method, p.URL, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range p.Headers {
		req.Header.Set(k, v)
	}
	for k, v := range extra {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(msg)
}

// TestSignedPut: on each bucket that signs upload URLs, a client stores an
// object by sending its bytes to the URL with the headers given, and the
// object is stored with its type and disposition. On S3 (MinIO) the
// bucket itself refuses bytes of another digest, and a request without
// the signed headers, and stores nothing then.
func TestSignedPut(t *testing.T) {
	ctx := context.Background()
	ran := false
	for _, d := range uploadDrivers(t) {
		if d.name == "mem" || strings.HasPrefix(d.name, "file") {
			continue
		}
		ran = true
		t.Run(d.name, func(t *testing.T) {
			s := d.open(t)
			data := randomBytes(t, 256<<10)
			sum := sha256.Sum256(data)
			p, err := s.SignPut(ctx, "attachments/upl_1", blobstore.PutOptions{ContentType: "image/png", SHA256: sum[:], Size: int64(len(data)), Expiry: 10 * time.Minute})
			require.NoError(t, err)
			assert.Equal(t, http.MethodPut, p.Method)
			assert.Equal(t, "image/png", p.Headers["Content-Type"])
			assert.WithinDuration(t, time.Now().Add(10*time.Minute), p.Expires, time.Minute)
			assert.Equal(t, d.name == "s3", p.ChecksumChecked)

			if p.ChecksumChecked {
				// Bytes of the same length but another digest: refused,
				// nothing stored.
				other := bytes.Clone(data)
				other[len(other)-1] ^= 1
				status, msg := put(t, p, other, nil)
				assert.Equal(t, http.StatusBadRequest, status, msg)
				// AWS answers BadDigest, MinIO XAmzContentChecksumMismatch.
				assert.Regexp(t, "BadDigest|ChecksumMismatch", msg)
				_, err := s.Stat(ctx, "attachments/upl_1")
				require.ErrorIs(t, err, messaging.ErrNotFound, "nothing stored")

				// Without a signed header, or with another value: refused
				// (MinIO answers 400 for a missing one, AWS 403).
				for _, h := range []map[string]string{
					{"x-amz-checksum-sha256": ""},
					{"Content-Type": ""},
					{"Content-Disposition": ""},
					{"Content-Type": "text/html"},
					{"Content-Disposition": "attachment; filename=x.html"},
				} {
					status, msg = put(t, p, data, h)
					assert.Contains(t, []int{http.StatusBadRequest, http.StatusForbidden}, status, "%v: %s", h, msg)
				}
				_, err = s.Stat(ctx, "attachments/upl_1")
				require.ErrorIs(t, err, messaging.ErrNotFound, "nothing stored")
			}

			status, msg := put(t, p, data, nil)
			require.Less(t, status, 300, "%d %s", status, msg)
			info, err := s.Stat(ctx, "attachments/upl_1")
			require.NoError(t, err)
			assert.Equal(t, int64(len(data)), info.Size)
			assert.Equal(t, "image/png", info.ContentType)
			assert.Equal(t, attachments.ContentDisposition("image/png", ""), info.ContentDisposition)
			head, err := s.ReadHead(ctx, "attachments/upl_1", 512)
			require.NoError(t, err)
			assert.Equal(t, data[:512], head)
			got, size, err := s.SHA256(ctx, "attachments/upl_1")
			require.NoError(t, err)
			assert.Equal(t, sum[:], got)
			assert.Equal(t, int64(len(data)), size)
		})
	}
	if !ran {
		t.Skip("no bucket that signs upload URLs: set PARLEY_TEST_S3, PARLEY_TEST_AZURE or PARLEY_TEST_GCS (.ci/minio.sh, .ci/azurite.sh, .ci/fakegcs.sh)")
	}
}

// TestSignedPutStoresOnce: a signed URL stores its object once. A second
// request to it, with other bytes (of another size too), is refused and
// the object keeps the bytes of the first: a client cannot replace a file
// the server has checked (attachments' Complete) for as long as the URL
// lasts. On S3 the signed digest refuses other bytes; on Azure the URL
// creates the blob and cannot overwrite it. (Google Cloud Storage's URL
// signs a precondition that fake-gcs-server does not check: the gcs
// package's TestSignedPutCreatesOnly checks the URL instead.)
func TestSignedPutStoresOnce(t *testing.T) {
	ctx := context.Background()
	ran := false
	for _, d := range uploadDrivers(t) {
		if d.name == "mem" || strings.HasPrefix(d.name, "file") || d.name == "gcs" {
			continue
		}
		ran = true
		t.Run(d.name, func(t *testing.T) {
			s := d.open(t)
			data := []byte("the bytes the server checked")
			sum := sha256.Sum256(data)
			p, err := s.SignPut(ctx, "attachments/upl_1", blobstore.PutOptions{ContentType: "text/plain", SHA256: sum[:], Size: int64(len(data)), Expiry: 10 * time.Minute})
			require.NoError(t, err)
			status, msg := put(t, p, data, nil)
			require.Less(t, status, 300, "%d %s", status, msg)

			status, msg = put(t, p, []byte("other bytes, and more of them than the first"), nil)
			assert.GreaterOrEqual(t, status, 400, "a second request is refused: %d %s", status, msg)
			got, size, err := s.SHA256(ctx, "attachments/upl_1")
			require.NoError(t, err)
			assert.Equal(t, sum[:], got, "the object keeps the first bytes")
			assert.Equal(t, int64(len(data)), size)
		})
	}
	if !ran {
		t.Skip("no bucket that signs upload URLs: set PARLEY_TEST_S3, PARLEY_TEST_AZURE or PARLEY_TEST_GCS (.ci/minio.sh, .ci/azurite.sh, .ci/fakegcs.sh)")
	}
}

// TestDirectUploadStoredHeaders: on each bucket that signs upload URLs,
// through attachments' Service: an object a client stored with another
// type, or without the disposition of upload_headers (Azure's SAS covers
// no header: its signed download URLs would serve HTML inline), is not
// completed and is deleted; one sent as upload_headers say is completed.
func TestDirectUploadStoredHeaders(t *testing.T) {
	ctx := context.Background()
	ran := false
	for _, d := range uploadDrivers(t) {
		if d.name == "mem" || strings.HasPrefix(d.name, "file") {
			continue
		}
		ran = true
		t.Run(d.name, func(t *testing.T) {
			s := d.open(t)
			msgs := svctest.New(t, memstore.New(), s, nil)
			alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
			require.NoError(t, err)
			page := []byte("<html><script>alert(1)</script></html>")
			sum := sha256.Sum256(page)
			r, err := msgs.Files().Reserve(ctx, alice, attachments.NewUpload{Filename: "page.txt", ContentType: "text/plain", FileSize: int64(len(page)), SHA256: hex.EncodeToString(sum[:])})
			require.NoError(t, err)
			require.NotEmpty(t, r.URL)
			p := &blobstore.SignedPut{URL: r.URL, Method: r.Method, Headers: r.Headers}

			// S3 refuses a request without its signed headers (as Cloud
			// Storage does; fake-gcs-server checks no signature); Azure
			// stores it.
			status, _ := put(t, p, page, map[string]string{"Content-Type": "text/html", "Content-Disposition": "", "x-ms-blob-content-disposition": ""})
			t.Logf("a PUT of other headers: %d", status)
			_, err = msgs.Files().Complete(ctx, alice, r.ID, messaging.Idempotency{})
			assert.ErrorIs(t, err, messaging.ErrInvalid)
			_, err = s.Stat(ctx, r.Key)
			require.ErrorIs(t, err, messaging.ErrNotFound, "nothing kept")

			status, msg := put(t, p, page, nil)
			require.Less(t, status, 300, "%d %s", status, msg)
			a, err := msgs.Files().Complete(ctx, alice, r.ID, messaging.Idempotency{})
			require.NoError(t, err)
			assert.Equal(t, "text/plain", a.FileType)
			info, err := s.Stat(ctx, r.Key)
			require.NoError(t, err)
			assert.Equal(t, "text/plain", info.ContentType)
			assert.Equal(t, attachments.ContentDisposition("text/plain", ""), info.ContentDisposition)
		})
	}
	if !ran {
		t.Skip("no bucket that signs upload URLs: set PARLEY_TEST_S3, PARLEY_TEST_AZURE or PARLEY_TEST_GCS (.ci/minio.sh, .ci/azurite.sh, .ci/fakegcs.sh)")
	}
}
