package postgres

import (
	"context"
	"database/sql"
	"net"
	"os"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/parleychat/parley/internal/pgtx"
)

// countingConn counts the writes to the server: one per round trip.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// foldingDB opens one folding connection to PostgreSQL, and the count of
// its writes, and creates a table fold_test of it.
func foldingDB(t *testing.T) (*sql.DB, *atomic.Int64) {
	t.Helper()
	// backendtest.EnvPostgres (backendtest imports this package)
	dsn := os.Getenv("PARLEY_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("PARLEY_TEST_POSTGRES is not set: not testing PostgreSQL")
	}
	writes := new(atomic.Int64)
	c := pgdriver.NewConnector(pgdriver.WithDSN(dsn))
	c.Config().Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		cn, err := new(net.Dialer).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: cn, writes: writes}, nil
	}
	db := sql.OpenDB(foldingConnector{c})
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	ctx := t.Context()
	_, err := db.ExecContext(ctx, "CREATE TEMP TABLE fold_test (k int PRIMARY KEY)")
	require.NoError(t, err)
	d, ok := db.Driver().(pgtx.Driver)
	require.True(t, ok && d.FoldsTransactions(), "sqlstore knows the connections fold")
	return db, writes
}

// roundTrips returns the round trips that fn made on db's connection.
func roundTrips(t *testing.T, writes *atomic.Int64, fn func()) int64 {
	t.Helper()
	before := writes.Load()
	fn()
	return writes.Load() - before
}

// keys returns the rows of fold_test, read outside any transaction.
func keys(t *testing.T, db *sql.DB) []int {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), "SELECT k FROM fold_test ORDER BY k")
	require.NoError(t, err)
	defer rows.Close()
	var ks []int
	for rows.Next() {
		var k int
		require.NoError(t, rows.Scan(&k))
		ks = append(ks, k)
	}
	require.NoError(t, rows.Err())
	return ks
}

// inServerTx reports whether q's connection is in a transaction, as the server
// sees it: the first statement of a transaction starts at its start.
func inServerTx(t *testing.T, q interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}) bool {
	t.Helper()
	var in bool
	require.NoError(t, q.QueryRowContext(t.Context(), "SELECT statement_timestamp() <> transaction_timestamp()").Scan(&in))
	return in
}

// begin begins a transaction of the default options on db.
func begin(t *testing.T, db *sql.DB) *sql.Tx {
	t.Helper()
	tx, err := db.BeginTx(t.Context(), nil)
	require.NoError(t, err)
	return tx
}

// exec runs query in tx, which must succeed.
func exec(t *testing.T, tx *sql.Tx, query string) {
	t.Helper()
	_, err := tx.ExecContext(t.Context(), query)
	require.NoError(t, err)
}

func TestFoldBeginIntoFirstStatement(t *testing.T) {
	db, writes := foldingDB(t)
	ctx := t.Context()
	n := roundTrips(t, writes, func() {
		tx := begin(t, db)
		exec(t, tx, "INSERT INTO fold_test VALUES (1)")
		var k int
		require.NoError(t, tx.QueryRowContext(ctx, "SELECT max(k) FROM fold_test").Scan(&k))
		assert.Equal(t, 1, k)
		require.NoError(t, tx.Rollback())
	})
	assert.EqualValues(t, 3, n, "BEGIN with the insert, the select, ROLLBACK")
	assert.Empty(t, keys(t, db), "rolled back: the insert was in the transaction")

	n = roundTrips(t, writes, func() {
		tx := begin(t, db)
		var k int
		require.NoError(t, tx.QueryRowContext(ctx, "INSERT INTO fold_test VALUES (2) RETURNING k").Scan(&k))
		assert.Equal(t, 2, k, "a query's rows come after its BEGIN's answer")
		require.NoError(t, tx.Commit())
	})
	assert.EqualValues(t, 2, n, "BEGIN with the insert, COMMIT")
	assert.Equal(t, []int{2}, keys(t, db))
}

func TestFoldNothingForAnEmptyTransaction(t *testing.T) {
	db, writes := foldingDB(t)
	n := roundTrips(t, writes, func() {
		tx := begin(t, db)
		require.NoError(t, tx.Commit())
		tx = begin(t, db)
		require.NoError(t, tx.Rollback())
	})
	assert.Zero(t, n)
	assert.False(t, inServerTx(t, db))
}

func TestFoldCommitIntoLastStatement(t *testing.T) {
	db, writes := foldingDB(t)
	ctx := t.Context()
	n := roundTrips(t, writes, func() {
		tx := begin(t, db)
		exec(t, tx, "INSERT INTO fold_test VALUES (1)")
		exec(t, tx, "INSERT INTO fold_test VALUES (2)"+pgtx.CommitSuffix)
		require.NoError(t, tx.Commit())
	})
	assert.EqualValues(t, 2, n, "BEGIN with the first insert, the second with COMMIT")
	assert.Equal(t, []int{1, 2}, keys(t, db))
	assert.False(t, inServerTx(t, db))

	// A failed last statement commits nothing, and the connection is
	// out of the transaction after the rollback.
	tx := begin(t, db)
	exec(t, tx, "INSERT INTO fold_test VALUES (3)")
	_, err := tx.ExecContext(ctx, "INSERT INTO fold_test VALUES (1)"+pgtx.CommitSuffix)
	require.Error(t, err, "a duplicate key")
	assert.NotErrorIs(t, err, pgtx.ErrCommitUnknown, "the server said so: nothing committed")
	require.NoError(t, tx.Rollback())
	assert.Equal(t, []int{1, 2}, keys(t, db))
	assert.False(t, inServerTx(t, db))

	// A COMMIT that fails (a deferred constraint) rolls back; the rollback
	// after it is harmless.
	_, err = db.ExecContext(ctx, "CREATE TEMP TABLE fold_deferred (k int UNIQUE DEFERRABLE INITIALLY DEFERRED)")
	require.NoError(t, err)
	tx = begin(t, db)
	exec(t, tx, "INSERT INTO fold_test VALUES (4)")
	_, err = tx.ExecContext(ctx, "INSERT INTO fold_deferred VALUES (1), (1)"+pgtx.CommitSuffix)
	require.Error(t, err, "the COMMIT checks the constraint")
	require.NoError(t, tx.Rollback())
	assert.Equal(t, []int{1, 2}, keys(t, db))
	assert.False(t, inServerTx(t, db))
}

func TestFoldAfterAFailedFirstStatement(t *testing.T) {
	db, _ := foldingDB(t)
	ctx := t.Context()
	tx := begin(t, db)
	_, err := tx.ExecContext(ctx, "SELECT 1/0")
	require.Error(t, err)
	require.NoError(t, tx.Rollback(), "the transaction began, and is aborted: ROLLBACK ends it")
	assert.False(t, inServerTx(t, db))
	assert.Empty(t, keys(t, db))
}

func TestFoldPreparedFirstStatement(t *testing.T) {
	db, writes := foldingDB(t)
	ctx := t.Context()
	st, err := db.PrepareContext(ctx, "INSERT INTO fold_test VALUES ($1)")
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	n := roundTrips(t, writes, func() {
		tx := begin(t, db)
		_, err := tx.StmtContext(ctx, st).ExecContext(ctx, 7)
		require.NoError(t, err)
		assert.True(t, inServerTx(t, tx), "the BEGIN went before the prepared statement")
		require.NoError(t, tx.Rollback())
	})
	assert.EqualValues(t, 4, n, "BEGIN, the statement, the check, ROLLBACK")
	assert.Empty(t, keys(t, db))
}

func TestFoldKeepsTheOptions(t *testing.T) {
	db, _ := foldingDB(t)
	ctx := t.Context()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	require.NoError(t, err)
	var level, readOnly string
	require.NoError(t, tx.QueryRowContext(ctx, "SELECT current_setting('transaction_isolation'), current_setting('transaction_read_only')").Scan(&level, &readOnly))
	assert.Equal(t, "repeatable read", level)
	assert.Equal(t, "on", readOnly)
	require.NoError(t, tx.Commit())
	assert.False(t, inServerTx(t, db))
}

// TestFoldFirstStatementFailsTheTransaction: a syntax error in the first
// statement makes the server reject the whole query, its BEGIN with it;
// the transaction is still aborted, as PostgreSQL has it after any error:
// the statements after fail, nothing of them is stored, and a COMMIT fails.
// (From a review of the folded BEGIN, as its test.)
func TestFoldFirstStatementFailsTheTransaction(t *testing.T) {
	db, _ := foldingDB(t)
	ctx := t.Context()
	for _, end := range []string{"ROLLBACK", "COMMIT"} {
		tx := begin(t, db)
		_, err := tx.ExecContext(ctx, "SELEC 1")
		require.Error(t, err)
		_, err = tx.ExecContext(ctx, "INSERT INTO fold_test VALUES (5)")
		assert.ErrorIs(t, err, pgtx.ErrAborted)
		var one int
		assert.ErrorIs(t, tx.QueryRowContext(ctx, "SELECT 1").Scan(&one), pgtx.ErrAborted)
		if end == "COMMIT" {
			assert.ErrorIs(t, tx.Commit(), pgtx.ErrAborted, "an aborted transaction does not commit")
		} else {
			require.NoError(t, tx.Rollback())
		}
		assert.Empty(t, keys(t, db), end)
		assert.False(t, inServerTx(t, db), end)
	}
}
