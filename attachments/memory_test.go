package attachments_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// patternReader yields n bytes of a repeating pattern without allocating.
type patternReader struct {
	block []byte
	off   int
	n     int64
}

func newPatternReader(n int64) *patternReader {
	block := make([]byte, 64<<10+7) // not a power of two, so reads straddle blocks
	for i := range block {
		block[i] = byte(i*31 + i>>8)
	}
	return &patternReader{block: block, n: n}
}

func (r *patternReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	total := 0
	for len(p) > 0 {
		c := copy(p, r.block[r.off:])
		r.off = (r.off + c) % len(r.block)
		p = p[c:]
		total += c
	}
	r.n -= int64(total)
	return total, nil
}

// discardBlobs is a BlobStore that reads what it is given and keeps
// nothing; while it reads, it samples the live heap.
type discardBlobs struct {
	every    int64  // sample once per this many bytes
	baseline uint64 // HeapInuse after GC before the upload
	peak     uint64 // the most HeapInuse above baseline seen, after GC
	n        int64
}

func (d *discardBlobs) sample() {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapInuse > d.baseline && ms.HeapInuse-d.baseline > d.peak {
		d.peak = ms.HeapInuse - d.baseline
	}
}

func (d *discardBlobs) Put(ctx context.Context, key, contentType string, r io.Reader) error {
	buf := make([]byte, 32<<10)
	next := d.every
	for {
		n, err := r.Read(buf)
		d.n += int64(n)
		if d.n >= next {
			d.sample()
			next += d.every
		}
		if err == io.EOF {
			d.sample()
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (d *discardBlobs) Open(context.Context, string) (io.ReadSeekCloser, error) {
	return nil, messaging.ErrNotFound
}

func (d *discardBlobs) Delete(context.Context, string) error { return nil }

// TestUploadStreams uploads 64 MiB through the Service and checks that the
// live heap never grows by more than a small fraction of that: Upload
// streams the body to the store, never buffering it whole.
func TestUploadStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("uploads 64 MiB")
	}
	const size = 64 << 20
	want := sha256.New()
	_, err := io.Copy(want, newPatternReader(size))
	require.NoError(t, err)

	store := memstore.New()
	blobs := &discardBlobs{every: 8 << 20}
	svc := svctest.New(t, store, blobs, &messaging.Options{Files: &attachments.Options{MaxUploadBytes: 2 * size}}).Files()
	body := newPatternReader(size)

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	blobs.baseline = ms.HeapInuse

	a, err := svc.Upload(context.Background(), messaging.Contact{ID: "ctc_uploader"}, attachments.Upload{Filename: "big.bin", Body: body})
	require.NoError(t, err)
	assert.Equal(t, int64(size), a.FileSize)
	assert.Equal(t, int64(size), blobs.n, "the store read every byte")
	assert.Equal(t, hex.EncodeToString(want.Sum(nil)), a.SHA256)
	t.Logf("live heap grew by at most %d KiB while uploading %d MiB", blobs.peak>>10, size>>20)
	assert.Less(t, blobs.peak, uint64(16<<20), "the live heap grew by %d bytes during a %d-byte upload", blobs.peak, size)
}
