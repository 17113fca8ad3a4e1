package sqlstore_test

import (
	"strings"
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

// eventIDsVersion is the schema version from which SQLite stores no event
// ids; PostgreSQL stores none from a later one.
const eventIDsVersion = "20261123000005"

// TestEventIDsUpgrade migrates a database holding an event stored with its
// id: that event keeps its id and is still found by it; events stored
// after are found by theirs, which on SQLite and PostgreSQL the store
// makes of the seq (no id is stored, so no index on it is written by a
// send). MySQL keeps the Recorder's.
func TestEventIDsUpgrade(t *testing.T) {
	eachEngineBefore(t, eventIDsVersion, func(t *testing.T, engine string, s *sqlstore.Store) {
		ctx := t.Context()

		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		old := ids.NewAt(ids.Event, at)
		_, err := s.DB().ExecContext(ctx, "INSERT INTO events (id, type, conversation_id, created_at, payload) VALUES (?, ?, ?, ?, ?)",
			old, string(messaging.EventMessageDeleted), "c", at, `{"DeletedID":"msg_gone"}`)
		require.NoError(t, err)

		require.NoError(t, s.Migrate(ctx))
		require.NoError(t, s.Migrate(ctx), "again: nothing to do")

		alice := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: at}
		require.NoError(t, s.PutContact(ctx, alice))
		m := messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: "c", Contact: alice, Text: "after", CreatedAt: at.Add(time.Second)}
		given := ids.NewAt(ids.Event, m.CreatedAt)
		rec := func(c driver.Change) []messaging.Event {
			return []messaging.Event{{ID: given, Type: messaging.EventMessageCreated, ConversationID: "c", Created: m.CreatedAt, Message: c.Message}}
		}
		require.NoError(t, s.CreateMessage(ctx, m, nil, rec))

		got, err := s.ReadEvents(ctx, driver.EventQuery{All: true, Limit: 10})
		require.NoError(t, err)
		require.Len(t, got, 2)
		assert.Equal(t, old, got[0].ID, "an event from before keeps its id")
		assert.Equal(t, "msg_gone", got[0].DeletedID)
		newID := got[1].ID
		if engine != "mysql" {
			seq, ok := ids.SeqOf(ids.Event, newID)
			require.True(t, ok, "%s gives an id that carries the seq: %q", engine, newID)
			assert.Equal(t, got[1].Seq, seq)
			var stored []bool
			require.NoError(t, s.DB().NewRaw("SELECT id IS NULL FROM events ORDER BY seq").Scan(ctx, &stored))
			assert.Equal(t, []bool{false, true}, stored, "no id is stored after the upgrade")
			// The id of another database's event with the same seq (another
			// time) is not this one.
			_, err := s.GetEvent(ctx, ids.Sequenced(ids.Event, at.Add(time.Hour), seq))
			assert.ErrorIs(t, err, messaging.ErrNotFound)
		} else {
			assert.Equal(t, given, newID, "the Recorder's id is kept")
		}
		for _, want := range got {
			g, err := s.GetEvent(ctx, want.ID)
			require.NoError(t, err, want.ID)
			assert.Equal(t, want, g)
		}
	})
}

// TestPostgresEventIndexes: after an upgrade, as in a new database, the
// events' indexes of seq hold only numbered rows and the id is indexed only
// where it is stored; the readers' queries still use them.
func TestPostgresEventIndexes(t *testing.T) {
	eachEngineBefore(t, eventIDsVersion, func(t *testing.T, engine string, s *sqlstore.Store) {
		if engine != "postgres" {
			return
		}
		ctx := t.Context()
		require.NoError(t, s.Migrate(ctx))
		var defs []string
		require.NoError(t, s.DB().NewRaw(`SELECT regexp_replace(indexdef, ' ON \S+', ' ON') FROM pg_indexes
			WHERE tablename = 'events' AND schemaname = current_schema() ORDER BY indexname`).Scan(ctx, &defs))
		assert.Equal(t, []string{
			"CREATE INDEX events_conversation_numbered ON USING btree (conversation_id, seq) WHERE (seq IS NOT NULL)",
			"CREATE UNIQUE INDEX events_numbered ON USING btree (seq) WHERE (seq IS NOT NULL)",
			"CREATE UNIQUE INDEX events_pkey ON USING btree (pos)",
			"CREATE UNIQUE INDEX events_stored_id ON USING btree (id) WHERE (id IS NOT NULL)",
			"CREATE INDEX events_unnumbered ON USING btree (pos) WHERE (seq IS NULL)",
		}, defs)

		conn, err := s.DB().Conn(ctx)
		require.NoError(t, err)
		defer conn.Close()
		_, err = conn.ExecContext(ctx, "SET enable_seqscan = off")
		require.NoError(t, err)
		for _, q := range []struct {
			query, index string
			args         []any
		}{
			{"SELECT * FROM events AS e WHERE e.seq > ? ORDER BY e.seq LIMIT 10", "events_numbered", []any{0}},
			{"SELECT * FROM events AS e WHERE e.seq > ? AND e.conversation_id IN (?) ORDER BY e.seq LIMIT 10", "events_conversation_numbered", []any{0, bun.List([]string{"c1", "c2"})}},
			{"SELECT * FROM events AS e WHERE e.id = ? AND e.seq > 0", "events_stored_id", []any{"evt_x"}},
		} {
			var plan []string
			require.NoError(t, conn.NewRaw("EXPLAIN "+q.query, q.args...).Scan(ctx, &plan))
			assert.Contains(t, strings.Join(plan, "\n"), q.index, q.query)
		}
	})
}

// TestPostgresSendsBeforeEventIDsMigration: a store (of a newer instance)
// on a database that is not migrated to the version without event ids yet
// stores its events with their ids, as that schema requires, so its sends
// succeed; once it finds the version applied, without. Events of both
// kinds are found by their ids.
func TestPostgresSendsBeforeEventIDsMigration(t *testing.T) {
	eachEngineBefore(t, "20261124000001", func(t *testing.T, engine string, s *sqlstore.Store) {
		if engine != "postgres" {
			return
		}
		ctx := t.Context()
		// As when a Feed starts: it reads the newest event first.
		_, err := s.LastEvent(ctx)
		require.ErrorIs(t, err, messaging.ErrNotFound)

		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		alice := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: at}
		require.NoError(t, s.PutContact(ctx, alice))
		send := func(given string) {
			t.Helper()
			m := messaging.Message{ID: ids.New(ids.Message), ConversationID: "c", Contact: alice, Text: "hi", CreatedAt: at}
			rec := func(c driver.Change) []messaging.Event {
				return []messaging.Event{{ID: given, Type: messaging.EventMessageCreated, ConversationID: "c", Created: at, Message: c.Message}}
			}
			require.NoError(t, s.CreateMessage(ctx, m, nil, rec))
		}
		before, meanwhile := ids.NewAt(ids.Event, at), ids.NewAt(ids.Event, at)
		send(before)
		// Another process migrates: this one goes on storing ids (it asks
		// again within a minute).
		require.NoError(t, sqlstore.MigrateTo(s, ctx, sqlstore.Versions()[len(sqlstore.Versions())-1]))
		send(meanwhile)
		// An instance that starts now finds the version applied when its
		// Feed starts.
		sqlstore.ForgetEventIDs(s)
		_, err = s.LastEvent(ctx)
		require.NoError(t, err)
		send(ids.NewAt(ids.Event, at))

		got, err := s.ReadEvents(ctx, driver.EventQuery{All: true, Limit: 10})
		require.NoError(t, err)
		require.Len(t, got, 3)
		assert.Equal(t, before, got[0].ID, "stored with its id before the migration")
		assert.Equal(t, meanwhile, got[1].ID, "and by an instance that has not seen it yet")
		seq, ok := ids.SeqOf(ids.Event, got[2].ID)
		require.True(t, ok, "made of its seq by one that has: %q", got[2].ID)
		assert.Equal(t, got[2].Seq, seq)
		for _, want := range got {
			g, err := s.GetEvent(ctx, want.ID)
			require.NoError(t, err, want.ID)
			assert.Equal(t, want, g)
		}
	})
}
