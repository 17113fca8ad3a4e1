package sqlstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/sqlstore"
)

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

// TestSendIsPrepared checks that the statements of a send are prepared
// once, none formatted by bun: on PostgreSQL one statement, which the
// first send prepares and the next ones reuse; on SQLite those the first
// send ran, prepared on the writer after its commit.
func TestSendIsPrepared(t *testing.T) {
	eachMigrated(t, "mysql", func(t *testing.T, engine string, s *sqlstore.Store) {
		alice := putContact(t, s, "alice")
		if engine == "sqlite" {
			send(t, s, "w", alice, time.Now().UTC())
		}
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

// TestImportBeforeAPosition imports a message before a reader's position
// into a conversation with a late message before it: the reader has read
// both, and the import counts neither twice.
func TestImportBeforeAPosition(t *testing.T) {
	eachMigrated(t, "", func(t *testing.T, _ string, s *sqlstore.Store) {
		ctx := t.Context()
		alice, bob := putContact(t, s, "alice"), putContact(t, s, "bob")
		m3 := send(t, s, "c", alice, sec(3))
		require.NoError(t, s.Driver().MarkRead(ctx, "c", bob.ID, m3.ID, nil))
		send(t, s, "c", alice, sec(2)) // before bob's position
		m1 := messaging.Message{ID: ids.NewAt(ids.Message, sec(1)), ConversationID: "c", Contact: alice, Text: "hi", CreatedAt: sec(1)}
		require.NoError(t, importer(s).ImportMessages(ctx, []messaging.Message{m1}))
		got, err := s.Driver().GetConversation(ctx, "c", bob.ID)
		require.NoError(t, err)
		assert.EqualValues(t, 3, got.MessageCount)
		assert.EqualValues(t, 0, got.UnreadCount)
	})
}
