package blobstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"  // and file:// URLs
	_ "gocloud.dev/blob/memblob" // mem:// URLs

	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	pdriver "github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/blobstore"
	_ "github.com/parleychat/parley/storage/blobstore/s3" // s3:// URLs, signed with response headers
	"github.com/parleychat/parley/storage/memstore"
)

// driver makes a fresh, empty Store of one gocloud driver.
type driver struct {
	name string
	open func(tb testing.TB) *blobstore.Store
	// dir is the bucket directory of a file driver, "" otherwise.
	dir func() string
}

// drivers returns the drivers to test: memory, a directory (temporary files
// in os.TempDir, and next to the objects), and, when PARLEY_TEST_S3 names a
// bucket URL, S3 under a per-test key prefix.
func drivers(t *testing.T) []driver {
	t.Helper()
	var lastDir string
	fileDriver := func(query string) func(tb testing.TB) *blobstore.Store {
		return func(tb testing.TB) *blobstore.Store {
			tb.Helper()
			lastDir = tb.TempDir()
			return openStore(tb, "file://"+filepath.ToSlash(lastDir)+query)
		}
	}
	ds := []driver{
		{name: "mem", open: func(tb testing.TB) *blobstore.Store { return openStore(tb, "mem://") }},
		{name: "file", open: fileDriver(""), dir: func() string { return lastDir }},
		{name: "file_no_tmp_dir", open: fileDriver("?no_tmp_dir=true"), dir: func() string { return lastDir }},
	}
	if u := os.Getenv("PARLEY_TEST_S3"); u != "" {
		ds = append(ds, driver{name: "s3", open: func(tb testing.TB) *blobstore.Store { return openS3(tb, u) }})
	}
	return ds
}

func openStore(tb testing.TB, u string) *blobstore.Store {
	tb.Helper()
	s, err := blobstore.Open(context.Background(), u)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// openS3 opens the bucket at u under a fresh key prefix, so that each test
// sees an empty bucket, and removes what the test left when it ends.
func openS3(tb testing.TB, u string) *blobstore.Store {
	tb.Helper()
	ctx := context.Background()
	b, err := blob.OpenBucket(ctx, u)
	require.NoError(tb, err, "PARLEY_TEST_S3=%s", u)
	prefix := "test-" + randomHex(tb, 8) + "/"
	pb := blob.PrefixedBucket(b, prefix)
	tb.Cleanup(func() {
		it := b.List(&blob.ListOptions{Prefix: prefix})
		for {
			o, err := it.Next(ctx)
			if err != nil {
				break
			}
			_ = b.Delete(ctx, o.Key)
		}
		_ = b.Close()
	})
	s := blobstore.New(pb)
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func randomHex(tb testing.TB, n int) string {
	tb.Helper()
	p := make([]byte, n)
	_, err := rand.Read(p)
	require.NoError(tb, err)
	return hex.EncodeToString(p)
}

func randomBytes(tb testing.TB, n int) []byte {
	tb.Helper()
	p := make([]byte, n)
	_, err := rand.Read(p)
	require.NoError(tb, err)
	return p
}

func keys(tb testing.TB, s *blobstore.Store) []string {
	tb.Helper()
	var ks []string
	require.NoError(tb, s.List(context.Background(), "", func(o pdriver.Object) error {
		ks = append(ks, o.Key)
		return nil
	}))
	return ks
}

func readAll(tb testing.TB, s *blobstore.Store, key string) []byte {
	tb.Helper()
	r, err := s.Open(context.Background(), key)
	require.NoError(tb, err)
	defer r.Close()
	p, err := io.ReadAll(r)
	require.NoError(tb, err)
	return p
}

// failingReader yields n bytes, then fails with err.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// cancelingReader yields data and cancels ctx once after reading `at`
// bytes, then goes on to io.EOF as if nothing happened.
type cancelingReader struct {
	r      io.Reader
	at, n  int
	cancel context.CancelFunc
}

func (r *cancelingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.n += n
	if r.n >= r.at && r.cancel != nil {
		r.cancel()
		r.cancel = nil
	}
	return n, err
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, d := range drivers(t) {
		t.Run(d.name, func(t *testing.T) {
			s := d.open(t)
			data := randomBytes(t, 3<<20+17)
			require.NoError(t, s.Put(ctx, "attachments/att_1", "application/octet-stream", bytes.NewReader(data)))
			assert.Equal(t, data, readAll(t, s, "attachments/att_1"))

			r, err := s.Open(ctx, "attachments/att_1")
			require.NoError(t, err)
			defer r.Close()
			off, err := r.Seek(-10, io.SeekEnd)
			require.NoError(t, err)
			assert.Equal(t, int64(len(data)-10), off)
			tail, err := io.ReadAll(r)
			require.NoError(t, err)
			assert.Equal(t, data[len(data)-10:], tail)
			_, err = r.Seek(5, io.SeekStart)
			require.NoError(t, err)
			p := make([]byte, 4)
			_, err = io.ReadFull(r, p)
			require.NoError(t, err)
			assert.Equal(t, data[5:9], p)

			// An empty object, and one with no content type (sniffed).
			require.NoError(t, s.Put(ctx, "attachments/empty", "", strings.NewReader("")))
			assert.Empty(t, readAll(t, s, "attachments/empty"))
			require.NoError(t, s.Put(ctx, "attachments/small", "", strings.NewReader("hello")))
			assert.Equal(t, "hello", string(readAll(t, s, "attachments/small")))
		})
	}
}

func TestOpenMissing(t *testing.T) {
	for _, d := range drivers(t) {
		t.Run(d.name, func(t *testing.T) {
			s := d.open(t)
			_, err := s.Open(context.Background(), "attachments/none")
			require.Error(t, err)
			assert.ErrorIs(t, err, messaging.ErrNotFound)
		})
	}
}

func TestDelete(t *testing.T) {
	ctx := context.Background()
	for _, d := range drivers(t) {
		t.Run(d.name, func(t *testing.T) {
			s := d.open(t)
			assert.NoError(t, s.Delete(ctx, "attachments/none"), "deleting a missing key")
			require.NoError(t, s.Put(ctx, "attachments/a", "text/plain", strings.NewReader("a")))
			require.NoError(t, s.Delete(ctx, "attachments/a"))
			_, err := s.Open(ctx, "attachments/a")
			assert.ErrorIs(t, err, messaging.ErrNotFound)
			assert.Empty(t, keys(t, s))
			assert.NoError(t, s.Delete(ctx, "attachments/a"), "deleting twice")
		})
	}
}

func TestList(t *testing.T) {
	ctx := context.Background()
	for _, d := range drivers(t) {
		t.Run(d.name, func(t *testing.T) {
			s := d.open(t)
			before := time.Now().Add(-time.Minute)
			for _, k := range []string{"attachments/b", "attachments/a", "other/c", "attachments/sub/d"} {
				require.NoError(t, s.Put(ctx, k, "text/plain", strings.NewReader(k)))
			}
			var got []pdriver.Object
			require.NoError(t, s.List(ctx, "attachments/", func(o pdriver.Object) error {
				got = append(got, o)
				return nil
			}))
			var ks []string
			for _, o := range got {
				ks = append(ks, o.Key)
				assert.True(t, o.ModTime.After(before) && o.ModTime.Before(time.Now().Add(time.Minute)),
					"ModTime %v of %s is not about now", o.ModTime, o.Key)
			}
			assert.Equal(t, []string{"attachments/a", "attachments/b", "attachments/sub/d"}, ks)
			assert.Len(t, keys(t, s), 4)

			stop := errors.New("stop")
			n := 0
			err := s.List(ctx, "", func(pdriver.Object) error { n++; return stop })
			assert.ErrorIs(t, err, stop)
			assert.Equal(t, 1, n, "List must stop at fn's first error")
		})
	}
}

// TestPutAbortsOnReaderError checks the BlobStore contract that gocloud
// meets only when the writer's context is canceled before Close: a failing
// reader leaves no object (nor a temporary file a List would see).
func TestPutAbortsOnReaderError(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	for _, d := range drivers(t) {
		for _, size := range []int{0, 100, 2 << 20, 9 << 20} {
			t.Run(d.name+"/"+sizeName(size), func(t *testing.T) {
				s := d.open(t)
				for _, ct := range []string{"application/pdf", ""} {
					err := s.Put(ctx, "attachments/x", ct, &failingReader{data: randomBytes(t, size), err: boom})
					require.Error(t, err)
					assert.ErrorIs(t, err, boom)
					_, err = s.Open(ctx, "attachments/x")
					assert.ErrorIs(t, err, messaging.ErrNotFound, "an aborted write left an object")
					assert.Empty(t, keys(t, s))
				}
				if d.dir != nil {
					assert.Empty(t, files(t, d.dir()), "an aborted write left files in the bucket directory")
				}
			})
		}
	}
}

// TestPutAbortsOnContextDone: a context canceled mid-upload aborts it even
// when the reader goes on to io.EOF.
func TestPutAbortsOnContextDone(t *testing.T) {
	for _, d := range drivers(t) {
		for _, size := range []int{1000, 2 << 20, 9 << 20} {
			t.Run(d.name+"/"+sizeName(size), func(t *testing.T) {
				s := d.open(t)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				r := &cancelingReader{r: bytes.NewReader(randomBytes(t, size)), at: size / 2, cancel: cancel}
				err := s.Put(ctx, "attachments/x", "application/pdf", r)
				require.Error(t, err)
				assert.ErrorIs(t, err, context.Canceled)
				_, err = s.Open(context.Background(), "attachments/x")
				assert.ErrorIs(t, err, messaging.ErrNotFound, "a canceled write left an object")
				assert.Empty(t, keys(t, s))
				if d.dir != nil {
					assert.Empty(t, files(t, d.dir()))
				}

				// Already done before Put starts.
				err = s.Put(ctx, "attachments/y", "text/plain", strings.NewReader("y"))
				assert.ErrorIs(t, err, context.Canceled)
				assert.Empty(t, keys(t, s))
			})
		}
	}
}

// TestFileTempFilesRemoved: with temporary files in os.TempDir (the
// default), an aborted write leaves none there either.
func TestFileTempFilesRemoved(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := t.TempDir()
	s := openStore(t, "file://"+filepath.ToSlash(dir))
	err := s.Put(context.Background(), "attachments/x", "text/plain", &failingReader{data: randomBytes(t, 1<<20), err: io.ErrUnexpectedEOF})
	require.Error(t, err)
	assert.Empty(t, files(t, tmp), "temporary files left in TMPDIR")
	assert.Empty(t, files(t, dir))

	require.NoError(t, s.Put(context.Background(), "attachments/y", "text/plain", strings.NewReader("y")))
	assert.Empty(t, files(t, tmp))
	assert.Equal(t, []string{"attachments/y"}, keys(t, s))
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return strconv.Itoa(n>>20) + "MiB"
	}
	return strconv.Itoa(n) + "B"
}

// files lists the regular files under dir, relative to it.
func files(tb testing.TB, dir string) []string {
	tb.Helper()
	var found []string
	require.NoError(tb, filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			found = append(found, rel)
		}
		return nil
	}))
	return found
}

func TestSignedURLUnimplemented(t *testing.T) {
	for _, u := range []string{"mem://", "file://" + filepath.ToSlash(t.TempDir())} {
		s := openStore(t, u)
		_, err := s.SignedURL(context.Background(), "attachments/a", "a.txt", "text/plain", time.Minute)
		require.Error(t, err, u)
		assert.ErrorIs(t, err, messaging.ErrUnimplemented, u)

		// Through the Service too.
		svc := svctest.New(t, memstore.New(), s, nil).Files()
		_, err = svc.SignedURL(context.Background(), messaging.Contact{ID: "ctc_a"}, messaging.Attachment{ID: "att_a", Key: "attachments/att_a", UploaderID: "ctc_a"}, time.Minute)
		assert.ErrorIs(t, err, messaging.ErrUnimplemented, u)
	}
}

// TestSignedURLFile shows how a directory bucket signs: a URLSignerHMAC on
// the fileblob options. The host serves the base URL, checking each
// request with KeyFromURL.
func TestSignedURLFile(t *testing.T) {
	ctx := context.Background()
	base, err := url.Parse("https://files.example.com/signed")
	require.NoError(t, err)
	signer := fileblob.NewURLSignerHMAC(base, []byte("a secret of the host"))
	b, err := fileblob.OpenBucket(t.TempDir(), &fileblob.Options{URLSigner: signer})
	require.NoError(t, err)
	s := blobstore.New(b)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Put(ctx, "attachments/att_1", "text/plain", strings.NewReader("hello")))

	raw, err := s.SignedURL(ctx, "attachments/att_1", "hello.txt", "text/plain", time.Minute)
	require.NoError(t, err)
	u, err := url.Parse(raw)
	require.NoError(t, err)
	assert.Equal(t, "files.example.com", u.Host)
	assert.Equal(t, "/signed", u.Path)

	key, err := signer.KeyFromURL(ctx, u)
	require.NoError(t, err)
	assert.Equal(t, "attachments/att_1", key)
	assert.Equal(t, "hello", string(readAll(t, s, key)))

	// A tampered URL is refused.
	q := u.Query()
	q.Set("obj", "attachments/att_2")
	u.RawQuery = q.Encode()
	_, err = signer.KeyFromURL(ctx, u)
	assert.Error(t, err)

	// An expired one too.
	raw, err = s.SignedURL(ctx, "attachments/att_1", "hello.txt", "text/plain", time.Nanosecond)
	require.NoError(t, err)
	u, err = url.Parse(raw)
	require.NoError(t, err)
	time.Sleep(1100 * time.Millisecond) // the expiry has a resolution of a second
	_, err = signer.KeyFromURL(ctx, u)
	assert.Error(t, err)
}

// TestSignedURLS3 fetches a signed URL from the S3 server: it serves the
// bytes with the type and file name the URL asked for.
func TestSignedURLS3(t *testing.T) {
	u := os.Getenv("PARLEY_TEST_S3")
	if u == "" {
		t.Skip("PARLEY_TEST_S3 is not set (an s3:// bucket URL; see .ci/minio.sh)")
	}
	ctx := context.Background()
	s := openS3(t, u)
	require.NoError(t, s.Put(ctx, "attachments/att_1", "text/html", strings.NewReader("<p>hi</p>")))
	for _, tc := range []struct {
		filename, ctype, wantDisp string
	}{
		{"page.html", "text/html", `attachment; filename="page.html"; filename*=UTF-8''page.html`},
		{"photo.png", "image/png", `inline; filename="photo.png"; filename*=UTF-8''photo.png`},
		{"résumé final.pdf", "application/pdf", `attachment; filename="r_sum_ final.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%20final.pdf`},
		{"clip.webm", "video/webm", `inline; filename="clip.webm"; filename*=UTF-8''clip.webm`},
		{"sound.wav", "audio/x-wav", `attachment; filename="sound.wav"; filename*=UTF-8''sound.wav`},
	} {
		raw, err := s.SignedURL(ctx, "attachments/att_1", tc.filename, tc.ctype, time.Minute)
		require.NoError(t, err)
		resp, err := http.Get(raw)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		assert.Equal(t, "<p>hi</p>", string(body))
		assert.Equal(t, tc.ctype, resp.Header.Get("Content-Type"))
		assert.Equal(t, tc.wantDisp, resp.Header.Get("Content-Disposition"))
	}

	raw, err := s.SignedURL(ctx, "attachments/att_1", "a.html", "text/html", time.Minute)
	require.NoError(t, err)
	resp, err := http.Get(raw + "x") // a broken signature
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}
