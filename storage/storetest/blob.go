package storetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// RunBlobConformanceTests runs the BlobStore contract (and Lister /
// URLSigner when implemented) against stores made by newBlobs. Keys are
// unique to each run, under attachments.KeyPrefix, and the suite deletes
// what it wrote, so newBlobs may return a store over a shared bucket.
func RunBlobConformanceTests(t *testing.T, newBlobs func(t *testing.T) attachments.BlobStore) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, b *blobHarness)
	}{
		{"put_open_read_back", testBlobRoundTrip},
		{"seek", testBlobSeek},
		{"empty_object", testBlobEmpty},
		{"large_object_in_small_reads", testBlobLarge},
		{"put_with_failing_reader_leaves_no_object", testBlobFailingReader},
		{"put_with_failing_reader_keeps_the_object_there", testBlobFailingReaderKeeps},
		{"put_with_cancelled_context_leaves_no_object", testBlobCancelled},
		{"put_cancelled_while_reading_leaves_no_object", testBlobCancelledMidway},
		{"delete", testBlobDelete},
		{"delete_missing_key", testBlobDeleteMissing},
		{"open_missing_key_is_not_found", testBlobOpenMissing},
		{"concurrent_puts_and_opens", testBlobConcurrent},
		{"list_by_prefix", testBlobList},
		{"list_stops_at_callback_error", testBlobListStops},
		{"signed_url", testBlobSignedURL},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBlobs(t)
			require.NotNil(t, b, "newBlobs returned nil")
			tc.run(t, &blobHarness{t: t, b: b, ctx: t.Context(), prefix: attachments.KeyPrefix + "storetest-" + ids.New("") + "/"})
		})
	}
}

// blobHarness holds a store and the keys written to it.
type blobHarness struct {
	t      *testing.T
	b      attachments.BlobStore
	ctx    context.Context
	prefix string
	once   sync.Once
	mu     sync.Mutex
	keys   []string
}

// key returns a key unique to this subtest, and deletes its object at the
// end of the test.
func (h *blobHarness) key(name string) string {
	h.once.Do(func() {
		h.t.Cleanup(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			for _, k := range h.keys {
				_ = h.b.Delete(context.WithoutCancel(context.Background()), k)
			}
		})
	})
	k := h.prefix + name
	h.mu.Lock()
	h.keys = append(h.keys, k)
	h.mu.Unlock()
	return k
}

// put stores data under key, which must succeed.
func (h *blobHarness) put(key string, data []byte) {
	h.t.Helper()
	require.NoError(h.t, h.b.Put(h.ctx, key, "application/octet-stream", bytes.NewReader(data)), "Put %s", key)
}

// read returns the whole object, which must exist.
func (h *blobHarness) read(key string) []byte {
	h.t.Helper()
	r, err := h.b.Open(h.ctx, key)
	require.NoError(h.t, err, "Open %s", key)
	data, err := io.ReadAll(r)
	require.NoError(h.t, err, "read %s", key)
	require.NoError(h.t, r.Close(), "Close %s", key)
	return data
}

// assertAbsent checks that there is no object under key.
func (h *blobHarness) assertAbsent(key string, msg string) {
	h.t.Helper()
	r, err := h.b.Open(h.ctx, key)
	if err == nil {
		r.Close()
	}
	assert.ErrorIs(h.t, err, messaging.ErrNotFound, msg)
	if l, ok := h.b.(driver.Lister); ok {
		var keys []string
		require.NoError(h.t, l.List(h.ctx, h.prefix, func(o driver.Object) error {
			keys = append(keys, o.Key)
			return nil
		}))
		assert.NotContains(h.t, keys, key, "List must not see it: %s", msg)
	}
}

func testBlobRoundTrip(t *testing.T, h *blobHarness) {
	k := h.key("hello.txt")
	require.NoError(t, h.b.Put(h.ctx, k, "text/plain; charset=utf-8", strings.NewReader("hello, world\n")))
	assert.Equal(t, []byte("hello, world\n"), h.read(k))
	assert.Equal(t, []byte("hello, world\n"), h.read(k), "an object can be read again")

	other := h.key("nested/dir/other.bin")
	h.put(other, []byte{0, 1, 2, 255})
	assert.Equal(t, []byte{0, 1, 2, 255}, h.read(other), "keys with slashes; binary bytes")
	assert.Equal(t, []byte("hello, world\n"), h.read(k), "objects are independent")
}

func testBlobSeek(t *testing.T, h *blobHarness) {
	k := h.key("seek.txt")
	h.put(k, []byte("0123456789abcdef"))
	r, err := h.b.Open(h.ctx, k)
	require.NoError(t, err)
	defer r.Close()

	readN := func(n int) string {
		t.Helper()
		buf := make([]byte, n)
		_, err := io.ReadFull(r, buf)
		require.NoError(t, err)
		return string(buf)
	}
	pos, err := r.Seek(10, io.SeekStart)
	require.NoError(t, err)
	assert.Equal(t, int64(10), pos)
	assert.Equal(t, "abc", readN(3))

	pos, err = r.Seek(-4, io.SeekEnd)
	require.NoError(t, err)
	assert.Equal(t, int64(12), pos)
	assert.Equal(t, "cdef", readN(4))

	pos, err = r.Seek(-10, io.SeekCurrent)
	require.NoError(t, err)
	assert.Equal(t, int64(6), pos)
	assert.Equal(t, "6789", readN(4))

	end, err := r.Seek(0, io.SeekEnd)
	require.NoError(t, err)
	assert.Equal(t, int64(16), end, "seeking to the end gives the size")
	_, err = r.Seek(0, io.SeekStart)
	require.NoError(t, err)
	all, err := io.ReadAll(r)
	require.NoError(t, err)
	assert.Equal(t, "0123456789abcdef", string(all))
}

func testBlobEmpty(t *testing.T, h *blobHarness) {
	k := h.key("empty")
	h.put(k, nil)
	assert.Empty(t, h.read(k))
}

// chunkReader returns its data n bytes at a time.
type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.data)
	c.data = c.data[n:]
	return n, nil
}

func testBlobLarge(t *testing.T, h *blobHarness) {
	data := make([]byte, 3<<20+17)
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	k := h.key("large.bin")
	require.NoError(t, h.b.Put(h.ctx, k, "application/octet-stream", &chunkReader{data: data, n: 1000}))
	got := h.read(k)
	require.Equal(t, len(data), len(got), "size")
	assert.True(t, bytes.Equal(data, got), "bytes differ")
}

var errBoom = errors.New("storetest: reader failed")

func testBlobFailingReader(t *testing.T, h *blobHarness) {
	k := h.key("failing")
	r := io.MultiReader(strings.NewReader(strings.Repeat("partial ", 10000)), iotest.ErrReader(errBoom))
	err := h.b.Put(h.ctx, k, "text/plain", r)
	assert.Error(t, err, "Put must fail when the reader fails")
	h.assertAbsent(k, "a Put whose reader failed leaves no object")

	k2 := h.key("failing-at-once")
	err = h.b.Put(h.ctx, k2, "text/plain", iotest.ErrReader(errBoom))
	assert.Error(t, err, "Put must fail when the reader fails at once")
	h.assertAbsent(k2, "a Put whose reader failed at once leaves no object")
}

// testBlobFailingReaderKeeps: a Put that fails leaves the object that
// was under its key as it was (the Service relies on it to refuse bytes
// sent for a completed upload as they end).
func testBlobFailingReaderKeeps(t *testing.T, h *blobHarness) {
	k := h.key("kept")
	h.put(k, []byte("the first bytes"))
	r := io.MultiReader(strings.NewReader(strings.Repeat("partial ", 10000)), iotest.ErrReader(errBoom))
	assert.Error(t, h.b.Put(h.ctx, k, "text/plain", r), "Put must fail when the reader fails")
	assert.Equal(t, "the first bytes", string(h.read(k)), "the object before the failed Put")
}

func testBlobCancelled(t *testing.T, h *blobHarness) {
	k := h.key("cancelled")
	ctx, cancel := context.WithCancel(h.ctx)
	cancel()
	err := h.b.Put(ctx, k, "text/plain", strings.NewReader("never"))
	assert.Error(t, err, "Put with a done context must fail")
	h.assertAbsent(k, "a Put with a done context leaves no object")
}

// cancellingReader cancels its context after the first read, then goes on
// giving data.
type cancellingReader struct {
	r      io.Reader
	cancel context.CancelFunc
	reads  int
}

func (c *cancellingReader) Read(p []byte) (int, error) {
	c.reads++
	if c.reads == 2 {
		c.cancel()
		time.Sleep(10 * time.Millisecond) // let a store that watches ctx see it
	}
	return c.r.Read(p)
}

func testBlobCancelledMidway(t *testing.T, h *blobHarness) {
	k := h.key("cancelled-midway")
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	r := &cancellingReader{r: &chunkReader{data: bytes.Repeat([]byte("x"), 256<<10), n: 4096}, cancel: cancel}
	err := h.b.Put(ctx, k, "text/plain", r)
	assert.Error(t, err, "Put must fail when ctx is done before io.EOF")
	h.assertAbsent(k, "a Put cancelled while reading leaves no object")
}

func testBlobDelete(t *testing.T, h *blobHarness) {
	k, keep := h.key("doomed"), h.key("kept")
	h.put(k, []byte("bye"))
	h.put(keep, []byte("stay"))
	require.NoError(t, h.b.Delete(h.ctx, k))
	h.assertAbsent(k, "a deleted object is gone")
	assert.Equal(t, []byte("stay"), h.read(keep), "other objects stay")
}

func testBlobDeleteMissing(t *testing.T, h *blobHarness) {
	err := h.b.Delete(h.ctx, h.key("never-written"))
	if err != nil {
		assert.ErrorIs(t, err, messaging.ErrNotFound, "deleting a missing key returns nil or ErrNotFound")
	}
}

func testBlobOpenMissing(t *testing.T, h *blobHarness) {
	h.put(h.key("present"), []byte("x"))
	_, err := h.b.Open(h.ctx, h.key("absent"))
	assert.ErrorIs(t, err, messaging.ErrNotFound)
}

func testBlobConcurrent(t *testing.T, h *blobHarness) {
	const n = 10
	keys := make([]string, n)
	for i := range keys {
		keys[i] = h.key("concurrent/" + itoa(i))
	}
	errs := parallel(n, func(i int) error {
		data := bytes.Repeat([]byte{byte('a' + i)}, 10000+i)
		if err := h.b.Put(h.ctx, keys[i], "text/plain", bytes.NewReader(data)); err != nil {
			return err
		}
		r, err := h.b.Open(h.ctx, keys[i])
		if err != nil {
			return err
		}
		defer r.Close()
		got, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, data) {
			return errors.New("read back other bytes than were put")
		}
		return nil
	})
	for i, err := range errs {
		assert.NoError(t, err, "goroutine %d", i)
	}
}

func testBlobList(t *testing.T, h *blobHarness) {
	l, ok := h.b.(driver.Lister)
	if !ok {
		t.Skip("the store is not an driver.Lister")
	}
	in1, in2, out := h.key("list/a/1"), h.key("list/a/2"), h.key("list/b/3")
	before := time.Now()
	for _, k := range []string{in1, in2, out} {
		h.put(k, []byte(k))
	}
	seen := map[string]time.Time{}
	require.NoError(t, l.List(h.ctx, h.prefix+"list/a/", func(o driver.Object) error {
		seen[o.Key] = o.ModTime
		return nil
	}))
	assert.Len(t, seen, 2)
	for _, k := range []string{in1, in2} {
		mt, ok := seen[k]
		if assert.True(t, ok, "List sees %s", k) {
			assert.WithinDuration(t, before, mt, time.Hour, "ModTime of %s is about now (the store's clock may be skewed)", k)
		}
	}
	assert.NotContains(t, seen, out, "List sees only keys with the prefix")

	var all []string
	require.NoError(t, l.List(h.ctx, h.prefix, func(o driver.Object) error {
		all = append(all, o.Key)
		return nil
	}))
	assert.ElementsMatch(t, []string{in1, in2, out}, all)

	require.NoError(t, h.b.Delete(h.ctx, in1))
	all = nil
	require.NoError(t, l.List(h.ctx, h.prefix, func(o driver.Object) error {
		all = append(all, o.Key)
		return nil
	}))
	assert.ElementsMatch(t, []string{in2, out}, all, "a deleted object is not listed")
}

func testBlobListStops(t *testing.T, h *blobHarness) {
	l, ok := h.b.(driver.Lister)
	if !ok {
		t.Skip("the store is not an driver.Lister")
	}
	for i := range 3 {
		h.put(h.key("stop/"+itoa(i)), []byte("x"))
	}
	calls := 0
	err := l.List(h.ctx, h.prefix, func(driver.Object) error {
		calls++
		return errBoom
	})
	assert.ErrorIs(t, err, errBoom, "List returns the callback's error")
	assert.Equal(t, 1, calls, "List stops at the first error")
}

func testBlobSignedURL(t *testing.T, h *blobHarness) {
	s, ok := h.b.(driver.URLSigner)
	if !ok {
		t.Skip("the store is not an driver.URLSigner")
	}
	k := h.key("signed.txt")
	require.NoError(t, h.b.Put(h.ctx, k, "text/plain", strings.NewReader("signed")))
	other := h.key("other.txt")
	h.put(other, []byte("other"))
	u, err := s.SignedURL(h.ctx, k, "report ✓.txt", "text/plain", 5*time.Minute)
	if errors.Is(err, messaging.ErrUnimplemented) {
		t.Skip("the store's SignedURL is unimplemented here: ", err)
	}
	require.NoError(t, err)
	parsed, err := url.Parse(u)
	require.NoError(t, err, "SignedURL returns a URL")
	require.True(t, parsed.IsAbs(), "SignedURL returns an absolute URL: %q", u)
	if parsed.Scheme != "http" && parsed.Scheme != "https" {
		return
	}

	// The URL serves the object, with the type and name asked for where
	// the store can set them.
	res, err := http.Get(u)
	if err != nil {
		t.Skipf("the signed URL cannot be fetched from here (%v); its server checks it", err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "GET %s: %s", u, body)
	assert.Equal(t, "signed", string(body))
	checkDisposition(t, res.Header, "text/plain", "report ✓.txt")

	// A file a browser could run is never served inline from the bucket's
	// origin: a download, or served as another type.
	page := h.key("page.html")
	require.NoError(t, h.b.Put(h.ctx, page, "text/html", strings.NewReader("<script>alert(1)</script>")))
	pu, err := s.SignedURL(h.ctx, page, "page.html", "text/html", 5*time.Minute)
	require.NoError(t, err)
	res, err = http.Get(pu)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		disp, _, _ := strings.Cut(res.Header.Get("Content-Disposition"), ";")
		assert.Equal(t, "attachment", strings.TrimSpace(disp), "HTML served inline from the bucket")
	}
	checkDisposition(t, res.Header, "text/html", "page.html")

	refused := func(what, u string) {
		t.Helper()
		res, err := http.Get(u)
		require.NoError(t, err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		assert.GreaterOrEqual(t, res.StatusCode, 400, "a %s URL is served: %s", what, body)
		assert.NotEqual(t, "signed", string(body))
		assert.NotEqual(t, "other", string(body))
	}
	// Another object under the same signature.
	refused("re-pointed", strings.Replace(u, url.PathEscape(k[strings.LastIndexByte(k, '/')+1:]), url.PathEscape(other[strings.LastIndexByte(other, '/')+1:]), 1))
	// A changed signature.
	q := parsed.Query()
	for name, vs := range q {
		if n := strings.ToLower(name); strings.Contains(n, "signature") || n == "sig" {
			v := []byte(vs[0])
			v[len(v)/2] ^= 1
			if v[len(v)/2] == '%' || v[len(v)/2] == '&' {
				v[len(v)/2] = 'A'
			}
			q.Set(name, string(v))
		}
	}
	tampered := *parsed
	tampered.RawQuery = q.Encode()
	refused("tampered", tampered.String())
	// An expired one.
	short, err := s.SignedURL(h.ctx, k, "report.txt", "text/plain", time.Second)
	require.NoError(t, err)
	time.Sleep(2500 * time.Millisecond)
	refused("expired", short)
}

// checkDisposition checks a served Content-Disposition, if any, against
// attachments.ContentDisposition: the same type (inline or attachment),
// and the same header when it names the file (a disposition stored with the
// object names none).
func checkDisposition(t *testing.T, h http.Header, contentType, filename string) {
	t.Helper()
	cd := h.Get("Content-Disposition")
	if cd == "" {
		return
	}
	want := attachments.ContentDisposition(contentType, filename)
	typ, _, _ := strings.Cut(cd, ";")
	wantTyp, _, _ := strings.Cut(want, ";")
	assert.Equal(t, wantTyp, strings.TrimSpace(typ), "Content-Disposition %q", cd)
	if strings.Contains(cd, "filename") {
		assert.Equal(t, want, cd)
	}
}
