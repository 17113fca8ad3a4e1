package sqlstore_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/sqlstore"
)

// benchSize returns the environment variable name as a number, or def.
// .ci/run sets small sizes, for a run that only checks that the
// benchmarks work; BENCHMARKS.md gives the command with the real ones.
func benchSize(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkConversations measures what must not grow with the data: the
// first page of a caller's conversations and of its messages for a member
// of many conversations against one of few (under MembersOnly, filtered by
// a join), and a conversation's unread count in a large conversation
// against a small one (counters, never a count of rows).
//
//	go test ./storage/sqlstore -run '^$' -bench Conversations -benchtime 2s
//
// PARLEY_BENCH_CONVERSATIONS (default 10000) and PARLEY_BENCH_MESSAGES
// (default 1000000) set the large sizes.
func BenchmarkConversations(b *testing.B) {
	many := benchSize("PARLEY_BENCH_CONVERSATIONS", 10_000)
	big := benchSize("PARLEY_BENCH_MESSAGES", 1_000_000)
	for _, e := range backendtest.SQL(b) {
		b.Run(e.Name, func(b *testing.B) {
			ctx := b.Context()
			s := e.Open(b)
			msgs := svctest.New(b, s, nil, &messaging.Options{Policy: messaging.MembersOnly()})
			at := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Microsecond)
			contact := func(name string) messaging.Contact {
				c, err := msgs.SaveContact(ctx, messaging.Contact{Username: name})
				require.NoError(b, err)
				return c
			}
			writer, crowd, few := contact("writer"), contact("crowd"), contact("few")

			// many conversations of a few messages each; crowd is a member
			// of every one, few of ten.
			var batch []messaging.Message
			for i := range many {
				for j := range 3 {
					t := at.Add(time.Duration(i*3+j) * time.Millisecond)
					batch = append(batch, messaging.Message{ID: ids.NewAt(ids.Message, t), ConversationID: fmt.Sprintf("room-%06d", i),
						Contact: writer, Text: "hello " + strconv.Itoa(j), CreatedAt: t})
				}
				if len(batch) >= 3000 || i == many-1 {
					require.NoError(b, importer(s).ImportMessages(ctx, batch))
					batch = batch[:0]
				}
			}
			addMembers(b, s, crowd.ID, many, 1, at)
			addMembers(b, s, few.ID, 10, many/10, at)

			// A big and a small conversation, read half way by crowd.
			for _, c := range []struct {
				id string
				n  int
			}{{"big", big}, {"small", 1000}} {
				var last string
				for start := 0; start < c.n; start += 5000 {
					batch = batch[:0]
					for i := start; i < min(start+5000, c.n); i++ {
						t := at.Add(time.Duration(i) * time.Microsecond)
						batch = append(batch, messaging.Message{ID: ids.NewAt(ids.Message, t), ConversationID: c.id, Contact: writer, Text: "m", CreatedAt: t})
						if i == c.n/2 {
							last = batch[len(batch)-1].ID
						}
					}
					require.NoError(b, importer(s).ImportMessages(ctx, batch))
				}
				require.NoError(b, msgs.AddMember(ctx, c.id, crowd.ID))
				_, err := msgs.MarkRead(ctx, crowd, c.id, last)
				require.NoError(b, err)
			}

			// As a database in use would have them: the planner's statistics.
			analyze := map[string]string{"mysql": "ANALYZE TABLE messages, contacts, conversations, conversation_members"}[e.Name]
			if analyze == "" {
				analyze = "ANALYZE"
			}
			_, err := s.DB().ExecContext(ctx, analyze)
			require.NoError(b, err)

			for _, who := range []struct {
				name string
				c    messaging.Contact
			}{{"member_of_10", few}, {"member_of_" + strconv.Itoa(many), crowd}} {
				b.Run("conversations_first_page/"+who.name, func(b *testing.B) {
					for b.Loop() {
						p, err := msgs.Conversations(ctx, who.c, messaging.ListOptions{})
						if err != nil || len(p.Data) != 10 {
							b.Fatal(err, len(p.Data))
						}
					}
				})
				b.Run("messages_first_page/"+who.name, func(b *testing.B) {
					for b.Loop() {
						p, err := msgs.Messages(ctx, who.c, "", messaging.ListOptions{})
						if err != nil || len(p.Data) != 10 {
							b.Fatal(err, len(p.Data))
						}
					}
				})
			}
			for _, c := range []struct {
				id string
				n  int
			}{{"small", 1000}, {"big", big}} {
				b.Run("unread_count/"+strconv.Itoa(c.n)+"_messages", func(b *testing.B) {
					for b.Loop() {
						got, err := msgs.Conversation(ctx, crowd, c.id)
						if err != nil || got.UnreadCount != int64(c.n-c.n/2-1) {
							b.Fatal(err, got.UnreadCount)
						}
					}
				})
			}
		})
	}
}

// addMembers makes contact a member of n conversations room-…, every
// step-th, in multi-row inserts.
func addMembers(b *testing.B, s *sqlstore.Store, contact string, n, step int, at time.Time) {
	b.Helper()
	for start := 0; start < n; start += 500 {
		var rows []string
		var args []any
		for i := start; i < min(start+500, n); i++ {
			rows = append(rows, "(?, ?, TRUE, ?)")
			args = append(args, fmt.Sprintf("room-%06d", i*step), contact, at)
		}
		_, err := s.DB().ExecContext(b.Context(), "INSERT INTO conversation_members (conversation_id, contact_id, is_member, joined_at) VALUES "+strings.Join(rows, ", "), args...)
		require.NoError(b, err)
	}
}
