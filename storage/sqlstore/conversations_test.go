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

// TestMigrateConversationsUpgrade fills a database at the schema version
// before conversations, with SQL of that version, then migrates it: every
// conversation of a message or filed file is there with exact counters,
// and sends, reads and deletes go on counting from there.
func TestMigrateConversationsUpgrade(t *testing.T) {
	eachEngineBefore(t, "20261123000001", func(t *testing.T, _ string, s *sqlstore.Store) {
		ctx := t.Context()

		at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
		exec := func(q string, args ...any) {
			t.Helper()
			_, err := s.DB().ExecContext(ctx, q, args...)
			require.NoError(t, err, q)
		}
		alice, bob := ids.New(ids.Contact), ids.New(ids.Contact)
		exec("INSERT INTO contacts (id, username, phone_number, avatar_url, created_at) VALUES (?, 'alice', '', '', ?), (?, 'bob', '', '', ?)", alice, at, bob, at)
		// "c": alice, bob, alice; "d": bob; "f": a filed file only; a
		// file filed in "d" before its first message.
		var c []string
		for i, who := range []string{alice, bob, alice} {
			id := ids.NewAt(ids.Message, at.Add(time.Duration(i)*time.Second))
			c = append(c, id)
			exec("INSERT INTO messages (id, conversation_id, contact_id, text, created_at) VALUES (?, 'c', ?, 'x', ?)", id, who, at.Add(time.Duration(i)*time.Second))
		}
		d := ids.NewAt(ids.Message, at.Add(time.Minute))
		exec("INSERT INTO messages (id, conversation_id, contact_id, text, created_at) VALUES (?, 'd', ?, 'y', ?)", d, bob, at.Add(time.Minute))
		for _, f := range []struct {
			conv string
			at   time.Time
		}{{"f", at.Add(time.Hour)}, {"d", at.Add(-time.Hour)}} {
			id := ids.New(ids.Attachment)
			exec(`INSERT INTO attachments (id, conversation_id, uploader_id, filename, file_type, file_size, sha256, blob_key, created_at)
				VALUES (?, ?, ?, 'f.txt', 'text/plain', 1, '', ?, ?)`, id, f.conv, alice, "key/"+id, f.at)
		}

		require.NoError(t, s.Migrate(ctx))

		conv := func(id, viewer string) messaging.Conversation {
			t.Helper()
			got, err := s.GetConversation(ctx, id, viewer)
			require.NoError(t, err, id)
			return got
		}
		cc := conv("c", bob)
		assert.EqualValues(t, 3, cc.MessageCount)
		assert.EqualValues(t, 2, cc.UnreadCount, "alice's two")
		assert.Equal(t, at, cc.CreatedAt)
		assert.Equal(t, at.Add(2*time.Second), cc.UpdatedAt)
		require.NotNil(t, cc.LastMessage)
		assert.Equal(t, c[2], cc.LastMessage.ID)
		assert.EqualValues(t, 1, conv("c", alice).UnreadCount)
		dc := conv("d", alice)
		assert.Equal(t, at.Add(-time.Hour), dc.CreatedAt, "dated back to its first file")
		assert.EqualValues(t, 1, dc.UnreadCount)
		fc := conv("f", alice)
		assert.Zero(t, fc.MessageCount)
		assert.Nil(t, fc.LastMessage)
		assert.Equal(t, at.Add(time.Hour), fc.UpdatedAt)

		list, _, err := s.ListConversations(ctx, driver.ConversationQuery{ViewerID: alice, All: true, Limit: 10})
		require.NoError(t, err)
		assert.Equal(t, []string{"f", "d", "c"}, []string{list[0].ID, list[1].ID, list[2].ID})

		// Counting goes on from the backfill.
		require.NoError(t, s.MarkRead(ctx, "c", bob, c[1], nil))
		assert.EqualValues(t, 1, conv("c", bob).UnreadCount)
		m := messaging.Message{ID: ids.New(ids.Message), ConversationID: "c", Contact: messaging.Contact{ID: alice}, Text: "z", CreatedAt: at.Add(time.Hour)}
		require.NoError(t, s.CreateMessage(ctx, m, nil, nil))
		assert.EqualValues(t, 2, conv("c", bob).UnreadCount)
		_, err = s.DeleteMessage(ctx, c[0], nil)
		require.NoError(t, err)
		assert.EqualValues(t, 2, conv("c", bob).UnreadCount, "a read message went")
		require.NoError(t, s.MarkRead(ctx, "c", bob, m.ID, nil))
		assert.Zero(t, conv("c", bob).UnreadCount)
	})
}

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
			require.NoError(t, s.PutContact(ctx, alice))
			require.NoError(t, s.PutContact(ctx, bob))
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
			require.NoError(t, s.ImportMessages(ctx, msgs))
			unread := func() int64 {
				t.Helper()
				c, err := s.GetConversation(ctx, "c", bob.ID)
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
				require.NoError(t, s.MarkRead(ctx, "c", bob.ID, msgs[i].ID, nil))
				assert.Equal(t, others(i), unread(), "read through %d", i)
			}
		})
	}
}

// TestConversationsPageInFixedQueries: a page of conversations costs the
// same number of queries whatever its size: the conversations, their last
// messages, and those messages' reactions and attachments; one more to
// resolve a member's memberships.
func TestConversationsPageInFixedQueries(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			s := e.Open(t)
			start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			c := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: start}
			require.NoError(t, s.PutContact(ctx, c))
			for i := range 40 {
				at := start.Add(time.Duration(i) * time.Second)
				conv := fmt.Sprintf("c%02d", i)
				a := messaging.Attachment{ID: ids.NewAt(ids.Attachment, at), UploaderID: c.ID, Filename: "f.txt", FileType: "text/plain", Key: fmt.Sprintf("k/%d", i), CreatedAt: at}
				require.NoError(t, s.CreateAttachment(ctx, a, nil))
				m := messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: conv, Contact: c, Text: "m", CreatedAt: at}
				require.NoError(t, s.CreateMessage(ctx, m, []string{a.ID}, nil))
				_, err := s.UpdateMessage(ctx, m.ID, driver.MessageChange{AddReactions: []messaging.Reaction{{Name: "x", Reactors: []string{"alice"}}}})
				require.NoError(t, err)
				require.NoError(t, s.AddMember(ctx, conv, c.ID, at))
			}
			reads := sqlstore.CountReads(s)
			for _, q := range []struct {
				name  string
				q     driver.ConversationQuery
				reads int64
			}{
				{"all", driver.ConversationQuery{ViewerID: c.ID, All: true}, 4},
				{"member of many", driver.ConversationQuery{ViewerID: c.ID, MemberID: c.ID}, 5},
			} {
				for _, limit := range []int{1, 5, 30} {
					reads.Store(0)
					q.q.Limit = limit
					items, _, err := s.ListConversations(ctx, q.q)
					require.NoError(t, err)
					require.Len(t, items, limit)
					for _, it := range items {
						require.NotNil(t, it.LastMessage)
						assert.Len(t, it.LastMessage.Reactions, 1)
						assert.Len(t, it.LastMessage.Attachments, 1)
					}
					assert.Equal(t, q.reads, reads.Load(), "%s: queries for a page of %d", q.name, limit)
				}
			}
		})
	}
}
