package sqlstore_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/sqlstore"
	"github.com/parleychat/parley/storage/storetest"
)

// counters returns the reaction_count and attachment_count of a message.
func counters(t *testing.T, s *sqlstore.Store, id string) (reactions, atts int) {
	t.Helper()
	var row struct {
		R int `bun:"reaction_count"`
		A int `bun:"attachment_count"`
	}
	require.NoError(t, s.DB().NewRaw("SELECT reaction_count, attachment_count FROM messages WHERE id = ?", id).Scan(t.Context(), &row))
	return row.R, row.A
}

// TestCountersFollowChanges checks the counters after every kind of change
// that adds or removes reaction names or attachment links.
func TestCountersFollowChanges(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			s := e.Open(t)
			at := time.Now().UTC().Truncate(time.Microsecond)
			c := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: at}
			require.NoError(t, s.Driver().PutContact(ctx, c))
			for _, id := range []string{"u", "v"} { // reactors by contact id
				require.NoError(t, s.Driver().PutContact(ctx, messaging.Contact{ID: id, Username: "user " + id, CreatedAt: at}))
			}
			newAtt := func(msg string) string {
				t.Helper()
				a := messaging.Attachment{ID: ids.New(ids.Attachment), MessageID: msg, UploaderID: c.ID, Filename: "f", FileType: "text/plain", Key: "k/" + ids.New(ids.Attachment), CreatedAt: at}
				if msg != "" {
					a.ConversationID = "c"
				}
				require.NoError(t, s.Driver().CreateAttachment(ctx, a, nil))
				return a.ID
			}
			want := func(id string, reactions, atts int) {
				t.Helper()
				r, a := counters(t, s, id)
				assert.Equal(t, reactions, r, "reaction_count")
				assert.Equal(t, atts, a, "attachment_count")
				m, err := s.Driver().GetMessage(ctx, id)
				require.NoError(t, err)
				assert.Len(t, m.Reactions, reactions)
				assert.Len(t, m.Attachments, atts)
			}

			a1, a2 := newAtt(""), newAtt("")
			m := messaging.Message{ID: ids.New(ids.Message), ConversationID: "c", Contact: c, Text: "m", CreatedAt: at}
			require.NoError(t, s.Driver().CreateMessage(ctx, m, []string{a1, a2, a1}, nil))
			want(m.ID, 0, 2)

			_, err := s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: "u", Add: []string{"x", "y"}}})
			require.NoError(t, err)
			got, err := s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: "v", Add: []string{"x"}}})
			require.NoError(t, err)
			assert.Len(t, got.Reactions, 2)
			want(m.ID, 2, 2)

			_, err = s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: "u", Add: []string{"z"}}, Check: storetest.Limits(2, 0)})
			require.ErrorIs(t, err, messaging.ErrInvalid)
			want(m.ID, 2, 2)

			got, err = s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: "u", Remove: []string{"y"}}})
			require.NoError(t, err)
			assert.Equal(t, []messaging.Reaction{{Name: "x", Reactors: []string{"user u", "user v"}, Count: 2}}, got.Reactions)
			want(m.ID, 1, 2)

			got, err = s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: "v", Remove: []string{"x"}}})
			require.NoError(t, err)
			assert.Len(t, got.Reactions, 1, "x keeps a reactor")
			want(m.ID, 1, 2)

			a3 := newAtt("")
			_, err = s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{LinkAttachments: []string{a3}, Check: storetest.Limits(0, 2)})
			require.ErrorIs(t, err, messaging.ErrInvalid)
			want(m.ID, 1, 2)
			got, err = s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{LinkAttachments: []string{a3, a1}})
			require.NoError(t, err)
			assert.Len(t, got.Attachments, 3)
			want(m.ID, 1, 3)

			_, err = s.Driver().DeleteAttachment(ctx, a1, nil)
			require.NoError(t, err)
			want(m.ID, 1, 2)
			_, err = s.Driver().DeleteAttachment(ctx, a1, nil)
			require.ErrorIs(t, err, messaging.ErrNotFound)
			want(m.ID, 1, 2)

			newAtt(m.ID) // created linked
			want(m.ID, 1, 3)

			got, err = s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: "u", Remove: []string{"x"}}})
			require.NoError(t, err)
			assert.Empty(t, got.Reactions)
			want(m.ID, 0, 3)

			removed, err := s.Driver().DeleteMessage(ctx, m.ID, nil)
			require.NoError(t, err)
			assert.Len(t, removed, 3)

			plain := messaging.Message{ID: ids.New(ids.Message), ConversationID: "c", Contact: c, Text: "p", CreatedAt: at}
			require.NoError(t, s.Driver().CreateMessage(ctx, plain, nil, nil))
			want(plain.ID, 0, 0)
			removed, err = s.Driver().DeleteMessage(ctx, plain.ID, nil)
			require.NoError(t, err)
			assert.Empty(t, removed)
			assert.NotNil(t, removed)
		})
	}
}

type memberCounts struct {
	ConversationID string `bun:"conversation_id"`
	ContactID      string `bun:"contact_id"`
	ReadCount      int64  `bun:"read_count"`
	OwnReadCount   int64  `bun:"own_read_count"`
	OwnCount       int64  `bun:"own_count"`
}

// TestDeleteKeepsCountersExact: deletes at, before and after readers'
// positions (the first delete's statements run unprepared, the others
// prepared), of old and of new messages, keep every counter equal to a
// recount.
func TestDeleteKeepsCountersExact(t *testing.T) {
	eachMigrated(t, "mysql", func(t *testing.T, _ string, s *sqlstore.Store) {
		ctx := t.Context()
		alice, bob, carol := putContact(t, s, "alice"), putContact(t, s, "bob"), putContact(t, s, "carol")
		who := []messaging.Contact{alice, bob, carol}
		var ms []messaging.Message
		for i := range 30 {
			// sub-second times, some sharing a time
			at := base.Add(time.Duration(i/2)*time.Second + time.Duration(i%3)*250*time.Millisecond + time.Microsecond*time.Duration(i%2))
			ms = append(ms, send(t, s, "c", who[i%3], at))
		}
		require.NoError(t, s.Driver().MarkRead(ctx, "c", bob.ID, ms[20].ID, nil))
		require.NoError(t, s.Driver().MarkRead(ctx, "c", carol.ID, ms[9].ID, nil))
		require.NoError(t, s.Driver().MarkRead(ctx, "c", alice.ID, ms[29].ID, nil))
		check := func(step string) { t.Helper(); assertCounted(t, s, "c", step) }
		check("before")
		// delete at, before and after positions, including the positions themselves
		for _, i := range []int{20, 9, 5, 21, 19, 29, 0, 10, 8, 28, 15, 14, 1, 2, 3} {
			_, err := s.Driver().DeleteMessage(ctx, ms[i].ID, nil)
			require.NoError(t, err)
			check("after delete " + ms[i].ID)
		}
		// new messages, deleted soon
		for round := range 3 {
			var fresh []messaging.Message
			for i := range 6 {
				at := base.Add(time.Duration(40+round*10+i/2)*time.Second + time.Duration(i%3)*250*time.Millisecond)
				fresh = append(fresh, send(t, s, "c", who[i%3], at))
			}
			require.NoError(t, s.Driver().MarkRead(ctx, "c", carol.ID, fresh[2].ID, nil))
			for _, i := range []int{2, 0, 5} {
				_, err := s.Driver().DeleteMessage(ctx, fresh[i].ID, nil)
				require.NoError(t, err)
			}
			check("after new deletes")
		}
	})
}

// assertCounted asserts that the counters of conversation conv and of its
// members are those a recount of its messages gives.
func assertCounted(t *testing.T, s *sqlstore.Store, conv, step string) {
	t.Helper()
	ctx := t.Context()
	var got []memberCounts
	require.NoError(t, s.DB().NewRaw(`SELECT conversation_id, contact_id, read_count, own_read_count, own_count FROM conversation_members WHERE conversation_id = ? ORDER BY contact_id`, conv).Scan(ctx, &got))
	var want []memberCounts
	require.NoError(t, s.DB().NewRaw(`SELECT cm.conversation_id, cm.contact_id,
		(SELECT COUNT(*) FROM messages AS m WHERE m.conversation_id = cm.conversation_id AND (m.created_at < cm.read_created OR (m.created_at = cm.read_created AND m.id <= cm.read_message_id))) AS read_count,
		(SELECT COUNT(*) FROM messages AS m WHERE m.conversation_id = cm.conversation_id AND m.contact_id = cm.contact_id AND (m.created_at < cm.read_created OR (m.created_at = cm.read_created AND m.id <= cm.read_message_id))) AS own_read_count,
		(SELECT COUNT(*) FROM messages AS m WHERE m.conversation_id = cm.conversation_id AND m.contact_id = cm.contact_id) AS own_count
		FROM conversation_members AS cm WHERE cm.conversation_id = ? ORDER BY cm.contact_id`, conv).Scan(ctx, &want))
	assert.Equal(t, want, got, step)
	var last []struct {
		Count int64  `bun:"message_count"`
		Last  string `bun:"last_message_id"`
	}
	require.NoError(t, s.DB().NewRaw(`SELECT message_count, COALESCE(last_message_id, '') AS last_message_id FROM conversations WHERE id = ?`, conv).Scan(ctx, &last))
	var recount []struct {
		Count int64  `bun:"n"`
		Last  string `bun:"last"`
	}
	require.NoError(t, s.DB().NewRaw(`SELECT COUNT(*) AS n, COALESCE(MAX(id), '') AS last FROM messages AS m WHERE conversation_id = ?
		AND NOT EXISTS (SELECT 1 FROM messages AS n WHERE n.conversation_id = m.conversation_id AND (n.created_at > m.created_at OR (n.created_at = m.created_at AND n.id > m.id)))`, conv).Scan(ctx, &recount))
	var n int64
	require.NoError(t, s.DB().NewRaw(`SELECT COUNT(*) FROM messages WHERE conversation_id = ?`, conv).Scan(ctx, &n))
	require.Len(t, last, 1, step)
	assert.Equal(t, n, last[0].Count, "%s: message_count", step)
	assert.Equal(t, recount[0].Last, last[0].Last, "%s: last message", step)
}

// TestCombinedSendsCount: sends that one statement (PostgreSQL) or
// transaction (SQLite) stores together (sends.go), to several
// conversations, each with several senders, some with times before a
// reader's position, each counted once, as alone, in every counter (the
// senders' and a reader's).
func TestCombinedSendsCount(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) { testSendsCount(t, name, true) })
	}
}

// TestSendsAloneCount: the same sends, each in a statement (insertSentSQL)
// or transaction of its own, one after the other.
func TestSendsAloneCount(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) { testSendsCount(t, name, false) })
	}
}

func testSendsCount(t *testing.T, name string, together bool) {
	const n = 30
	e := engine(t, name)
	s := open(t, e.DSN(t))
	ctx := t.Context()
	require.NoError(t, s.Migrate(ctx))
	alice, bob, carol := putContact(t, s, "alice"), putContact(t, s, "bob"), putContact(t, s, "carol")
	dave := putContact(t, s, "dave") // reads only
	who := []messaging.Contact{alice, bob, carol}
	convs := []string{"b", "a", "c"}
	var read []messaging.Message
	for i, conv := range convs {
		read = append(read, send(t, s, conv, who[i], sec(100)))
		require.NoError(t, s.Driver().MarkRead(ctx, conv, carol.ID, read[i].ID, nil))
		require.NoError(t, s.Driver().MarkRead(ctx, conv, bob.ID, read[i].ID, nil))
		require.NoError(t, s.Driver().MarkRead(ctx, conv, dave.ID, read[i].ID, nil))
	}
	queued, release := func() int { return n }, func() {}
	if together {
		queued, release = sqlstore.HoldSends(s)
	}
	var wg sync.WaitGroup
	for i := range n {
		// every third before the readers' position, with a time of another
		at := sec(50 + i)
		if i%3 != 0 {
			at = sec(200 + i%7)
		}
		m := messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: convs[i%len(convs)], Contact: who[(i/3)%len(who)], Text: "hi", CreatedAt: at}
		if !together {
			require.NoError(t, s.Driver().CreateMessage(ctx, m, nil, nil))
			continue
		}
		wg.Go(func() { assert.NoError(t, s.Driver().CreateMessage(ctx, m, nil, nil)) })
	}
	require.Eventually(t, func() bool { return queued() == n }, 10*time.Second, time.Millisecond, "the sends wait")
	release()
	wg.Wait()
	for _, conv := range convs {
		assertCounted(t, s, conv, conv)
	}
}
