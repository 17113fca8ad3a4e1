package sqlstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/sqlstore"
)

// staleStore returns a PostgreSQL store with a pool of conns
// connections, and alter, which changes the type of the column text of
// messages to typ from a connection of another store, as a newer
// instance's migration would during a rolling deployment: the server then
// refuses to run the statements that the first prepared and that return
// the column ("cached plan must not change result type").
func staleStore(t *testing.T, conns int) (s *sqlstore.Store, alter func(typ string)) {
	t.Helper()
	dsn := engine(t, "postgres").DSN(t)
	other := open(t, dsn)
	require.NoError(t, other.Migrate(t.Context()))
	s = open(t, dsn, &sqlstore.Options{Logger: discard, MaxOpenConns: conns})
	return s, func(typ string) {
		t.Helper()
		_, err := other.DB().ExecContext(t.Context(), "ALTER TABLE messages ALTER COLUMN text TYPE "+typ)
		require.NoError(t, err)
	}
}

// TestStaleReadOnPostgres: a read by a prepared statement (GetMessage)
// after another connection changed the type of a column it returns gives
// the message, and the statement is prepared again.
func TestStaleReadOnPostgres(t *testing.T) {
	s, alter := staleStore(t, 1)
	ctx := t.Context()
	alice := putContact(t, s, "alice")
	m := send(t, s, "c", alice, sec(1))
	_, err := s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: alice.ID, Add: []string{"x"}}})
	require.NoError(t, err)
	want, err := s.Driver().GetMessage(ctx, m.ID)
	require.NoError(t, err)
	require.Equal(t, "hi", want.Text)
	require.Len(t, want.Reactions, 1)
	prepared := sqlstore.Prepared(s)
	require.Positive(t, prepared)
	// The names of the server's statements of GetMessage's query, on the
	// store's one connection.
	names := func() []string {
		t.Helper()
		var names []string
		require.NoError(t, s.DB().NewRaw(`SELECT name || ' ' || prepare_time::text FROM pg_prepared_statements
			WHERE statement LIKE 'SELECT m.id, m.conversation_id, %' AND statement LIKE '% WHERE m.id = $1'`).Scan(ctx, &names))
		return names
	}
	stale := names()
	require.Len(t, stale, 1)

	alter("varchar(20000)")
	for range 3 {
		got, err := s.Driver().GetMessage(ctx, m.ID)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	assert.Equal(t, prepared, sqlstore.Prepared(s), "prepared again")
	assert.Eventually(t, func() bool {
		now := names()
		return len(now) == 1 && now[0] != stale[0]
	}, 5*time.Second, 10*time.Millisecond, "prepared again, and the stale statement closed")
}

// TestStaleReadsConcurrentOnPostgres: reads that run one prepared
// statement on several connections when it turns stale all succeed: the
// first to meet the error drops the statement, the others meet the error
// too, or find the statement closed, and run the read again as well.
func TestStaleReadsConcurrentOnPostgres(t *testing.T) {
	s, alter := staleStore(t, 4)
	ctx := t.Context()
	alice := putContact(t, s, "alice")
	m := send(t, s, "c", alice, sec(1))
	want, err := s.Driver().GetMessage(ctx, m.ID)
	require.NoError(t, err)
	reads := func() []error {
		errs := make([]error, 8)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() {
				for range 5 {
					got, err := s.Driver().GetMessage(ctx, m.ID)
					if err == nil && got.Text != want.Text {
						err = assert.AnError
					}
					if err != nil {
						errs[i] = err
						return
					}
				}
			})
		}
		wg.Wait()
		return errs
	}
	for _, err := range reads() { // prepared on every connection
		require.NoError(t, err)
	}
	for _, typ := range []string{"varchar(20000)", "text", "varchar(30000)"} {
		alter(typ)
		for _, err := range reads() {
			assert.NoError(t, err, "after the column became %s", typ)
		}
	}
}

// TestStaleSendOnPostgres: a send, one prepared statement outside a
// transaction, succeeds after another connection changed the type of a
// column it writes. It returns no columns: the server plans it again by
// itself and never refuses it, so this holds without the store's
// recovery too; it pins that a send needs none.
func TestStaleSendOnPostgres(t *testing.T) {
	s, alter := staleStore(t, 1)
	ctx := t.Context()
	alice := putContact(t, s, "alice")
	send(t, s, "c", alice, sec(1))
	prepared := sqlstore.Prepared(s)
	require.Positive(t, prepared, "the send is prepared")

	alter("varchar(20000)")
	at := sec(2)
	m := messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: "c", Contact: alice, Text: "after", CreatedAt: at}
	require.NoError(t, s.Driver().CreateMessage(ctx, m, nil, nil))
	items, _, err := s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 10}})
	require.NoError(t, err)
	require.Len(t, items, 2)
	assert.Equal(t, "after", items[0].Text)
	assert.Equal(t, prepared+1, sqlstore.Prepared(s), "the send's statement is kept; the page's is prepared")
}

// TestStaleTransactionOnPostgres: the transactions of a reaction and of an
// edit, which run prepared statements once a first transaction ran them,
// succeed after another connection changed the type of a column those
// return: the statement aborts the transaction, which is run again
// without it; it is prepared again after, and the next transaction runs
// prepared statements only.
func TestStaleTransactionOnPostgres(t *testing.T) {
	s, alter := staleStore(t, 1)
	ctx := t.Context()
	alice, bob := putContact(t, s, "alice"), putContact(t, s, "bob")
	m := send(t, s, "c", alice, sec(1))
	react := func(who messaging.Contact) messaging.Message {
		t.Helper()
		got, err := s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: who.ID, Add: []string{"x"}}})
		require.NoError(t, err)
		return got
	}
	takeBack := func(who messaging.Contact) messaging.Message {
		t.Helper()
		got, err := s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: who.ID, Remove: []string{"x"}}})
		require.NoError(t, err)
		return got
	}
	edit := func(text string, at int) messaging.Message {
		t.Helper()
		got, err := s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Text: &text, UpdatedAt: sec(at)})
		require.NoError(t, err)
		return got
	}
	for range 2 { // the second runs prepared statements
		react(alice)
		edit("edited", 2) // with a reaction to read
		takeBack(alice)
	}
	_, err := s.Driver().GetMessage(ctx, m.ID)
	require.NoError(t, err)
	prepared := sqlstore.Prepared(s)

	alter("varchar(20000)")
	added := react(bob)
	assert.Equal(t, []messaging.Reaction{{Name: "x", Reactors: []string{"bob"}, Count: 1}}, added.Reactions)
	assert.Equal(t, "edited", added.Text)
	edited := edit("edited again", 3)
	assert.Equal(t, "edited again", edited.Text)
	assert.Equal(t, sec(3), edited.UpdatedAt)
	assert.Equal(t, added.Reactions, edited.Reactions)
	got, err := s.Driver().GetMessage(ctx, m.ID)
	require.NoError(t, err)
	assert.Equal(t, got, edited, "the answer is the message as stored")
	left := takeBack(bob)
	assert.Empty(t, left.Reactions)
	assert.Equal(t, "edited again", left.Text)

	statements := sqlstore.RecordWrites(s)
	react(alice)
	takeBack(alice)
	edit("edited once more", 4)
	assert.Equal(t, []string{"BEGIN", "COMMIT", "BEGIN", "COMMIT", "BEGIN", "COMMIT"}, statements(),
		"prepared again after the transactions that recovered")
	_, err = s.Driver().GetMessage(ctx, m.ID)
	require.NoError(t, err)
	assert.Equal(t, prepared, sqlstore.Prepared(s))
}

// TestStaleExecWriteOnPostgres: a prepared write that returns columns,
// run as execWrite runs the writes (a send's statement outside a
// transaction, those of reactions inside one), succeeds after another
// connection changed the type of one of them. No write of the store
// returns columns through it yet: the server would refuse them as it
// does reads.
func TestStaleExecWriteOnPostgres(t *testing.T) {
	const touch = "UPDATE messages SET text = text || ? WHERE id = ? RETURNING text"
	t.Run("outside a transaction", func(t *testing.T) {
		s, alter := staleStore(t, 1)
		ctx := t.Context()
		m := send(t, s, "c", putContact(t, s, "alice"), sec(1))
		prepared := sqlstore.Prepared(s)
		_, err := sqlstore.ExecWrite(s, ctx, s.DB(), touch, "!", m.ID)
		require.NoError(t, err)
		require.Equal(t, prepared+1, sqlstore.Prepared(s), "prepared")

		alter("varchar(20000)")
		for range 2 {
			res, err := sqlstore.ExecWrite(s, ctx, s.DB(), touch, "!", m.ID)
			require.NoError(t, err)
			n, err := res.RowsAffected()
			require.NoError(t, err)
			assert.EqualValues(t, 1, n)
		}
		assert.Equal(t, prepared+1, sqlstore.Prepared(s), "prepared again")
		got, err := s.Driver().GetMessage(ctx, m.ID)
		require.NoError(t, err)
		assert.Equal(t, "hi!!!", got.Text, "each write made once")
	})
	t.Run("in a transaction", func(t *testing.T) {
		s, alter := staleStore(t, 1)
		ctx := t.Context()
		m := send(t, s, "c", putContact(t, s, "alice"), sec(1))
		runs := 0
		write := func() {
			t.Helper()
			require.NoError(t, sqlstore.Write(s, ctx, func(ctx context.Context, tx bun.Tx) error {
				runs++
				_, err := sqlstore.ExecWrite(s, ctx, tx, touch, "!", m.ID)
				return err
			}))
		}
		write() // unprepared, then prepared after the transaction
		write() // prepared
		prepared := sqlstore.Prepared(s)

		alter("varchar(20000)")
		runs = 0
		write()
		assert.Equal(t, 2, runs, "aborted, and run again")
		runs = 0
		write()
		assert.Equal(t, 1, runs)
		assert.Equal(t, prepared, sqlstore.Prepared(s), "prepared again")
		got, err := s.Driver().GetMessage(ctx, m.ID)
		require.NoError(t, err)
		assert.Equal(t, "hi!!!!", got.Text, "each write made once")
	})
}
