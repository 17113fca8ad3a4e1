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
	"github.com/parleychat/parley/storage/sqlstore"
	"github.com/parleychat/parley/storage/storecopy"
)

// counterRows returns the conversations and members a snapshot of s
// gives, and the number of tallies (messages not counted yet) in s.
func counterRows(t *testing.T, s *sqlstore.Store) ([]storecopy.Conversation, []storecopy.Member, int) {
	t.Helper()
	ctx := t.Context()
	snap, err := s.Snapshot(ctx)
	require.NoError(t, err)
	defer snap.Close()
	var convs []storecopy.Conversation
	var members []storecopy.Member
	for _, k := range []storecopy.Kind{storecopy.Conversations, storecopy.Members} {
		n, err := snap.Count(ctx, k)
		require.NoError(t, err)
		got := 0
		for b, err := range snap.Rows(ctx, k, 2) {
			require.NoError(t, err)
			convs, members = append(convs, b.Conversations...), append(members, b.Members...)
			got += len(b.Conversations) + len(b.Members)
		}
		assert.EqualValues(t, n, got, "Count(%v) is what Rows gives", k)
	}
	var tallies int
	if err := s.DB().NewRaw("SELECT COUNT(*) FROM message_tallies").Scan(ctx, &tallies); err != nil {
		tallies = -1 // SQLite counts in the send: no table
	}
	return convs, members, tallies
}

// TestSnapshotCountsTallies checks that a snapshot, which never writes,
// gives the counters that a fold makes of the messages not counted yet: a
// late message before a reader's position, one after it, the reader's own
// and a new sender's first.
func TestSnapshotCountsTallies(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			s := open(t, e.DSN(t))
			require.NoError(t, s.Migrate(ctx))
			base := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
			var people []messaging.Contact
			for _, name := range []string{"alice", "bob", "carol"} {
				c := messaging.Contact{ID: ids.New(ids.Contact), Username: name, CreatedAt: base}
				require.NoError(t, s.PutContact(ctx, c))
				people = append(people, c)
			}
			alice, bob, carol := people[0], people[1], people[2]
			send := func(who messaging.Contact, sec int) messaging.Message {
				at := base.Add(time.Duration(sec) * time.Second)
				m := messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: "c", Contact: who, Text: "hi", CreatedAt: at}
				require.NoError(t, s.CreateMessage(ctx, m, nil, nil))
				return m
			}
			send(alice, 1)
			m3 := send(alice, 3)
			require.NoError(t, s.MarkRead(ctx, "c", bob.ID, m3.ID, nil))

			send(alice, 2) // before bob's position
			send(alice, 4)
			send(bob, 5)
			send(carol, 6) // carol's first
			convs, members, tallies := counterRows(t, s)
			if e.Name != "sqlite" {
				assert.Equal(t, 4, tallies, "the sends after the read are not counted yet")
			}

			got, err := s.GetConversation(ctx, "c", bob.ID) // folds
			require.NoError(t, err)
			assert.EqualValues(t, 6, got.MessageCount)
			assert.EqualValues(t, 2, got.UnreadCount, "alice's message after the position, and carol's")
			folded, foldedMembers, tallies := counterRows(t, s)
			if e.Name != "sqlite" {
				assert.Zero(t, tallies, "a read folds the tallies")
			}
			assert.Equal(t, folded, convs, "the snapshot counts the tallies as the fold does")
			assert.Equal(t, foldedMembers, members)
		})
	}
}

// TestSendIsPrepared checks that the statements of a send are prepared
// once, none formatted by bun: on PostgreSQL one statement, which the
// first send prepares and the next ones reuse; on SQLite those prepared on
// the writer by Migrate.
func TestSendIsPrepared(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		if e.Name == "mysql" {
			continue
		}
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			s := open(t, e.DSN(t))
			require.NoError(t, s.Migrate(ctx))
			alice := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: time.Now().UTC()}
			require.NoError(t, s.PutContact(ctx, alice))
			formatted := sqlstore.CountWrites(s)
			send := func(conv string) {
				at := time.Now().UTC()
				m := messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: conv, Contact: alice, Text: "hi", CreatedAt: at}
				require.NoError(t, s.CreateMessage(ctx, m, nil, nil))
			}
			before := sqlstore.Prepared(s)
			send("a")
			first := sqlstore.Prepared(s)
			if e.Name == "postgres" {
				assert.Equal(t, before+1, first, "the first send prepares its statement")
			}
			send("a")
			send("b")
			assert.Equal(t, first, sqlstore.Prepared(s), "later sends reuse it")
			assert.Zero(t, formatted.Load(), "statements formatted by bun")
			got, err := s.GetConversation(ctx, "a", alice.ID)
			require.NoError(t, err)
			assert.EqualValues(t, 2, got.MessageCount)
		})
	}
}

// TestFoldReachesEveryConversation sends to more conversations than one
// fold transaction takes, with no fold between the sends, then lists them:
// every one is counted.
func TestFoldReachesEveryConversation(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			s := open(t, e.DSN(t))
			require.NoError(t, s.Migrate(ctx))
			alice := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: time.Now().UTC()}
			require.NoError(t, s.PutContact(ctx, alice))
			sqlstore.SetFoldEvery(s, 0)
			const convs = 130 // more than a fold's transaction takes
			for i := range convs {
				at := time.Now().UTC()
				m := messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: fmt.Sprintf("c%03d", i), Contact: alice, Text: "hi", CreatedAt: at}
				require.NoError(t, s.CreateMessage(ctx, m, nil, nil))
			}
			got, more, err := s.ListConversations(ctx, messaging.ConversationQuery{All: true, ViewerID: alice.ID, Limit: convs})
			require.NoError(t, err)
			assert.False(t, more)
			require.Len(t, got, convs)
			for _, c := range got {
				assert.EqualValues(t, 1, c.MessageCount, c.ID)
				require.NotNil(t, c.LastMessage, c.ID)
			}
		})
	}
}

// TestImportBeforeAPosition imports a message before a reader's position
// into a conversation whose message before it is not folded yet: the
// reader has read both, and the import counts neither twice. (Found by
// review: the import's recount of readers changed no row, and once it
// did, counted the tallied message that the fold then counted again.)
func TestImportBeforeAPosition(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			s := open(t, e.DSN(t))
			require.NoError(t, s.Migrate(ctx))
			base := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
			alice := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: base}
			bob := messaging.Contact{ID: ids.New(ids.Contact), Username: "bob", CreatedAt: base}
			require.NoError(t, s.PutContact(ctx, alice))
			require.NoError(t, s.PutContact(ctx, bob))
			mk := func(sec int) messaging.Message {
				at := base.Add(time.Duration(sec) * time.Second)
				return messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: "c", Contact: alice, Text: "hi", CreatedAt: at}
			}
			m3 := mk(3)
			require.NoError(t, s.CreateMessage(ctx, m3, nil, nil))
			require.NoError(t, s.MarkRead(ctx, "c", bob.ID, m3.ID, nil))
			require.NoError(t, s.CreateMessage(ctx, mk(2), nil, nil)) // tallied, before bob's position
			require.NoError(t, s.ImportMessages(ctx, []messaging.Message{mk(1)}))
			got, err := s.GetConversation(ctx, "c", bob.ID)
			require.NoError(t, err)
			assert.EqualValues(t, 3, got.MessageCount)
			assert.EqualValues(t, 0, got.UnreadCount)
		})
	}
}

// TestFoldMakesAMissingConversation deletes the row of a conversation
// whose message is tallied (nothing does that; a damaged database might):
// the fold makes the row again rather than drop the count.
func TestFoldMakesAMissingConversation(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		if e.Name == "sqlite" {
			continue // counts in the send: no tallies
		}
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			s := open(t, e.DSN(t))
			require.NoError(t, s.Migrate(ctx))
			alice := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: time.Now().UTC()}
			require.NoError(t, s.PutContact(ctx, alice))
			at := time.Now().UTC().Truncate(time.Microsecond)
			m := messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: "c", Contact: alice, Text: "hi", CreatedAt: at}
			require.NoError(t, s.CreateMessage(ctx, m, nil, nil))
			_, err := s.DB().ExecContext(ctx, "DELETE FROM conversations WHERE id = 'c'")
			require.NoError(t, err)
			got, err := s.GetConversation(ctx, "c", alice.ID)
			require.NoError(t, err)
			assert.EqualValues(t, 1, got.MessageCount)
			require.NotNil(t, got.LastMessage)
			assert.Equal(t, m.ID, got.LastMessage.ID)
		})
	}
}
