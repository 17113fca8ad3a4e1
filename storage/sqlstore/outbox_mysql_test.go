package sqlstore_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/storage/sqlstore"
)

// The outbox of MySQL (DESIGN.md §4.3): writers insert into event_log
// through the gate's shared lock, the sequencer copies the committed rows
// into events and keeps the positions it passed unseen as holes, forgotten
// only once it took the gate exclusively after finding them.

// openMySQLOutbox returns a migrated MySQL store.
func openMySQLOutbox(t *testing.T) *sqlstore.Store {
	t.Helper()
	s := open(t, engine(t, "mysql").DSN(t))
	require.NoError(t, s.Migrate(t.Context()))
	return s
}

// logMySQLEvents inserts n events into event_log in tx as writers do
// (through the gate), each named by its payload's DeletedID (mark-i).
func logMySQLEvents(t *testing.T, tx *sql.Tx, mark string, n int) {
	t.Helper()
	values := strings.Repeat(", ('message.deleted', 'c', UTC_TIMESTAMP(6), ?)", n-1)
	args := []any{"message.deleted"}
	for i := range n {
		args = append(args, fmt.Sprintf(`{"DeletedID":"%s-%d"}`, mark, i+1))
	}
	_, err := tx.ExecContext(t.Context(), `INSERT INTO event_log (type, conversation_id, created_at, payload)
		VALUES ((SELECT ? FROM event_sequence WHERE id = 2 LOCK IN SHARE MODE), 'c', UTC_TIMESTAMP(6), ?)`+values, args...)
	require.NoError(t, err)
}

// mysqlHoles returns the sequencer's holes, as "from-to" ranges.
func mysqlHoles(t *testing.T, s *sqlstore.Store) []string {
	t.Helper()
	var text string
	require.NoError(t, s.DB().DB.QueryRowContext(t.Context(), "SELECT COALESCE(holes, '') FROM event_sequence WHERE id = 1").Scan(&text))
	var out []string
	for _, f := range strings.Fields(text) {
		p := strings.Split(f, ":")
		out = append(out, p[0]+"-"+p[1])
	}
	return out
}

// TestOutboxMySQLKeepsAnEarlyUncommittedEvent checks that an event whose
// transaction holds its position while later events commit and are read,
// pass after pass, each trying the gate, is delivered once it commits,
// after those: its hole is never forgotten while its transaction runs.
func TestOutboxMySQLKeepsAnEarlyUncommittedEvent(t *testing.T) {
	defer sqlstore.SetGateAges(0, time.Hour)() // the gate at every pass, never waited for
	s := openMySQLOutbox(t)
	after := keepsAnEarlyUncommittedEvent(t, s, putContact(t, s, "alice"),
		&sql.TxOptions{Isolation: sql.LevelReadCommitted}, logMySQLEvents, mysqlHoles)
	readAll(t, s, after)
	assert.Empty(t, mysqlHoles(t, s), "the rollbacks' holes are forgotten")
}

// TestOutboxMySQLWaitsForTheGate checks that a pass whose hole is older
// than gateWait waits for the gate, so for the writer in flight, and
// then delivers its event.
func TestOutboxMySQLWaitsForTheGate(t *testing.T) {
	defer sqlstore.SetGateAges(0, 0)()
	s := openMySQLOutbox(t)
	alice := putContact(t, s, "alice")
	ctx := t.Context()
	early, err := s.DB().DB.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	require.NoError(t, err)
	defer early.Rollback()
	logMySQLEvents(t, early, "early", 1)
	sendWithEvent(t, s, "c", alice)
	require.Len(t, readAll(t, s, 0), 1) // the hole found
	require.Equal(t, []string{"1-1"}, mysqlHoles(t, s))

	const hold = 300 * time.Millisecond
	go func() {
		time.Sleep(hold)
		_ = early.Commit()
	}()
	began := time.Now()
	got := readAll(t, s, 1)
	assert.GreaterOrEqual(t, time.Since(began), hold, "the pass waited for the gate")
	require.Len(t, got, 1)
	assert.Equal(t, "early-1", got[0].DeletedID)
	assert.EqualValues(t, 2, got[0].Seq)
	assert.Empty(t, mysqlHoles(t, s))
}

// TestOutboxMySQLForgetsRollbacks checks that the positions of a
// rolled-back event, and of a rolled-back bulk insert of 100, are kept as
// one range, until the gate proves them rolled back; and that the
// events after them are delivered meanwhile.
func TestOutboxMySQLForgetsRollbacks(t *testing.T) {
	defer sqlstore.SetGateAges(time.Hour, time.Hour)()
	s := openMySQLOutbox(t)
	alice := putContact(t, s, "alice")
	ctx := t.Context()
	for _, n := range []int{1, 100} {
		tx, err := s.DB().DB.BeginTx(ctx, nil)
		require.NoError(t, err)
		logMySQLEvents(t, tx, "gone", n)
		require.NoError(t, tx.Rollback())
	}
	sendWithEvent(t, s, "c", alice)
	require.Len(t, readAll(t, s, 0), 1)
	assert.Equal(t, []string{"1-101"}, mysqlHoles(t, s), "one range, kept without the gate")
	sendWithEvent(t, s, "c", alice)
	require.Len(t, readAll(t, s, 0), 2)
	assert.Equal(t, []string{"1-101"}, mysqlHoles(t, s))

	sqlstore.SetGateAges(0, time.Hour)
	readAll(t, s, 0)
	assert.Empty(t, mysqlHoles(t, s), "forgotten under the gate")
	sendWithEvent(t, s, "c", alice)
	got := readAll(t, s, 0)
	require.Len(t, got, 3)
	assert.EqualValues(t, 3, got[2].Seq)
}

// TestOutboxMySQLUpdatesNoEvent checks, on MySQL, that sends and reads
// update no row of events nor of event_log (the sequencer copies), with
// triggers counting updates.
func TestOutboxMySQLUpdatesNoEvent(t *testing.T) {
	s := openMySQLOutbox(t)
	alice := putContact(t, s, "alice")
	ctx := t.Context()
	db := s.DB().DB
	_, err := db.ExecContext(ctx, "CREATE TABLE updates_seen (n INT NOT NULL)")
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, "INSERT INTO updates_seen VALUES (0)")
	require.NoError(t, err)
	for _, table := range []string{"events", "event_log"} {
		var n int
		require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?", table).Scan(&n))
		if n == 0 {
			continue
		}
		_, err := db.ExecContext(ctx, "CREATE TRIGGER "+table+"_updated AFTER UPDATE ON "+table+" FOR EACH ROW UPDATE updates_seen SET n = n + 1")
		require.NoError(t, err)
	}
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
	var updated, rows int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT n FROM updates_seen").Scan(&updated))
	require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM events").Scan(&rows))
	assert.Equal(t, sends, rows)
	assert.Zero(t, updated, "rows of events and event_log updated")
}
