package sqlstore_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/cputime"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
)

// BenchmarkThreads measures issue 31's targets through the Service on each
// engine: a reply against a plain send, page 1,000 of a thread against its
// first page, the first page of a caller's threads for a caller in many
// threads against one in 10, and a thread's unread count in a big thread
// against one of 10 replies. reply_per_send times a send and a reply in
// turn and reports their ratio (reply/send), steadier than the ratio of
// the send and reply cases on a shared machine.
//
//	go test ./storage/sqlstore -run '^$' -bench Threads -benchtime 300x
//
// PARLEY_BENCH_THREADS (default 10000) and PARLEY_BENCH_REPLIES (default
// 1000000) set the large sizes. Replies beyond the first of a thread are
// bulk-loaded into the thread's conversation (the store's layout, see
// threads.go), as BenchmarkConversations loads messages.
func BenchmarkThreads(b *testing.B) {
	many := benchSize("PARLEY_BENCH_THREADS", 10_000)
	big := benchSize("PARLEY_BENCH_REPLIES", 1_000_000)
	deep := 10_010 // page 1,000 of 10
	for _, e := range backendtest.SQL(b) {
		b.Run(e.Name, func(b *testing.B) {
			ctx := b.Context()
			s := e.Open(b)
			msgs := svctest.New(b, s, nil, nil)
			at := time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Microsecond)
			contact := func(name string) messaging.Contact {
				c, err := msgs.SaveContact(ctx, messaging.Contact{Username: name})
				require.NoError(b, err)
				return c
			}
			writer, crowd, few := contact("writer"), contact("crowd"), contact("few")
			send := func(who messaging.Contact, conv, parent string) messaging.Message {
				m, err := msgs.Create(ctx, who, messaging.NewMessage{ConversationID: conv, Text: "hello", ParentID: parent})
				require.NoError(b, err)
				return m
			}
			// load bulk-loads n replies from writer into the thread of root,
			// from at on, and returns the id of the i-th oldest (-1: none).
			load := func(root messaging.Message, n, i int, from time.Time) string {
				var keep string
				var batch []messaging.Message
				for j := range n {
					t := from.Add(time.Duration(j) * time.Microsecond)
					batch = append(batch, messaging.Message{ID: ids.NewAt(ids.Message, t), ConversationID: root.ConversationID + "/" + root.ID,
						Contact: writer, Text: "r", CreatedAt: t})
					if j == i {
						keep = batch[len(batch)-1].ID
					}
					if len(batch) == 5000 || j == n-1 {
						require.NoError(b, importer(s).ImportMessages(ctx, batch))
						batch = batch[:0]
					}
				}
				return keep
			}

			// Threads: crowd starts many (one reply each, by writer), few 10.
			for _, who := range []struct {
				c messaging.Contact
				n int
			}{{crowd, many}, {few, 10}} {
				for i := range who.n {
					root := send(who.c, "room-"+strconv.Itoa(i%100), "")
					if i < 10 {
						send(writer, root.ConversationID, root.ID) // through the Service: flags and takers
						continue
					}
					// The taker's row first: the import places it in the
					// caller's list (threads.go).
					_, err := s.DB().ExecContext(ctx, "UPDATE messages SET thread = TRUE WHERE id = ?", root.ID)
					require.NoError(b, err)
					_, err = s.DB().ExecContext(ctx, "INSERT INTO conversation_members (conversation_id, contact_id, joined_at) VALUES (?, ?, ?)",
						root.ConversationID+"/"+root.ID, who.c.ID, at)
					require.NoError(b, err)
					load(root, 1, -1, at.Add(time.Duration(i)*time.Millisecond))
				}
			}
			// A big thread and a small one, read half way by few; a deep one
			// to page.
			bigRoot, smallRoot, deepRoot := send(few, "big", ""), send(few, "big", ""), send(few, "deep", "")
			for _, t := range []struct {
				root messaging.Message
				n    int
			}{{bigRoot, big}, {smallRoot, 10}} {
				send(writer, "big", t.root.ID)
				half := load(t.root, t.n-1, (t.n-1)/2, at)
				_, err := msgs.MarkThreadRead(ctx, few, t.root.ID, half)
				require.NoError(b, err)
			}
			send(writer, "deep", deepRoot.ID)
			cursor := load(deepRoot, deep-1, 20, at) // 9,990 newer: page 1,000 of 10 begins after it
			analyze := map[string]string{"mysql": "ANALYZE TABLE messages, contacts, conversations, conversation_members"}[e.Name]
			if analyze == "" {
				analyze = "ANALYZE"
			}
			_, err := s.DB().ExecContext(ctx, analyze)
			require.NoError(b, err)
			if e.Name == "sqlite" {
				// The load's WAL written back now, not by the first sends
				// (which made a send cost twice a reply).
				_, err := s.DB().ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
				require.NoError(b, err)
			}
			// loop runs op b.N times and reports the process's CPU time
			// per op beside the wall time (steadier on a shared machine;
			// on PostgreSQL the client's alone).
			loop := func(b *testing.B, op func()) {
				cpu := cputime.Process(b)
				for b.Loop() {
					op()
				}
				b.ReportMetric(float64(cputime.Process(b)-cpu)/float64(b.N), "cpu-ns/op")
			}

			b.Run("replies_page/first", func(b *testing.B) {
				loop(b, func() {
					p, err := msgs.Replies(ctx, few, deepRoot.ID, messaging.ListOptions{})
					if err != nil || len(p.Data) != 10 {
						b.Fatal(err, len(p.Data))
					}
				})
			})
			b.Run("replies_page/1000th", func(b *testing.B) {
				loop(b, func() {
					p, err := msgs.Replies(ctx, few, deepRoot.ID, messaging.ListOptions{StartingAfter: cursor})
					if err != nil || len(p.Data) != 10 {
						b.Fatal(err, len(p.Data))
					}
				})
			})
			for _, who := range []struct {
				name string
				c    messaging.Contact
			}{{"in_10", few}, {"in_" + strconv.Itoa(many), crowd}} {
				b.Run("threads_first_page/"+who.name, func(b *testing.B) {
					loop(b, func() {
						p, err := msgs.Threads(ctx, who.c, messaging.ListOptions{})
						if err != nil || len(p.Data) != 10 {
							b.Fatal(err, len(p.Data))
						}
					})
				})
			}
			for _, t := range []struct {
				root messaging.Message
				n    int
			}{{smallRoot, 10}, {bigRoot, big}} {
				b.Run(fmt.Sprintf("unread_count/%d_replies", t.n), func(b *testing.B) {
					loop(b, func() {
						got, err := msgs.Thread(ctx, few, t.root.ID)
						if err != nil || got.UnreadCount != int64(t.n-1-(t.n-1)/2) || got.ReplyCount != int64(t.n) {
							b.Fatal(err, got.UnreadCount, got.ReplyCount)
						}
					})
				})
			}
			// The writes last, so that what a store does after them in the
			// background (PostgreSQL's sequencer numbers their events)
			// cannot fall into a read's case: right after them, a first
			// page of replies once cost 3x page 1,000.
			b.Run("send", func(b *testing.B) {
				loop(b, func() { send(writer, "sends", "") })
			})
			replyTo := send(few, "sends", "")
			b.Run("reply", func(b *testing.B) {
				loop(b, func() { send(writer, "sends", replyTo.ID) })
			})
			// A send and a reply in turn, each timed: their ratio within
			// the same moments of a shared machine (a PostgreSQL commit's
			// flush swung either case 3x between runs), in wall time and
			// in the process's CPU time (on PostgreSQL the client's alone).
			b.Run("reply_per_send", func(b *testing.B) {
				var sends, replies, sendsCPU, repliesCPU time.Duration
				for b.Loop() {
					c0, t0 := cputime.Process(b), time.Now()
					send(writer, "sends", "")
					c1, t1 := cputime.Process(b), time.Now()
					send(writer, "sends", replyTo.ID)
					sends, replies = sends+t1.Sub(t0), replies+time.Since(t1)
					c2 := cputime.Process(b)
					sendsCPU, repliesCPU = sendsCPU+c1-c0, repliesCPU+c2-c1
				}
				b.ReportMetric(float64(sends.Nanoseconds())/float64(b.N), "send-ns/op")
				b.ReportMetric(float64(replies.Nanoseconds())/float64(b.N), "reply-ns/op")
				b.ReportMetric(float64(replies)/float64(sends), "reply/send")
				b.ReportMetric(float64(repliesCPU)/float64(max(sendsCPU, 1)), "reply/send-cpu")
			})
		})
	}
}
