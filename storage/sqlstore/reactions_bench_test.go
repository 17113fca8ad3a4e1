package sqlstore_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/cputime"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
)

// BenchmarkReactionReactors measures a reaction on a message that already
// has 1, 100, 1,000 and 10,000 reactors of that reaction, through the
// Service: a caller reacts and takes the reaction back (two writes), and
// the message is read; and, as the yardstick measured under the same load,
// a create of a message. Neither may grow with the number of reactors
// (issue 15: react_and_take_back within 1.2x, as a rate relative to a
// create, from 1 to 10,000). Also: a page of the message's conversation
// whose cursor is that message (page_after), and creates in another
// conversation while a caller reacts to the message and takes it back
// every 2 ms (create_beside_reactions, by wall time: the reactions'
// CPU is the process's too); neither may grow with its reactors either.
// cpu-ns/op is the process's CPU time (the Go code and SQLite's) per
// operation, steadier than ns/op on a shared machine.
//
//	go test ./storage/sqlstore -run '^$' -bench ReactionReactors -benchtime 2000x
//
// PARLEY_BENCH_REACTORS (default 10000) sets the largest size.
func BenchmarkReactionReactors(b *testing.B) {
	largest := benchSize("PARLEY_BENCH_REACTORS", 10_000)
	for _, e := range backendtest.SQL(b) {
		b.Run(e.Name, func(b *testing.B) {
			for _, n := range []int{1, 100, 1000, 10_000} {
				if n > largest {
					break
				}
				b.Run(fmt.Sprintf("reactors=%d", n), func(b *testing.B) {
					ctx := b.Context()
					s := e.Open(b)
					msgs := svctest.New(b, s, nil, nil)
					alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
					require.NoError(b, err)
					caller, err := msgs.SaveContact(ctx, messaging.Contact{Username: "caller"})
					require.NoError(b, err)
					for i := range 10 { // older than the popular message: page_after's page
						_, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "c", Text: fmt.Sprintf("before %d", i)})
						require.NoError(b, err)
					}
					m, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "c", Text: "popular"})
					require.NoError(b, err)
					// n reactors of "tada", stored in bulk; the counters as
					// the store keeps them.
					at := time.Now().UTC().Truncate(time.Microsecond)
					exec := func(q string, args ...any) {
						b.Helper()
						_, err := s.DB().ExecContext(ctx, q, args...)
						require.NoError(b, err)
					}
					exec("INSERT INTO reaction_names (message_id, name) VALUES (?, 'tada')", m.ID)
					for start := 0; start < n; start += 1000 {
						var cs, rs []string
						var cargs, rargs []any
						for i := start; i < min(n, start+1000); i++ {
							id := fmt.Sprintf("ctc_bench%05d", i)
							cs, cargs = append(cs, "(?, ?, '', '', ?)"), append(cargs, id, fmt.Sprintf("reactor%05d", i), at)
							rs, rargs = append(rs, "(?, 'tada', ?, ?)"), append(rargs, m.ID, id, at)
						}
						exec("INSERT INTO contacts (id, username, phone_number, avatar_url, created_at) VALUES "+strings.Join(cs, ", "), cargs...)
						exec("INSERT INTO reactions (message_id, name, contact_id, created_at) VALUES "+strings.Join(rs, ", "), rargs...)
					}
					exec(`UPDATE reaction_names SET reactors = ?, head_seq = COALESCE((SELECT r.seq FROM reactions AS r
						WHERE r.message_id = ? AND r.name = 'tada' ORDER BY r.seq LIMIT 1 OFFSET 99), 9223372036854775807) WHERE message_id = ?`, n, m.ID, m.ID)
					exec("UPDATE messages SET reaction_count = 1 WHERE id = ?", m.ID)
					if e.Name == "postgres" {
						// As autovacuum would have after the rows came one by one.
						exec("ANALYZE reactions")
						exec("ANALYZE reaction_names")
					}
					got, err := msgs.Get(ctx, alice, m.ID)
					require.NoError(b, err)
					require.Equal(b, n, got.Reactions[0].Count)
					require.Len(b, got.Reactions[0].Reactors, min(n, messaging.MaxEmbeddedReactors))

					b.Run("create", func(b *testing.B) {
						b.ReportAllocs()
						cpu := cputime.Process(b)
						for b.Loop() {
							if _, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "d", Text: "yardstick"}); err != nil {
								b.Fatal(err)
							}
						}
						b.ReportMetric(float64(cputime.Process(b)-cpu)/float64(b.N), "cpu-ns/op")
					})
					react := messaging.Update{React: []string{"tada"}}
					b.Run("react_and_take_back", func(b *testing.B) {
						b.ReportAllocs()
						cpu := cputime.Process(b)
						for b.Loop() {
							if _, err := msgs.Update(ctx, caller, m.ID, react); err != nil {
								b.Fatal(err)
							}
							if _, err := msgs.Unreact(ctx, caller, m.ID, "tada"); err != nil {
								b.Fatal(err)
							}
						}
						b.ReportMetric(float64(cputime.Process(b)-cpu)/float64(b.N), "cpu-ns/op")
					})
					after := messaging.ListOptions{StartingAfter: m.ID, Limit: 10}
					page, err := msgs.Messages(ctx, alice, "c", after)
					require.NoError(b, err)
					require.Len(b, page.Data, 10)
					b.Run("page_after", func(b *testing.B) {
						b.ReportAllocs()
						cpu := cputime.Process(b)
						for b.Loop() {
							if _, err := msgs.Messages(ctx, alice, "c", after); err != nil {
								b.Fatal(err)
							}
						}
						b.ReportMetric(float64(cputime.Process(b)-cpu)/float64(b.N), "cpu-ns/op")
					})
					b.Run("create_beside_reactions", func(b *testing.B) {
						stop, stopped := make(chan struct{}), make(chan int)
						go func() {
							tick := time.NewTicker(2 * time.Millisecond)
							defer tick.Stop()
							n := 0
							for {
								select {
								case <-stop:
									stopped <- n
									return
								case <-tick.C:
								}
								_, err := msgs.Update(ctx, caller, m.ID, react)
								if err == nil {
									_, err = msgs.Unreact(ctx, caller, m.ID, "tada")
								}
								if err != nil {
									b.Error(err)
								}
								n++
							}
						}()
						start := time.Now()
						for b.Loop() {
							if _, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "d", Text: "beside"}); err != nil {
								b.Fatal(err)
							}
						}
						took := time.Since(start)
						close(stop)
						b.ReportMetric(float64(<-stopped)/took.Seconds(), "reactions/s")
					})
					b.Run("get", func(b *testing.B) {
						b.ReportAllocs()
						cpu := cputime.Process(b)
						for b.Loop() {
							if _, err := msgs.Get(ctx, alice, m.ID); err != nil {
								b.Fatal(err)
							}
						}
						b.ReportMetric(float64(cputime.Process(b)-cpu)/float64(b.N), "cpu-ns/op")
					})
				})
			}
		})
	}
}
