package attachments_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
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
		assert.LessOrEqual(t, read.Load(), int64(len("hello")+1), "bytes read of a 4 MiB object reserved as 5")
		assert.Empty(t, h.objects(t), "refused bytes are deleted")

		_, err = h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
		require.ErrorAs(t, err, &e)
		assert.Equal(t, "file", e.Param, "a retry finds nothing to read")
		assert.LessOrEqual(t, read.Load(), int64(len("hello")+1))
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
// Storage does (it checks no digest), and records what it was asked to
// sign.
type signingBlobs struct {
	*memstore.BlobStore
	mu  sync.Mutex
	req driver.UploadRequest
}

func (b *signingBlobs) SignUpload(_ context.Context, key string, req driver.UploadRequest) (driver.SignedUpload, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.req = req
	return driver.SignedUpload{URL: "https://bucket.example/" + key, Method: "PUT", Headers: map[string]string{"Content-Type": req.ContentType}}, nil
}

func (b *signingBlobs) ObjectSize(ctx context.Context, key string) (int64, error) {
	r, err := b.Open(ctx, key)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	return r.Seek(0, io.SeekEnd)
}

func (b *signingBlobs) ReadHead(ctx context.Context, key string, n int) ([]byte, error) {
	r, err := b.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(io.LimitReader(r, int64(n)))
}

// TestReserveSignsTheSize: the signed upload URL is asked for the
// reserved size, which a bucket that can bound the size of a PUT signs
// (GCS: x-goog-content-length-range).
func TestReserveSignsTheSize(t *testing.T) {
	blobs := &signingBlobs{BlobStore: memstore.NewBlobStore()}
	msgs := svctest.New(t, storetest.Storage(memstore.New().Driver().(fullStore)), blobs, nil)
	alice, err := msgs.SaveContact(context.Background(), messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	r, err := msgs.Files().Reserve(context.Background(), alice, attachments.NewUpload{Filename: "a.txt", FileSize: 1234, SHA256: hexSum("x")})
	require.NoError(t, err)
	require.NotEmpty(t, r.URL, "signed")
	blobs.mu.Lock()
	defer blobs.mu.Unlock()
	assert.Equal(t, int64(1234), blobs.req.Size)
}
