package sqlstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/sqlstore"
)

// TestMarkReadFarBack reads through messages more than tailCap before the
// newest, where MarkRead counts the messages it passes rather than those
// after the position, and checks the counts against both ways.
func TestMarkReadFarBack(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			s := e.Open(t)
			at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			alice := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: at}
			bob := messaging.Contact{ID: ids.New(ids.Contact), Username: "bob", CreatedAt: at}
			require.NoError(t, s.Driver().PutContact(ctx, alice))
			require.NoError(t, s.Driver().PutContact(ctx, bob))
			const n = 2500
			msgs := make([]messaging.Message, n)
			for i := range msgs {
				who := alice
				if i%5 == 0 {
					who = bob // bob wrote every fifth
				}
				t := at.Add(time.Duration(i) * time.Millisecond)
				msgs[i] = messaging.Message{ID: ids.NewAt(ids.Message, t), ConversationID: "c", Contact: who, Text: "m", CreatedAt: t}
			}
			require.NoError(t, importer(s).ImportMessages(ctx, msgs))
			unread := func() int64 {
				t.Helper()
				c, err := s.Driver().GetConversation(ctx, "c", bob.ID)
				require.NoError(t, err)
				return c.UnreadCount
			}
			others := func(from int) int64 { // alice's messages after index from
				k := int64(0)
				for i := from + 1; i < n; i++ {
					if i%5 != 0 {
						k++
					}
				}
				return k
			}
			assert.Equal(t, others(-1), unread())
			for _, i := range []int{99, 1200, 1499, 2400, n - 1} { // far back, far, near, near, the newest
				require.NoError(t, s.Driver().MarkRead(ctx, "c", bob.ID, msgs[i].ID, nil))
				assert.Equal(t, others(i), unread(), "read through %d", i)
			}
		})
	}
}

// TestConversationsPageInFixedQueries: a page of conversations costs the
// same number of queries whatever its size: the conversations with their
// last messages, and those messages' reactions and attachments; one more to
// resolve a member's memberships; none for a cursor by id (but on MySQL).
func TestConversationsPageInFixedQueries(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			s := e.Open(t)
			start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			c := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: start}
			require.NoError(t, s.Driver().PutContact(ctx, c))
			for i := range 40 {
				at := start.Add(time.Duration(i) * time.Second)
				conv := fmt.Sprintf("c%02d", i)
				a := messaging.Attachment{ID: ids.NewAt(ids.Attachment, at), UploaderID: c.ID, Filename: "f.txt", FileType: "text/plain", Key: fmt.Sprintf("k/%d", i), CreatedAt: at}
				require.NoError(t, s.Driver().CreateAttachment(ctx, a, nil))
				m := messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: conv, Contact: c, Text: "m", CreatedAt: at}
				require.NoError(t, s.Driver().CreateMessage(ctx, m, []string{a.ID}, nil))
				_, err := s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: "alice", Add: []string{"x"}}})
				require.NoError(t, err)
				require.NoError(t, s.Driver().AddMember(ctx, conv, c.ID, at))
			}
			reads := sqlstore.CountReads(s)
			for _, q := range []struct {
				name  string
				q     driver.ConversationQuery
				reads int64
			}{
				{"all", driver.ConversationQuery{Scope: driver.Scope{All: true}, ViewerID: c.ID}, 3},
				{"member of many", driver.ConversationQuery{Scope: driver.Scope{MemberID: c.ID}, ViewerID: c.ID}, 4},
			} {
				for _, limit := range []int{1, 5, 30} {
					reads.Store(0)
					q.q.Limit = limit
					items, _, err := s.Driver().ListConversations(ctx, q.q)
					require.NoError(t, err)
					require.Len(t, items, limit)
					for _, it := range items {
						require.NotNil(t, it.LastMessage)
						assert.Len(t, it.LastMessage.Reactions, 1)
						assert.Len(t, it.LastMessage.Attachments, 1)
					}
					assert.Equal(t, q.reads, reads.Load(), "%s: queries for a page of %d", q.name, limit)
				}
				// A cursor by id costs no query of its own, but on MySQL,
				// which reads it first.
				reads.Store(0)
				q.q.Limit, q.q.After = 5, &driver.Cursor{ID: "c20"}
				items, _, err := s.Driver().ListConversations(ctx, q.q)
				require.NoError(t, err)
				want := q.reads
				if e.Name == "mysql" {
					want++
				}
				assert.Equal(t, want, reads.Load(), "%s: queries for a page after a cursor by id", q.name)
				var got []string
				for _, it := range items {
					got = append(got, it.ID)
				}
				assert.Equal(t, []string{"c19", "c18", "c17", "c16", "c15"}, got, q.name)
			}
			// A conversation of the store whose member the contact is not.
			at := start.Add(time.Hour)
			require.NoError(t, s.Driver().CreateMessage(ctx, messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: "other", Contact: c, Text: "m", CreatedAt: at}, nil, nil))
			_, _, err := s.Driver().ListConversations(ctx, driver.ConversationQuery{Scope: driver.Scope{MemberID: c.ID}, ViewerID: c.ID,
				Window: driver.Window{Limit: 5, After: &driver.Cursor{ID: "other"}}})
			assert.ErrorIs(t, err, messaging.ErrNotFound, "a cursor by id of no membership, member of many")
		})
	}
}
