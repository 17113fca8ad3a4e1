package httpadapter_test

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/storetest"
)

// BenchmarkRetries measures what an Idempotency-Key costs a send: the same
// POST /v1/messages without a key (Unkeyed), with a new key each time
// (Keyed: the key is claimed, and its record completed in the message's
// transaction), and retried with a key already answered (Replayed: the
// answer comes from the record, nothing is written). Compare Keyed with
// Unkeyed on each backend, or read KeyedVsUnkeyed, which sends one of each
// in turn and reports keyed-x, the throughput of keyed sends as a fraction
// of unkeyed ones (BENCHMARKS.md has the figures):
//
//	go test ./httpadapter -run '^$' -bench 'Retries/(sqlite|postgres)' -count 5
func BenchmarkRetries(b *testing.B) {
	for _, be := range benchBackends(b) {
		b.Run(be.name, func(b *testing.B) {
			store, blobs := be.new(b)
			quiet := slog.New(slog.DiscardHandler)
			msgs := svctest.New(b, storetest.Storage(store), blobs, &messaging.Options{Logger: quiet, Files: &attachments.Options{Logger: quiet}})
			alice, err := msgs.SaveContact(context.Background(), messaging.Contact{Username: "alice", PhoneNumber: "+15550100"})
			require.NoError(b, err)
			h, err := httpadapter.New(msgs, &httpadapter.Options{
				Authenticator: httpadapter.StaticTokens(map[string]messaging.Contact{benchToken: alice}),
				Logger:        quiet,
			})
			require.NoError(b, err)
			send := func() *benchRequest {
				return newBenchRequest("POST", "/v1/messages", "application/x-www-form-urlencoded",
					[]byte("conversation_id=bench-retries&message=hello+world"), http.StatusCreated)
			}

			b.Run("Unkeyed", func(b *testing.B) {
				send().run(b, h)
			})
			b.Run("Keyed", func(b *testing.B) {
				br := send()
				w := &benchWriter{h: http.Header{}}
				prefix := "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
				n := 0
				b.ReportAllocs()
				for b.Loop() {
					n++
					br.req.Header.Set("Idempotency-Key", prefix+strconv.Itoa(n))
					br.serve(b, h, w)
				}
			})
			// Both at once, one of each in turn, so that a busy machine slows
			// both alike: the time of each, and keyed-x, the throughput of
			// keyed sends as a fraction of unkeyed ones (unkeyed time over
			// keyed time).
			b.Run("KeyedVsUnkeyed", func(b *testing.B) {
				unkeyed, keyed := send(), send()
				w := &benchWriter{h: http.Header{}}
				prefix := "bench-vs-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
				var tu, tk time.Duration
				n := 0
				b.ReportAllocs()
				for b.Loop() {
					n++
					t0 := time.Now()
					unkeyed.serve(b, h, w)
					t1 := time.Now()
					keyed.req.Header.Set("Idempotency-Key", prefix+strconv.Itoa(n))
					keyed.serve(b, h, w)
					tu += t1.Sub(t0)
					tk += time.Since(t1)
				}
				b.ReportMetric(float64(tu.Nanoseconds())/float64(n), "unkeyed-ns/op")
				b.ReportMetric(float64(tk.Nanoseconds())/float64(n), "keyed-ns/op")
				b.ReportMetric(float64(tu)/float64(tk), "keyed-x")
			})
			b.Run("Replayed", func(b *testing.B) {
				br := send()
				br.req.Header.Set("Idempotency-Key", "bench-replayed")
				w := &benchWriter{h: http.Header{}}
				br.serve(b, h, w) // the first answer, kept
				b.ReportAllocs()
				for b.Loop() {
					br.serve(b, h, w)
					if w.h.Get("Idempotent-Replayed") != "true" {
						b.Fatal("not a replay")
					}
				}
			})
		})
	}
}
