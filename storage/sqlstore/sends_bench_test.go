package sqlstore_test

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/cputime"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
)

// BenchmarkSends measures creates in one conversation through the
// Service, from one caller and from 32 at once (the sends that wait for
// one another stored together, sends.go), in wall and CPU time (cpu-ns/op,
// the process's: on PostgreSQL the client's alone).
//
//	go test ./storage/sqlstore -run '^$' -bench 'Sends/sqlite' -benchtime 5000x
func BenchmarkSends(b *testing.B) {
	for _, e := range backendtest.SQL(b) {
		b.Run(e.Name, func(b *testing.B) {
			msgs := svctest.New(b, e.Open(b), nil, nil)
			writer, err := msgs.SaveContact(b.Context(), messaging.Contact{Username: "writer"})
			require.NoError(b, err)
			for _, callers := range []int{1, 32} {
				b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
					send := func() {
						_, err := msgs.Create(b.Context(), writer, messaging.NewMessage{ConversationID: "sends", Text: "hello"})
						if err != nil {
							b.Error(err)
						}
					}
					c0 := cputime.Process(b)
					if callers == 1 {
						for b.Loop() {
							send()
						}
					} else {
						b.SetParallelism((callers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
						b.RunParallel(func(pb *testing.PB) {
							for pb.Next() {
								send()
							}
						})
					}
					b.ReportMetric(float64((cputime.Process(b)-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
				})
			}
		})
	}
}
