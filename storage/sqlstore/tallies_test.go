package sqlstore_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/sqlstore"
	"github.com/parleychat/parley/storage/storecopy"
)

// counterRows returns the conversations and members a snapshot of s
// gives, and the number of tallies (messages not counted yet) in s.
func counterRows(t *testing.T, s *sqlstore.Store) ([]storecopy.Conversation, []storecopy.Member, int) {
	t.Helper()
	ctx := t.Context()
	snap, err := s.Driver().(storecopy.Source).Snapshot(ctx)
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

// eachMigrated runs fn, in a subtest of each SQL engine of the tests but
// except ("" for none), on a new migrated store.
func eachMigrated(t *testing.T, except string, fn func(t *testing.T, engine string, s *sqlstore.Store)) {
	t.Helper()
	for _, e := range backendtest.SQL(t) {
		if e.Name == except {
			continue
		}
		t.Run(e.Name, func(t *testing.T) {
			s := open(t, e.DSN(t))
			require.NoError(t, s.Migrate(t.Context()))
			fn(t, e.Name, s)
		})
	}
}

// base is the time the contacts of these tests are created at.
var base = time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)

// putContact stores a contact named name.
func putContact(t *testing.T, s *sqlstore.Store, name string) messaging.Contact {
	t.Helper()
	c := messaging.Contact{ID: ids.New(ids.Contact), Username: name, CreatedAt: base}
	require.NoError(t, s.Driver().PutContact(t.Context(), c))
	return c
}

// send stores a message of who in conv, created at at.
func send(t *testing.T, s *sqlstore.Store, conv string, who messaging.Contact, at time.Time) messaging.Message {
	t.Helper()
	m := messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: conv, Contact: who, Text: "hi", CreatedAt: at}
	require.NoError(t, s.Driver().CreateMessage(t.Context(), m, nil, nil))
	return m
}

// sec is base and sec seconds.
func sec(n int) time.Time { return base.Add(time.Duration(n) * time.Second) }

// TestSnapshotCountsTallies checks that a snapshot, which never writes,
// gives the counters that a fold makes of the messages not counted yet: a
// late message before a reader's position, one after it, the reader's own
// and a new sender's first.
func TestSnapshotCountsTallies(t *testing.T) {
	eachMigrated(t, "", func(t *testing.T, engine string, s *sqlstore.Store) {
		ctx := t.Context()
		alice, bob, carol := putContact(t, s, "alice"), putContact(t, s, "bob"), putContact(t, s, "carol")
		send(t, s, "c", alice, sec(1))
		m3 := send(t, s, "c", alice, sec(3))
		require.NoError(t, s.Driver().MarkRead(ctx, "c", bob.ID, m3.ID, nil))

		send(t, s, "c", alice, sec(2)) // before bob's position
		send(t, s, "c", alice, sec(4))
		send(t, s, "c", bob, sec(5))
		send(t, s, "c", carol, sec(6)) // carol's first
		convs, members, tallies := counterRows(t, s)
		if engine != "sqlite" {
			assert.Equal(t, 4, tallies, "the sends after the read are not counted yet")
		}

		got, err := s.Driver().GetConversation(ctx, "c", bob.ID) // folds
		require.NoError(t, err)
		assert.EqualValues(t, 6, got.MessageCount)
		assert.EqualValues(t, 2, got.UnreadCount, "alice's message after the position, and carol's")
		folded, foldedMembers, tallies := counterRows(t, s)
		if engine != "sqlite" {
			assert.Zero(t, tallies, "a read folds the tallies")
		}
		assert.Equal(t, folded, convs, "the snapshot counts the tallies as the fold does")
		assert.Equal(t, foldedMembers, members)
	})
}

// TestSendIsPrepared checks that the statements of a send are prepared
// once, none formatted by bun: on PostgreSQL one statement, which the
// first send prepares and the next ones reuse; on SQLite those prepared on
// the writer by Migrate.
func TestSendIsPrepared(t *testing.T) {
	eachMigrated(t, "mysql", func(t *testing.T, engine string, s *sqlstore.Store) {
		alice := putContact(t, s, "alice")
		formatted := sqlstore.CountWrites(s)
		before := sqlstore.Prepared(s)
		send(t, s, "a", alice, time.Now().UTC())
		first := sqlstore.Prepared(s)
		if engine == "postgres" {
			assert.Equal(t, before+1, first, "the first send prepares its statement")
		}
		send(t, s, "a", alice, time.Now().UTC())
		send(t, s, "b", alice, time.Now().UTC())
		assert.Equal(t, first, sqlstore.Prepared(s), "later sends reuse it")
		assert.Zero(t, formatted.Load(), "statements formatted by bun")
		got, err := s.Driver().GetConversation(t.Context(), "a", alice.ID)
		require.NoError(t, err)
		assert.EqualValues(t, 2, got.MessageCount)
	})
}

// TestFoldReachesEveryConversation sends to more conversations than one
// fold transaction takes, with no fold between the sends, then lists them:
// every one is counted.
func TestFoldReachesEveryConversation(t *testing.T) {
	eachMigrated(t, "", func(t *testing.T, _ string, s *sqlstore.Store) {
		alice := putContact(t, s, "alice")
		sqlstore.SetFoldEvery(s, 0)
		const convs = 130 // more than a fold's transaction takes
		for i := range convs {
			send(t, s, fmt.Sprintf("c%03d", i), alice, time.Now().UTC())
		}
		got, more, err := s.Driver().ListConversations(t.Context(), driver.ConversationQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: convs}, ViewerID: alice.ID})
		require.NoError(t, err)
		assert.False(t, more)
		require.Len(t, got, convs)
		for _, c := range got {
			assert.EqualValues(t, 1, c.MessageCount, c.ID)
			require.NotNil(t, c.LastMessage, c.ID)
		}
	})
}

// TestImportBeforeAPosition imports a message before a reader's position
// into a conversation whose message before it is not folded yet: the
// reader has read both, and the import counts neither twice. (Found by
// review: the import's recount of readers changed no row, and once it
// did, counted the tallied message that the fold then counted again.)
func TestImportBeforeAPosition(t *testing.T) {
	eachMigrated(t, "", func(t *testing.T, _ string, s *sqlstore.Store) {
		ctx := t.Context()
		alice, bob := putContact(t, s, "alice"), putContact(t, s, "bob")
		m3 := send(t, s, "c", alice, sec(3))
		require.NoError(t, s.Driver().MarkRead(ctx, "c", bob.ID, m3.ID, nil))
		send(t, s, "c", alice, sec(2)) // tallied, before bob's position
		m1 := messaging.Message{ID: ids.NewAt(ids.Message, sec(1)), ConversationID: "c", Contact: alice, Text: "hi", CreatedAt: sec(1)}
		require.NoError(t, importer(s).ImportMessages(ctx, []messaging.Message{m1}))
		got, err := s.Driver().GetConversation(ctx, "c", bob.ID)
		require.NoError(t, err)
		assert.EqualValues(t, 3, got.MessageCount)
		assert.EqualValues(t, 0, got.UnreadCount)
	})
}

// TestFoldMakesAMissingConversation deletes the row of a conversation
// whose message is tallied (nothing does that; a damaged database might):
// the fold makes the row again rather than drop the count. (SQLite counts
// in the send: no tallies.)
func TestFoldMakesAMissingConversation(t *testing.T) {
	eachMigrated(t, "sqlite", func(t *testing.T, _ string, s *sqlstore.Store) {
		ctx := t.Context()
		alice := putContact(t, s, "alice")
		m := send(t, s, "c", alice, time.Now().UTC().Truncate(time.Microsecond))
		_, err := s.DB().ExecContext(ctx, "DELETE FROM conversations WHERE id = 'c'")
		require.NoError(t, err)
		got, err := s.Driver().GetConversation(ctx, "c", alice.ID)
		require.NoError(t, err)
		assert.EqualValues(t, 1, got.MessageCount)
		require.NotNil(t, got.LastMessage)
		assert.Equal(t, m.ID, got.LastMessage.ID)
	})
}

// TestSequencerReadsUnnumberedIndex checks, on PostgreSQL, that the
// sequencer reads the events to number with a plain index scan, which
// marks the entries that numbering left dead, not a bitmap scan of the seq
// index's NULLs, which reads every event numbered since the last vacuum
// again on each pass.
func TestSequencerReadsUnnumberedIndex(t *testing.T) {
	e := engine(t, "postgres")
	s := open(t, e.DSN(t))
	ctx := t.Context()
	require.NoError(t, s.Migrate(ctx))
	alice := putContact(t, s, "alice")
	rec := func(c driver.Change) []messaging.Event {
		return []messaging.Event{{ID: ids.New(ids.Event), Type: messaging.EventMessageCreated, ConversationID: c.Message.ConversationID, Created: c.Message.CreatedAt, Message: c.Message}}
	}
	sendEvents := func(n int) {
		for i := range n {
			at := time.Now().UTC()
			m := messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: "c", Contact: alice, Text: fmt.Sprint(i), CreatedAt: at}
			require.NoError(t, s.Driver().CreateMessage(ctx, m, nil, rec))
		}
	}
	sendEvents(300)
	_, err := s.Driver().ReadEvents(ctx, driver.EventQuery{Scope: driver.Scope{All: true}, Limit: 1}) // numbers them: 300 dead entries
	require.NoError(t, err)
	sendEvents(5)
	_, err = s.DB().ExecContext(ctx, "ANALYZE events")
	require.NoError(t, err)

	statements := sqlstore.RecordWrites(s)
	_, err = s.Driver().ReadEvents(ctx, driver.EventQuery{Scope: driver.Scope{All: true}, Limit: 1})
	require.NoError(t, err)
	var numbering []string // the statements of the numbering transaction
	for _, q := range statements() {
		if q == "BEGIN" || len(numbering) > 0 {
			numbering = append(numbering, q)
		}
		if q == "COMMIT" && len(numbering) > 0 {
			break
		}
	}
	require.NotEmpty(t, numbering, "a transaction numbered the events")
	var pending string
	for i, q := range numbering {
		if strings.HasPrefix(q, "SELECT pos FROM events WHERE seq IS NULL") {
			pending = q
			assert.Contains(t, numbering[:i], "SET LOCAL enable_bitmapscan = off", "the setting comes before the read")
		}
	}
	require.NotEmpty(t, pending, "the transaction reads the unnumbered events")

	text := planWithoutBitmaps(t, s, pending)
	// A plain scan of either index marks the dead entries it meets.
	assert.Regexp(t, `Index (Only )?Scan using events_(unnumbered|seq_key)`, text)
	assert.NotContains(t, text, "Bitmap")
}

// TestFoldReadsTalliesByIndexScan checks, on PostgreSQL, that a fold reads
// the tallies it counts with a plain scan of their index, which marks the
// entries of the tallies that earlier folds deleted, not a bitmap scan,
// which reads every tally deleted since the last vacuum on each fold.
func TestFoldReadsTalliesByIndexScan(t *testing.T) {
	e := engine(t, "postgres")
	s := open(t, e.DSN(t))
	ctx := t.Context()
	require.NoError(t, s.Migrate(ctx))
	sqlstore.SetFoldEvery(s, 1<<30)
	alice := putContact(t, s, "alice")
	for i := range 300 {
		send(t, s, "c", alice, sec(i))
	}
	_, err := s.Driver().GetConversation(ctx, "c", alice.ID) // folds them: 300 dead entries
	require.NoError(t, err)
	for i := range 5 {
		send(t, s, "c", alice, sec(300+i))
	}
	// Tallies of other conversations, not folded here, make the table as
	// large as it is under sends, where a seq scan would cost more.
	_, err = s.DB().ExecContext(ctx, `INSERT INTO message_tallies (message_id, conversation_id, contact_id, created_at)
		SELECT 'msg_other_' || i, 'other_' || (i % 50), 'ctc_x', now() FROM generate_series(1, 20000) AS i`)
	require.NoError(t, err)
	_, err = s.DB().ExecContext(ctx, "ANALYZE message_tallies")
	require.NoError(t, err)

	statements := sqlstore.RecordWrites(s)
	got, err := s.Driver().GetConversation(ctx, "c", alice.ID)
	require.NoError(t, err)
	assert.EqualValues(t, 305, got.MessageCount)
	var read string
	for i, q := range statements() {
		if strings.HasPrefix(q, "SELECT message_id, conversation_id, contact_id, created_at FROM message_tallies") {
			read = q
			assert.Contains(t, statements()[:i], "SET LOCAL enable_bitmapscan = off", "the setting comes before the read")
		}
	}
	require.NotEmpty(t, read, "the fold reads the tallies")

	text := planWithoutBitmaps(t, s, read)
	assert.Contains(t, text, "Index Scan using message_tallies_conversation")
	assert.NotContains(t, text, "Bitmap")
}

// planWithoutBitmaps is PostgreSQL's plan of query (a statement as bun
// formatted it) under SET LOCAL enable_bitmapscan = off, as the store's
// transactions that set it plan it.
func planWithoutBitmaps(t *testing.T, s *sqlstore.Store, query string) string {
	t.Helper()
	tx, err := s.DB().BeginTx(t.Context(), nil)
	require.NoError(t, err)
	defer tx.Rollback()
	_, err = tx.ExecContext(t.Context(), "SET LOCAL enable_bitmapscan = off")
	require.NoError(t, err)
	var plan []string
	require.NoError(t, tx.NewRaw("EXPLAIN "+query).Scan(t.Context(), &plan))
	return strings.Join(plan, "\n")
}
