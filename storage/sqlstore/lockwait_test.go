package sqlstore_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/storage/sqlstore"
)

// TestCombinedLockWaitCanceled: a change whose caller gives up while its
// transaction waits for a row lock held elsewhere returns the context's
// error (or its canceled statement's), and the server stops waiting too (pgx cancels the statement):
// no backend is left queued on the row, and the transaction is not run
// again.
func TestCombinedLockWaitCanceled(t *testing.T) {
	ctx := t.Context()
	e := postgresOnly(t)
	s, err := sqlstore.Open(ctx, e.DSN(t), &sqlstore.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Migrate(ctx))
	f := newCombineFixture(t, s, 1)

	// Another transaction holds the message's row.
	holder, err := s.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Rollback() })
	var one int
	require.NoError(t, holder.QueryRowContext(ctx, "SELECT 1 FROM messages WHERE id = ? FOR UPDATE", f.msg.ID).Scan(&one))

	waiting := func() int {
		var n int
		require.NoError(t, s.DB().QueryRowContext(ctx,
			"SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE OF m'").Scan(&n))
		return n
	}
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start := time.Now()
	c := f.start(cctx, add("a", f.reactors[0], nil))
	require.Eventually(t, func() bool { return waiting() == 1 }, 900*time.Millisecond, 10*time.Millisecond, "the change waits for the row")
	o := wait(t, c)
	assert.Error(t, o.err, "the caller gave up") // its context's error, or the canceled statement's
	assert.Less(t, time.Since(start), 3*time.Second, "answered when the caller gave up")
	assert.Eventually(t, func() bool { return waiting() == 0 }, 2*time.Second, 20*time.Millisecond, "the server stopped waiting: the statement was canceled")
	time.Sleep(200 * time.Millisecond)
	assert.Zero(t, waiting(), "not run again")
}
