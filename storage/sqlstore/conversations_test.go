package sqlstore_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/sqlstore"
)

// TestMigrateConversationsUpgrade fills a database at the schema version
// before conversations, with SQL of that version, then migrates it: every
// conversation of a message or filed file is there with exact counters,
// and sends, reads and deletes go on counting from there.
func TestMigrateConversationsUpgrade(t *testing.T) {
	versions := sqlstore.Versions()
	i := slices.Index(versions, "20261123000001")
	require.Positive(t, i)
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			s := open(t, e.DSN(t))
			require.NoError(t, sqlstore.MigrateTo(s, ctx, versions[i-1]))

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

			list, _, err := s.ListConversations(ctx, messaging.ConversationQuery{ViewerID: alice, All: true, Limit: 10})
			require.NoError(t, err)
			assert.Equal(t, []string{"f", "d", "c"}, []string{list[0].ID, list[1].ID, list[2].ID})

			// Counting goes on from the backfill.
			require.NoError(t, s.MarkRead(ctx, "c", bob, c[1]))
			assert.EqualValues(t, 1, conv("c", bob).UnreadCount)
			m := messaging.Message{ID: ids.New(ids.Message), ConversationID: "c", Contact: messaging.Contact{ID: alice}, Text: "z", CreatedAt: at.Add(time.Hour)}
			require.NoError(t, s.CreateMessage(ctx, m, nil))
			assert.EqualValues(t, 2, conv("c", bob).UnreadCount)
			_, err = s.DeleteMessage(ctx, c[0])
			require.NoError(t, err)
			assert.EqualValues(t, 2, conv("c", bob).UnreadCount, "a read message went")
			require.NoError(t, s.MarkRead(ctx, "c", bob, m.ID))
			assert.Zero(t, conv("c", bob).UnreadCount)
		})
	}
}
