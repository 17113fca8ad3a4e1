package sqlstore

import (
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/sqliteshim"
)

func TestExpandArgs(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 600000000, time.FixedZone("X", 3600))
	q, args, ok := expandArgs("SELECT 1 FROM t WHERE a = ? AND b IN (?) AND c <= ? AND d = ? LIMIT ?", []any{"x", idList{"p", "q"}, at, nil, 3}, false)
	assert.True(t, ok)
	assert.Equal(t, "SELECT 1 FROM t WHERE a = ? AND b IN (?, ?) AND c <= ? AND d = ? LIMIT ?", q)
	assert.Equal(t, []any{"x", "p", "q", "2025-01-02 02:04:05.6+00:00", nil, 3}, args, "times as bun writes them, in UTC")

	q, args, ok = expandArgs("SELECT 1 FROM t WHERE a = ? AND b IN (?) AND c <= ? AND d = ? LIMIT ?", []any{"x", idList{"p", "q"}, at, nil, 3}, true)
	assert.True(t, ok)
	assert.Equal(t, "SELECT 1 FROM t WHERE a = $1 AND b IN ($2, $3) AND c <= $4 AND d = $5 LIMIT $6", q, "PostgreSQL's placeholders")
	assert.Equal(t, []any{"x", "p", "q", at, nil, 3}, args, "times as they are: the driver writes them")
	q, args, ok = expandArgs("SELECT 1 FROM t WHERE a IN (?)", []any{boxedIDs{"p", "q"}}, true)
	assert.True(t, ok)
	assert.Equal(t, "SELECT 1 FROM t WHERE a IN ($1, $2)", q, "ids boxed already")
	assert.Equal(t, []any{"p", "q"}, args)
	assert.Equal(t, []any{"x", bun.List([]string{"p", "q"}), bun.List([]string{"r"})}, bunArgs([]any{"x", boxedIDs{"p", "q"}, idList{"r"}}), "lists for bun")
	_, _, ok = expandArgs("SELECT ?", []any{time.Time{}}, true)
	assert.False(t, ok, "a zero time, which PostgreSQL's driver would send as NULL")

	_, _, ok = expandArgs("SELECT ?", []any{3.5}, false)
	assert.False(t, ok, "an argument of another type")
	_, _, ok = expandArgs("SELECT ?, ?", []any{"x"}, false)
	assert.False(t, ok, "a placeholder without argument")
	_, _, ok = expandArgs("SELECT 1 WHERE a IN (?)", []any{idList{}}, false)
	assert.False(t, ok, "an empty list")
}

func TestStmtCache(t *testing.T) {
	_, c := memCache(t, "stmts", 0)
	ctx := t.Context()

	// Concurrent first uses of a query prepare it once.
	var wg sync.WaitGroup
	got := make([]*sql.Stmt, 8)
	for i := range got {
		wg.Go(func() { got[i], _ = c.get(ctx, "SELECT 1") })
	}
	wg.Wait()
	for _, st := range got {
		assert.Same(t, got[0], st)
	}
	assert.NotNil(t, got[0])

	_, err := c.get(ctx, "SELECT FROM nowhere")
	assert.Error(t, err, "a query that does not prepare")

	// A full cache prepares no more: the caller takes bun's path.
	for i := len(c.m); i < maxStmts; i++ {
		st, err := c.get(ctx, fmt.Sprintf("SELECT %d", i+1))
		require.NoError(t, err)
		require.NotNil(t, st)
	}
	st, err := c.get(ctx, "SELECT 'one too many'")
	assert.NoError(t, err)
	assert.Nil(t, st)
	st, err = c.get(ctx, "SELECT 1")
	assert.NoError(t, err)
	assert.Same(t, got[0], st, "the queries it holds still come from it")

	require.NoError(t, c.close())
	assert.Empty(t, c.m)
}

func TestExprCols(t *testing.T) {
	assert.Equal(t, "+m.id AS id, +c.username AS contact_username, +id AS id",
		exprCols("m.id, c.username AS contact_username,\n\t\tid"))
	assert.Equal(t, "+n.name AS name, COALESCE(c.username, '') AS reactor, +n.reactors AS reactor_count",
		exprCols("n.name, COALESCE(c.username, '') AS reactor, n.reactors AS reactor_count"), "an expression stays")
	// Every read column list is rewritten, each column named as before.
	for _, cols := range []string{messageCols, attachmentCols, reactionsCols} {
		got := sqliteReadCols.Replace("SELECT " + cols + " FROM x")
		assert.Equal(t, "SELECT "+exprCols(cols)+" FROM x", got)
	}
	assert.Equal(t, "SELECT +id AS id, +username AS username, +phone_number AS phone_number, +avatar_url AS avatar_url, +last_active_at AS last_active_at, +created_at AS created_at FROM contacts WHERE id = ?",
		sqliteReadCols.Replace("SELECT "+contactCols+" FROM contacts WHERE id = ?"))
}

// TestStmtCacheInTx: a transaction's lookup never prepares (it notes the
// query, which prepareWanted prepares after), and never waits for the
// cache's lock while the cache closes statements that callers are
// waiting to run on the pool's one connection, which a transaction holds.
func TestStmtCacheInTx(t *testing.T) {
	db, c := memCache(t, "stmtstx", 1)
	ctx := t.Context()

	assert.Nil(t, c.inTx("SELECT 2"), "not prepared yet")
	assert.Empty(t, c.m, "and not prepared by the lookup")
	c.prepareWanted(ctx)
	st := c.inTx("SELECT 2")
	require.NotNil(t, st, "prepared after the transaction")
	assert.Nil(t, c.inTx("SELECT 3"))

	tx, err := db.BeginTx(ctx, nil) // holds the one connection
	require.NoError(t, err)
	waiting := make(chan error, 1)
	go func() { // waits for the connection, holding the statement open
		rows, err := st.QueryContext(ctx)
		if err == nil {
			err = rows.Close()
		}
		waiting <- err
	}()
	time.Sleep(100 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- c.close() }() // waits for that caller
	time.Sleep(100 * time.Millisecond)
	looked := make(chan *sql.Stmt, 1)
	go func() { looked <- c.inTx("SELECT 2") }()
	select {
	case got := <-looked:
		assert.Nil(t, got, "a closed cache holds nothing")
	case <-time.After(5 * time.Second):
		t.Fatal("the transaction's lookup waits for the cache's close")
	}
	require.NoError(t, tx.Rollback())
	require.NoError(t, <-waiting)
	require.NoError(t, <-closed)
	st, err = c.get(ctx, "SELECT 4")
	assert.NoError(t, err)
	assert.Nil(t, st, "a closed cache prepares nothing")
}

// memCache returns an in-memory SQLite database of that name, with a pool
// of conns connections (0: no bound), and a stmtCache over it.
func memCache(t *testing.T, name string, conns int) (*sql.DB, *stmtCache) {
	t.Helper()
	db, err := sql.Open(sqliteshim.ShimName, "file:"+name+"?mode=memory&cache=shared")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(conns)
	return db, newStmtCache(db, nil)
}
