package storecopy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/blobstore"
	"github.com/parleychat/parley/storage/sqlstore"
	"github.com/parleychat/parley/storage/storecopy"
)

var (
	benchMessages = flag.Int("copy.messages", 20_000, "messages of BenchmarkCopy's source (the issue's figure: 1000000)")
	benchFiles    = flag.Int("copy.files", 200, "files of BenchmarkCopy's source (the issue's figure: 10000)")
)

// benchMessage is the i-th message of the benchmark's source.
func benchMessage(i int) messaging.Message {
	return messaging.Message{ID: fmt.Sprintf("msg_%09d", i), ConversationID: fmt.Sprintf("conv_%04d", i%1000),
		Contact:   messaging.Contact{ID: fmt.Sprintf("ctc_%03d", i%100)},
		Text:      fmt.Sprintf("message %d: a line of chat of about the length people write, give or take a few words", i),
		CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond)}
}

// benchContacts stores the senders of benchMessage.
func benchContacts(tb testing.TB, s *sqlstore.Store) {
	for i := range 100 {
		require.NoError(tb, s.Driver().PutContact(context.Background(), messaging.Contact{ID: fmt.Sprintf("ctc_%03d", i), Username: fmt.Sprintf("user%03d", i),
			CreatedAt: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}))
	}
}

// importAll stores n benchMessages with ImportMessages, in chunks of
// 10,000 (a transaction each).
func importAll(tb testing.TB, s *sqlstore.Store, n int) {
	const chunk = 10_000
	msgs := make([]messaging.Message, 0, chunk)
	for start := 0; start < n; start += chunk {
		msgs = msgs[:0]
		for i := start; i < min(n, start+chunk); i++ {
			msgs = append(msgs, benchMessage(i))
		}
		require.NoError(tb, s.Driver().(driver.MessageImporter).ImportMessages(context.Background(), msgs))
	}
}

// BenchmarkCopy copies a store of -copy.messages messages and -copy.files
// files from SQLite and a folder to PostgreSQL (SQLite when
// PARLEY_TEST_POSTGRES is not set) and another folder, and the same
// messages through the destination's own bulk import, ImportMessages.
// It reports both rates, their ratio, and the peak heap of the copy:
//
//	go test ./storage/storecopy -run '^$' -bench Copy -benchtime 1x -copy.messages 1000000 -copy.files 10000
func BenchmarkCopy(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	src, err := sqlstore.Open(ctx, filepath.Join(dir, "source.db"), nil)
	require.NoError(b, err)
	defer src.Close()
	require.NoError(b, src.Migrate(ctx))
	benchContacts(b, src)
	began := time.Now()
	importAll(b, src, *benchMessages)
	b.Logf("source: %d messages imported into SQLite in %s", *benchMessages, time.Since(began).Round(time.Millisecond))
	srcFiles := folder(b, filepath.Join(dir, "source-files"))
	body := bytes.Repeat([]byte("0123456789abcdef"), 512) // 8 KiB
	// The keys are the source's own: a copy refuses a row whose key is not.
	ins, err := src.Driver().(interface {
		InstallationID(context.Context) (string, error)
	}).InstallationID(ctx)
	require.NoError(b, err)
	for i := range *benchFiles {
		data := append([]byte(fmt.Sprintf("file %d\n", i)), body...)
		sum := sha256.Sum256(data)
		a := messaging.Attachment{ID: fmt.Sprintf("att_%06d", i), ConversationID: fmt.Sprintf("conv_%04d", i%1000), UploaderID: "ctc_000",
			Filename: "f.bin", FileType: "application/octet-stream", FileSize: int64(len(data)), SHA256: hex.EncodeToString(sum[:]),
			Key: attachments.KeyPrefix + ins + "/" + fmt.Sprintf("att_%06d", i), CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		require.NoError(b, srcFiles.Put(ctx, a.Key, a.FileType, bytes.NewReader(data)))
		require.NoError(b, src.Driver().CreateAttachment(ctx, a, nil))
	}

	engine := backendtest.SQL(b)[0]
	for _, e := range backendtest.SQL(b) {
		if e.Name == "postgres" {
			engine = e
		}
	}
	var copyRate, importRate, peakHeap float64
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		dst := engine.Open(b)
		dstFiles := folder(b, filepath.Join(dir, fmt.Sprintf("copy-files-%d", i)))
		runtime.GC()
		peak := watchHeap()
		b.StartTimer()
		rep, err := storecopy.Copy(ctx, dst, dstFiles, src, srcFiles, nil)
		b.StopTimer()
		peakHeap = float64(peak()) / (1 << 20)
		require.NoError(b, err)
		copyRate = float64(*benchMessages) / rep.RowsTook.Seconds()
		b.Logf("copy to %s: rows %s (%.0f messages/s), %d files %s, verified %s; peak heap %.1f MiB",
			engine.Name, rep.RowsTook.Round(time.Millisecond), copyRate, rep.Files, rep.FilesTook.Round(time.Millisecond),
			rep.VerifyTook.Round(time.Millisecond), peakHeap)

		imp := engine.Open(b)
		benchContacts(b, imp)
		began := time.Now()
		importAll(b, imp, *benchMessages)
		took := time.Since(began)
		importRate = float64(*benchMessages) / took.Seconds()
		b.Logf("ImportMessages into %s: %s (%.0f messages/s)", engine.Name, took.Round(time.Millisecond), importRate)
		b.StartTimer()
	}
	b.ReportMetric(copyRate, "copy-msgs/s")
	b.ReportMetric(importRate, "import-msgs/s")
	b.ReportMetric(copyRate/importRate, "copy/import")
	b.ReportMetric(peakHeap, "peak-heap-MiB")
}

// folder returns a BlobStore over a new folder, as the server opens it.
func folder(tb testing.TB, dir string) *blobstore.Store {
	require.NoError(tb, os.MkdirAll(dir, 0o755))
	u := (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir), RawQuery: "metadata=skip"}).String()
	s, err := blobstore.Open(context.Background(), u)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// watchHeap samples the heap in use until the returned function is
// called, which returns the most it saw.
func watchHeap() func() uint64 {
	var mu sync.Mutex
	var most uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			mu.Lock()
			most = max(most, m.HeapInuse)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return most
	}
}
