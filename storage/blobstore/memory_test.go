package blobstore_test

import (
	"context"
	"io"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// samplingReader yields n bytes of a pattern and samples the live heap
// (after GC) every `every` bytes.
type samplingReader struct {
	block       []byte
	n, read     int64
	every, next int64
	baseline    uint64
	peak        uint64
}

func newSamplingReader(n, every int64) *samplingReader {
	block := make([]byte, 32<<10)
	for i := range block {
		block[i] = byte(i * 7)
	}
	r := &samplingReader{block: block, n: n, every: every, next: every}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.baseline = ms.HeapInuse
	return r
}

func (r *samplingReader) Read(p []byte) (int, error) {
	if r.read >= r.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.n-r.read, int64(len(r.block)))]
	c := copy(p, r.block)
	r.read += int64(c)
	if r.read >= r.next {
		r.next += r.every
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > r.baseline {
			r.peak = max(r.peak, ms.HeapInuse-r.baseline)
		}
	}
	return c, nil
}

// TestPutStreams: Put holds a bounded part of the object in memory,
// whatever its size (memblob, which keeps objects in memory, aside). On S3
// the AWS transfer manager reads the first 16 MiB whole and then holds up
// to three 5 MiB parts; elsewhere only a copy buffer.
func TestPutStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 96 MiB")
	}
	const size = 96 << 20
	limit := map[string]uint64{"s3": 40 << 20}
	for _, d := range drivers(t) {
		if d.name == "mem" {
			continue
		}
		t.Run(d.name, func(t *testing.T) {
			s := d.open(t)
			r := newSamplingReader(size, 4<<20)
			require.NoError(t, s.Put(context.Background(), "attachments/big", "application/octet-stream", r))
			t.Logf("live heap grew by at most %d KiB while writing %d MiB", r.peak>>10, size>>20)
			most, ok := limit[d.name]
			if !ok {
				most = 8 << 20
			}
			assert.Less(t, r.peak, most, "Put holds too much of the object in memory")
			rc, err := s.Open(context.Background(), "attachments/big")
			require.NoError(t, err)
			n, err := io.Copy(io.Discard, rc)
			require.NoError(t, err)
			require.NoError(t, rc.Close())
			assert.Equal(t, int64(size), n)
		})
	}
}
