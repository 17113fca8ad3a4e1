package httpadapter_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
)

// EnvBenchBig makes BenchmarkUploadLoopback upload 1 GiB instead of 8 MiB.
const envBenchBig = "PARLEY_BENCH_BIG"

// BenchmarkUploadLoopback streams one large file through the real HTTP
// stack over loopback TCP (an httptest.Server over SQLite and a file://
// bucket on disk), from a generator on the client side: 8 MiB, or 1 GiB
// when PARLEY_BENCH_BIG=1. It reports the throughput and peak-heap-MiB, the
// highest Go heap (objects, client and server together, above the heap
// before the upload) seen while sampling every millisecond. For the
// server's resident memory as the OS sees it, in a process of its own, use
// tools/uploadbench.
func BenchmarkUploadLoopback(b *testing.B) {
	size := int64(8 << 20)
	if os.Getenv(envBenchBig) == "1" {
		size = 1 << 30
	}
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	store := backendtest.SQL(b)[0].Open(b) // SQLite
	msgs := svctest.New(b, store, fileBucket(b), &messaging.Options{Logger: quiet, Files: &attachments.Options{MaxUploadBytes: size, Logger: quiet}})
	files := msgs.Files()
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(b, err)
	api, err := httpadapter.New(msgs, &httpadapter.Options{
		Authenticator: httpadapter.StaticTokens(map[string]messaging.Contact{benchToken: alice}),
		Logger:        quiet,
	})
	require.NoError(b, err)
	srv := httptest.NewServer(api)
	b.Cleanup(srv.Close)

	var frame bytes.Buffer
	mw := multipart.NewWriter(&frame)
	_, err = mw.CreateFormFile("file", "big.bin")
	require.NoError(b, err)
	head := bytes.Clone(frame.Bytes())
	frame.Reset()
	require.NoError(b, mw.Close())
	tail := bytes.Clone(frame.Bytes())
	block := make([]byte, 1<<20)
	_, _ = rand.Read(block)

	var peak uint64
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		body := io.MultiReader(bytes.NewReader(head), &blockReader{block: block, n: size}, bytes.NewReader(tail))
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/attachments", body)
		require.NoError(b, err)
		req.ContentLength = int64(len(head)) + size + int64(len(tail))
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", "Bearer "+benchToken)

		stop := sampleHeap(&peak)
		res, err := srv.Client().Do(req)
		stop()
		require.NoError(b, err)
		answer, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(b, http.StatusCreated, res.StatusCode, "%s", answer)

		b.StopTimer()
		var got struct{ ID string }
		require.NoError(b, json.Unmarshal(answer, &got))
		require.NoError(b, files.Delete(ctx, alice, got.ID))
		b.StartTimer()
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

// sampleHeap records in *peak the highest heap above the current one until
// stop is called.
func sampleHeap(peak *uint64) (stop func()) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > base && v-base > *peak {
				*peak = v - base
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// blockReader yields n bytes, cycling through block.
type blockReader struct {
	block []byte
	n     int64
	off   int
}

func (g *blockReader) Read(p []byte) (int, error) {
	if g.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > g.n {
		p = p[:g.n]
	}
	k := 0
	for k < len(p) {
		c := copy(p[k:], g.block[g.off:])
		k += c
		g.off = (g.off + c) % len(g.block)
	}
	g.n -= int64(k)
	return k, nil
}
