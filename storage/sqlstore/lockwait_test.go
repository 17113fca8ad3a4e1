package sqlstore_test

import (
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/storage/sqlstore"
)

// TestCombinedLockWaitTimeoutNotRetried: the lock that carries BEGIN
// waits for a row lock held elsewhere longer than pgdriver's read timeout.
// The client gives up, but the server still runs the SELECT … FOR UPDATE:
// the connection was not closed, and the transaction is not run again
// (each attempt would leave another backend queued on the row); the
// caller gets the timeout. (From a review of the folded BEGIN, as its
// test.)
func TestCombinedLockWaitTimeoutNotRetried(t *testing.T) {
	ctx := t.Context()
	e := postgresOnly(t)
	u, err := url.Parse(e.DSN(t))
	require.NoError(t, err)
	q := u.Query()
	q.Set("read_timeout", "1s")
	u.RawQuery = q.Encode()
	s, err := sqlstore.Open(ctx, u.String(), &sqlstore.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Migrate(ctx))
	f := newCombineFixture(t, s, 1)

	// Another transaction holds the message's row for 4 s.
	holder, err := s.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	var one int
	require.NoError(t, holder.QueryRowContext(ctx, "SELECT 1 FROM messages WHERE id = ? FOR UPDATE", f.msg.ID).Scan(&one))

	start := time.Now()
	c := f.start(ctx, add("a", f.reactors[0], nil))
	time.Sleep(3500 * time.Millisecond)
	var waiting int
	require.NoError(t, s.DB().QueryRowContext(ctx,
		"SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'BEGIN; SELECT pg_backend_pid()%'").Scan(&waiting))
	require.NoError(t, holder.Commit())
	o := wait(t, c)
	took := time.Since(start)
	t.Logf("outcome err=%v after %v", o.err, took)
	assert.LessOrEqual(t, waiting, 1, "each timed-out attempt left a backend waiting for the row lock")
	assert.Error(t, o.err, "a lock wait past the read timeout is not a connection closed while idle: not run again")
}
