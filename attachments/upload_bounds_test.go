package attachments_test

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/blobstore"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

// countingObject is an object reader that counts the bytes read through
// it.
type countingObject struct {
	io.ReadSeekCloser
	n *atomic.Int64
}

func (c countingObject) Read(p []byte) (int, error) {
	n, err := c.ReadSeekCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// countReads makes the harness's blob store count the bytes read from the
// objects it opens.
func countReads(h *harness) *atomic.Int64 {
	var n atomic.Int64
	h.blobs.setOpen(func(ctx context.Context, key string) (io.ReadSeekCloser, error) {
		r, err := h.blobs.next.Open(ctx, key)
		if err != nil {
			return nil, err
		}
		return countingObject{r, &n}, nil
	})
	return &n
}

// TestDirectUploadCompleteReadsAtMostTheReservation: a client who
// reserved a few bytes and stored far more under the key (a signed URL of
// a bucket that checks no size: Azure) costs Complete no more than the
// reservation: the object is refused (file_size) and deleted before its
// bytes are read, and a retry finds nothing.
func TestDirectUploadCompleteReadsAtMostTheReservation(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		r := reserve(t, h, "a.txt", "text/plain", "hello")
		big := strings.Repeat("x", 4<<20)
		require.NoError(t, h.blobs.next.Put(ctx, r.Key, "text/plain", strings.NewReader(big)))
		read := countReads(h)

		_, err := h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
		var e *messaging.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, "file_size", e.Param)
		assert.ErrorIs(t, err, messaging.ErrInvalid)
		assert.Zero(t, read.Load(), "bytes read of a 4 MiB object reserved as 5")
		assert.Empty(t, h.objects(t), "refused bytes are deleted")

		_, err = h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
		require.ErrorAs(t, err, &e)
		assert.Equal(t, "file", e.Param, "a retry finds nothing to read")
		assert.Zero(t, read.Load())
	})
}

// lyingSize is an object reader whose Seek says the object has size
// bytes, whatever it has.
type lyingSize struct {
	io.ReadSeekCloser
	size int64
}

func (l lyingSize) Seek(offset int64, whence int) (int64, error) {
	if whence == io.SeekEnd {
		return l.size + offset, nil
	}
	return l.ReadSeekCloser.Seek(offset, whence)
}

// TestDirectUploadCompleteStopsAfterTheReservation: even where the store
// misreports the object's size, Complete reads no more than one byte past
// the reservation, and refuses what it found.
func TestDirectUploadCompleteStopsAfterTheReservation(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		r := reserve(t, h, "a.txt", "text/plain", "hello")
		require.NoError(t, h.blobs.next.Put(ctx, r.Key, "text/plain", bytes.NewReader(append([]byte("hello"), make([]byte, 1<<20)...))))
		var read atomic.Int64
		h.blobs.setOpen(func(ctx context.Context, key string) (io.ReadSeekCloser, error) {
			o, err := h.blobs.next.Open(ctx, key)
			if err != nil {
				return nil, err
			}
			return lyingSize{countingObject{o, &read}, 5}, nil
		})

		_, err := h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
		var e *messaging.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, "file_size", e.Param)
		assert.LessOrEqual(t, read.Load(), int64(len("hello")+1))
		assert.Empty(t, h.objects(t), "refused bytes are deleted")
	})
}

// signingBlobs is a memory bucket that signs upload URLs as Google Cloud
// Storage and Azure do (they check no digest), records what it was asked
// to sign, and keeps the headers a client stored each object with.
type signingBlobs struct {
	*memstore.BlobStore
	mu      sync.Mutex
	req     driver.UploadRequest
	headers map[string][2]string // by key: the stored type and disposition
}

func newSigningBlobs() *signingBlobs {
	return &signingBlobs{BlobStore: memstore.NewBlobStore(), headers: map[string][2]string{}}
}

func (b *signingBlobs) SignUpload(_ context.Context, key string, req driver.UploadRequest) (driver.SignedUpload, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.req = req
	return driver.SignedUpload{URL: "https://bucket.example/" + key, Method: "PUT", Headers: map[string]string{
		"Content-Type": req.ContentType, "Content-Disposition": attachments.ContentDisposition(req.ContentType, ""),
	}}, nil
}

// clientPut stores data under key as a client's PUT to a signed URL does,
// with the type and disposition it sent.
func (b *signingBlobs) clientPut(tb testing.TB, key, ctype, disposition, data string) {
	tb.Helper()
	require.NoError(tb, b.Put(context.Background(), key, ctype, strings.NewReader(data)))
	b.mu.Lock()
	defer b.mu.Unlock()
	b.headers[key] = [2]string{ctype, disposition}
}

func (b *signingBlobs) Attributes(ctx context.Context, key string) (driver.ObjectAttributes, error) {
	r, err := b.Open(ctx, key)
	if err != nil {
		return driver.ObjectAttributes{}, err
	}
	defer r.Close()
	size, err := r.Seek(0, io.SeekEnd)
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.headers[key]
	return driver.ObjectAttributes{Size: size, ContentType: h[0], ContentDisposition: h[1]}, err
}

func (b *signingBlobs) ReadHead(ctx context.Context, key string, n int) ([]byte, error) {
	r, err := b.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(io.LimitReader(r, int64(n)))
}

// signingService returns a Service over blobs, and its caller alice.
func signingService(t *testing.T, blobs *signingBlobs) (*attachments.Service, messaging.Contact) {
	t.Helper()
	msgs := svctest.New(t, storetest.Storage(memstore.New().Driver().(fullStore)), blobs, nil)
	alice, err := msgs.SaveContact(context.Background(), messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	return msgs.Files(), alice
}

// TestReserveSignsTheSize: the signed upload URL is asked for the
// reserved size, which a bucket that can bound the size of a PUT signs
// (GCS: x-goog-content-length-range).
func TestReserveSignsTheSize(t *testing.T) {
	blobs := newSigningBlobs()
	svc, alice := signingService(t, blobs)
	r, err := svc.Reserve(context.Background(), alice, attachments.NewUpload{Filename: "a.txt", FileSize: 1234, SHA256: hexSum("x")})
	require.NoError(t, err)
	require.NotEmpty(t, r.URL, "signed")
	blobs.mu.Lock()
	defer blobs.mu.Unlock()
	assert.Equal(t, int64(1234), blobs.req.Size)
}

// TestDirectUploadCompleteChecksStoredHeaders: where the signature of an
// upload URL does not cover the headers (Azure's SAS), the client chooses
// the type and the disposition the object is stored with, which the
// bucket's signed download URLs serve: Complete refuses (and deletes) an
// object stored with other headers than upload_headers, so that the
// bucket never serves a file inline that the API would not (HTML sent as
// text/plain, stored as text/html without a disposition).
func TestDirectUploadCompleteChecksStoredHeaders(t *testing.T) {
	ctx := context.Background()
	page := "<html><script>alert(1)</script></html>"
	for _, tc := range []struct {
		name, declared, ctype, disposition string
		ok                                 bool
	}{
		{"as_signed", "text/plain", "text/plain", "inline", true},
		{"html_inline", "text/plain", "text/html", "", false},
		{"html_as_declared", "text/html", "text/html", "inline", false},
		{"no_disposition", "text/html", "text/html", "", false},
		{"other_type", "text/plain", "text/plain; charset=utf-8", "inline", false},
		{"declared_html", "text/html", "text/html", "attachment", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blobs := newSigningBlobs()
			svc, alice := signingService(t, blobs)
			r, err := svc.Reserve(ctx, alice, attachments.NewUpload{Filename: "page.txt", ContentType: tc.declared, FileSize: int64(len(page)), SHA256: hexSum(page)})
			require.NoError(t, err)
			require.NotEmpty(t, r.URL, "signed")
			assert.Equal(t, attachments.ContentDisposition(tc.declared, ""), r.Headers["Content-Disposition"])
			blobs.clientPut(t, r.Key, tc.ctype, tc.disposition, page)

			_, err = svc.Complete(ctx, alice, r.ID, driver.Idempotency{})
			if tc.ok {
				require.NoError(t, err)
				return
			}
			var e *messaging.Error
			require.ErrorAs(t, err, &e)
			assert.ErrorIs(t, err, messaging.ErrInvalid)
			assert.Equal(t, "upload_headers", e.Param)
			_, err = blobs.Open(ctx, r.Key)
			assert.ErrorIs(t, err, messaging.ErrNotFound, "the object is deleted")
		})
	}
}

// TestDirectUploadThroughHostStoresTheHeaders: on a bucket of blobstore
// that cannot sign (memory, a folder), the bytes come through PutContent,
// which stores the object with the headers Complete checks; a folder that
// keeps no headers (the example server's) completes too, since no client
// could choose them there.
func TestDirectUploadThroughHostStoresTheHeaders(t *testing.T) {
	ctx := context.Background()
	for name, u := range map[string]string{
		"mem":  "mem://",
		"file": "file://" + filepath.ToSlash(t.TempDir()) + "?no_tmp_dir=true",
		// The example server's folder: no sidecar of attributes, so the
		// folder keeps neither the type nor the disposition.
		"file_no_metadata": "file://" + filepath.ToSlash(t.TempDir()) + "?metadata=skip&no_tmp_dir=true",
	} {
		t.Run(name, func(t *testing.T) {
			blobs, err := blobstore.Open(ctx, u)
			require.NoError(t, err)
			t.Cleanup(func() { _ = blobs.Close() })
			msgs := svctest.New(t, storetest.Storage(memstore.New().Driver().(fullStore)), blobs, nil)
			alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
			require.NoError(t, err)
			for _, declared := range []string{"", "text/html", "text/plain; charset=utf-8"} {
				r, err := msgs.Files().Reserve(ctx, alice, attachments.NewUpload{Filename: "a.txt", ContentType: declared, FileSize: 5, SHA256: hexSum("hello")})
				require.NoError(t, err)
				require.Empty(t, r.URL, "through the host")
				_, err = msgs.Files().PutContent(ctx, alice, r.ID, strings.NewReader("hello"))
				require.NoError(t, err)
				_, err = msgs.Files().Complete(ctx, alice, r.ID, driver.Idempotency{})
				require.NoError(t, err, declared)
			}
		})
	}
}

// TestDirectUploadLeftoverReservation: a reservation left beside the
// attachment it made (the removal of a completed reservation could fail
// before the two went in one transaction) is completed again as any
// completed upload is: ErrNotFound, never a conflict, and the file, the
// attachment's, is kept even when its stored headers are not the signed
// ones (a GCS upload signed before the disposition was).
func TestDirectUploadLeftoverReservation(t *testing.T) {
	ctx := context.Background()
	page := "hello"
	for name, disposition := range map[string]string{"as_signed": "inline", "other_headers": ""} {
		t.Run(name, func(t *testing.T) {
			blobs := newSigningBlobs()
			st := memstore.New().Driver().(fullStore)
			msgs := svctest.New(t, storetest.Storage(st), blobs, nil)
			alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
			require.NoError(t, err)
			svc := msgs.Files()
			r, err := svc.Reserve(ctx, alice, attachments.NewUpload{Filename: "a.txt", ContentType: "text/plain", FileSize: int64(len(page)), SHA256: hexSum(page)})
			require.NoError(t, err)
			require.NotEmpty(t, r.URL, "signed")
			blobs.clientPut(t, r.Key, "text/plain", disposition, page)
			require.NoError(t, st.CreateAttachment(ctx, messaging.Attachment{
				ID: r.AttachmentID, UploaderID: alice.ID, Filename: "a.txt", FileType: "text/plain",
				FileSize: int64(len(page)), SHA256: hexSum(page), Key: r.Key, CreatedAt: time.Now(),
			}, nil))

			_, err = svc.Complete(ctx, alice, r.ID, driver.Idempotency{})
			assert.ErrorIs(t, err, messaging.ErrNotFound)
			assert.NotErrorIs(t, err, messaging.ErrConflict)
			obj, err := blobs.Open(ctx, r.Key)
			require.NoError(t, err, "the attachment's file is kept")
			_ = obj.Close()
			_, _, err = svc.Open(ctx, alice, r.AttachmentID)
			assert.NoError(t, err)
		})
	}
}
