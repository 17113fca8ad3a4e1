package sqlstore_test

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/sqlstore"
)

// The outbox of PostgreSQL (DESIGN.md §4.3): writers insert into
// event_log, the sequencer copies the committed rows into events and keeps
// the positions it passed uncommitted as holes, fenced by its xid.

// openOutbox returns a migrated PostgreSQL store and a contact of it.
func openOutbox(t *testing.T) (*sqlstore.Store, messaging.Contact) {
	t.Helper()
	e := engine(t, "postgres")
	s := open(t, e.DSN(t))
	require.NoError(t, s.Migrate(t.Context()))
	return s, putContact(t, s, "alice")
}

// sendWithEvent stores a message of who in conv with its created event.
func sendWithEvent(t *testing.T, s *sqlstore.Store, conv string, who messaging.Contact) {
	t.Helper()
	rec := func(c driver.Change) []messaging.Event {
		return []messaging.Event{{ID: ids.New(ids.Event), Type: messaging.EventMessageCreated, ConversationID: c.Message.ConversationID,
			Created: c.Message.CreatedAt, Message: c.Message}}
	}
	at := time.Now().UTC()
	m := messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: conv, Contact: who, Text: "hi", CreatedAt: at}
	require.NoError(t, s.Driver().CreateMessage(t.Context(), m, nil, rec))
}

// logEvents inserts n events into event_log in tx, as writers do, each
// named by its payload's DeletedID (mark-i).
func logEvents(t *testing.T, tx *sql.Tx, mark string, n int) {
	t.Helper()
	_, err := tx.ExecContext(t.Context(), `INSERT INTO event_log (type, conversation_id, created_at, payload)
		SELECT 'message.deleted', 'c', now(), json_build_object('DeletedID', $1::text || '-' || i)::text FROM generate_series(1, $2::int) AS i`, mark, n)
	require.NoError(t, err)
}

// readAll reads every event after after.
func readAll(t *testing.T, s *sqlstore.Store, after int64) []messaging.Event {
	t.Helper()
	evs, err := s.Driver().ReadEvents(t.Context(), driver.EventQuery{Scope: driver.Scope{All: true}, After: after, Limit: 10000})
	require.NoError(t, err)
	return evs
}

// holes returns the sequencer's holes, as "from-to" ranges.
func holes(t *testing.T, s *sqlstore.Store) []string {
	t.Helper()
	var out []string
	require.NoError(t, s.DB().NewRaw(`SELECT h.lo || '-' || h.hi FROM event_sequence AS q, unnest(q.hole_from, q.hole_to) AS h(lo, hi)
		WHERE q.id = 1 ORDER BY h.lo`).Scan(t.Context(), &out))
	return out
}

// TestOutboxKeepsAnEarlyUncommittedEvent checks that an event whose
// transaction holds its position while later events commit and are read,
// pass after pass, is delivered once it commits, after those: its hole is
// never forgotten while its transaction runs.
func TestOutboxKeepsAnEarlyUncommittedEvent(t *testing.T) {
	s, alice := openOutbox(t)
	after := keepsAnEarlyUncommittedEvent(t, s, alice, nil, logEvents, holes)
	require.Eventually(t, func() bool { readAll(t, s, after); return len(holes(t, s)) == 0 }, 10*time.Second, 50*time.Millisecond,
		"the rollbacks' holes are forgotten")
}

// keepsAnEarlyUncommittedEvent logs an event in a transaction (begun with
// opts) left open while 30 passes send, roll back and read later events,
// checks that it is never read while open, that its position stays a hole
// (by holes), and that it is read once committed, after those. It returns
// the last position read. log inserts events as the engine's writers do.
func keepsAnEarlyUncommittedEvent(t *testing.T, s *sqlstore.Store, alice messaging.Contact, opts *sql.TxOptions,
	log func(*testing.T, *sql.Tx, string, int), holes func(*testing.T, *sqlstore.Store) []string) int64 {
	t.Helper()
	ctx := t.Context()
	sendWithEvent(t, s, "c", alice)
	last := readAll(t, s, 0)
	require.Len(t, last, 1)
	after := last[0].Seq

	early, err := s.DB().DB.BeginTx(ctx, opts)
	require.NoError(t, err)
	defer early.Rollback()
	log(t, early, "early", 1)

	seen := 0
	for pass := range 30 {
		sendWithEvent(t, s, "c", alice)
		if pass%3 == 0 {
			// A transaction that ends meanwhile moves the horizon on.
			tx, err := s.DB().DB.BeginTx(ctx, nil)
			require.NoError(t, err)
			log(t, tx, "gone", 1)
			require.NoError(t, tx.Rollback())
		}
		for _, e := range readAll(t, s, after) {
			require.NotContains(t, e.DeletedID, "early", "pass %d: the uncommitted event", pass)
			require.Greater(t, e.Seq, after)
			after = e.Seq
			seen++
		}
		require.NotEmpty(t, holes(t, s), "pass %d: the early event's position is a hole", pass)
	}
	require.Equal(t, 30, seen)

	require.NoError(t, early.Commit())
	got := readAll(t, s, after)
	require.Len(t, got, 1, "the early event, delivered once committed")
	assert.Equal(t, "early-1", got[0].DeletedID)
	assert.Greater(t, got[0].Seq, after)
	return got[0].Seq
}

// TestOutboxForgetsRollbacksAsRanges checks that the positions of a
// rolled-back event, and of a rolled-back bulk insert of 100, are kept as
// ranges (one, as no committed position lies between them), then forgotten once the rollbacks are provable.
func TestOutboxForgetsRollbacksAsRanges(t *testing.T) {
	s, alice := openOutbox(t)
	ctx := t.Context()
	for _, n := range []int{1, 100} {
		tx, err := s.DB().DB.BeginTx(ctx, nil)
		require.NoError(t, err)
		logEvents(t, tx, "gone", n)
		require.NoError(t, tx.Rollback())
	}
	sendWithEvent(t, s, "c", alice)
	require.Len(t, readAll(t, s, 0), 1)
	// The positions the pass found uncommitted, in one range (a range
	// ends only at a position read).
	assert.Equal(t, []string{"1-101"}, holes(t, s))
	require.Eventually(t, func() bool { readAll(t, s, 0); return len(holes(t, s)) == 0 }, 10*time.Second, 50*time.Millisecond,
		"the holes are forgotten")
	sendWithEvent(t, s, "c", alice)
	require.Len(t, readAll(t, s, 0), 2)
}

// TestOutboxRangesWhileRunning checks the ranges a pass keeps while a bulk
// insert of 100 runs, and that its rows are delivered, in order, when it
// commits.
func TestOutboxRangesWhileRunning(t *testing.T) {
	s, alice := openOutbox(t)
	ctx := t.Context()
	bulk, err := s.DB().DB.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer bulk.Rollback()
	logEvents(t, bulk, "bulk", 100)
	sendWithEvent(t, s, "c", alice)
	require.Len(t, readAll(t, s, 0), 1)
	assert.Equal(t, []string{"1-100"}, holes(t, s), "one range for the bulk insert")
	require.NoError(t, bulk.Commit())
	got := readAll(t, s, 1)
	require.Len(t, got, 100)
	for i, e := range got {
		assert.Equal(t, fmt.Sprintf("bulk-%d", i+1), e.DeletedID)
		assert.EqualValues(t, i+2, e.Seq)
	}
	assert.Empty(t, holes(t, s))
}

// TestOutboxUpdatesNoEvent checks, on PostgreSQL, that sends and reads
// update no row of events and leave none dead: the sequencer copies.
func TestOutboxUpdatesNoEvent(t *testing.T) {
	s, alice := openOutbox(t)
	ctx := t.Context()
	const sends = 300
	after := int64(0)
	for i := range sends {
		sendWithEvent(t, s, fmt.Sprint("c", i%7), alice)
		if i%10 == 9 {
			for _, e := range readAll(t, s, after) {
				after = e.Seq
			}
		}
	}
	require.EqualValues(t, sends, after)
	type stats struct {
		Ins, Upd, HotUpd, Dead int64
	}
	var st stats
	// The statistics of other backends arrive within a second or so.
	require.Eventually(t, func() bool {
		err := s.DB().DB.QueryRowContext(ctx, `SELECT n_tup_ins, n_tup_upd, n_tup_hot_upd, n_dead_tup FROM pg_stat_user_tables
			WHERE relid = 'events'::regclass`).Scan(&st.Ins, &st.Upd, &st.HotUpd, &st.Dead)
		require.NoError(t, err)
		return st.Ins >= sends
	}, 20*time.Second, 200*time.Millisecond, "the inserts are counted")
	assert.Equal(t, stats{Ins: sends}, st, "events: inserted %d, updated none, none dead", sends)
}
