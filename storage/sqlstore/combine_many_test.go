package sqlstore_test

// Tests of combined reactions (combine.go) on PostgreSQL.

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/sqlstore"
)

func postgresOnly(t *testing.T) backendtest.SQLEngine {
	t.Helper()
	for _, e := range backendtest.SQL(t) {
		if e.Name == "postgres" {
			return e
		}
	}
	t.Skip("no PostgreSQL")
	return backendtest.SQLEngine{}
}

// combinedRound makes first (held until the others queue) and then rest,
// which wait for it and are made by the next transaction, and returns
// their outcomes in order.
func combinedRound(t *testing.T, f *combineFixture, first driver.MessageChange, rest []driver.MessageChange) []outcome {
	t.Helper()
	f.settle() // first runs first
	rec0, release, entered := blocking()
	first.Record = rec0
	chans := []<-chan outcome{f.start(t.Context(), first)}
	<-entered
	for _, ch := range rest {
		chans = append(chans, f.start(t.Context(), ch))
	}
	close(release)
	outs := make([]outcome, len(chans))
	for i, c := range chans {
		outs[i] = wait(t, c)
	}
	f.settle()
	return outs
}

func remove(name, reactor string) driver.MessageChange {
	return driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: reactor, Remove: []string{name}}, Record: record}
}

// gateConnector makes the BeginTx of its connections fail as an
// unreachable database's would, while down, and counts them.
type gateConnector struct {
	sqldriver.Connector
	down   atomic.Bool
	begins atomic.Int32
}

func (c *gateConnector) Connect(ctx context.Context) (sqldriver.Conn, error) {
	cn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &gateConn{Conn: cn.(*stdlib.Conn), g: c}, nil
}

type gateConn struct {
	*stdlib.Conn
	g *gateConnector
}

func (c *gateConn) BeginTx(ctx context.Context, opts sqldriver.TxOptions) (sqldriver.Tx, error) {
	if c.g.down.Load() {
		c.g.begins.Add(1)
		time.Sleep(20 * time.Millisecond) // a connect timeout, short
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	return c.Conn.BeginTx(ctx, opts)
}

// TestCombinedUnreachableIsEveryCallers: a transaction of combined changes
// that cannot begin (the database unreachable) fails for every caller in
// one attempt, not in one more attempt for each change (each a connect
// timeout, the callers queued behind all of them).
func TestCombinedUnreachableIsEveryCallers(t *testing.T) {
	e := postgresOnly(t)
	ctx := t.Context()
	cfg, err := pgx.ParseConfig(e.DSN(t))
	require.NoError(t, err)
	g := &gateConnector{Connector: stdlib.GetConnector(*cfg)}
	sqldb := sql.OpenDB(g)
	t.Cleanup(func() { _ = sqldb.Close() })
	s, err := sqlstore.New(bun.NewDB(sqldb, pgdialect.New()), nil)
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	f := newCombineFixture(t, s, 9)
	r := f.reactors

	c0, release := f.hold(ctx, add("a", r[0], nil))
	var chans []<-chan outcome
	for k := 1; k <= 8; k++ {
		chans = append(chans, f.start(ctx, add("a", r[k], record)))
	}
	g.down.Store(true) // c0's transaction has begun; the next cannot
	close(release)
	require.NoError(t, wait(t, c0).err)
	for k, c := range chans {
		o := wait(t, c)
		require.Error(t, o.err, "change %d", k+1)
		assert.ErrorIs(t, o.err, messaging.ErrUnavailable, "change %d", k+1)
	}
	assert.EqualValues(t, 1, g.begins.Load(), "transactions begun for the 8 queued changes")
}

// TestCombinedReactionsAsAlone: over random rounds of quick reactions
// (adds of 1 to 4 names, take-backs, with and without UpdatedAt, around
// the 100 embedded reactors), each change made together with others
// answers as the same change made alone, one after the other, on another
// message; and the last answer of each round is GetMessage's.
func TestCombinedReactionsAsAlone(t *testing.T) {
	e := postgresOnly(t)
	ctx := t.Context()
	s := e.Open(t)
	f := newCombineFixture(t, s, 108)
	rs := append(f.reactors, "ctc_nocontact")
	other := f.msg
	other.ID = ids.NewAt(ids.Message, other.CreatedAt)
	require.NoError(t, s.Driver().CreateMessage(ctx, other, nil, nil))
	for i := range 101 { // "a" past 100 on both
		for _, id := range []string{f.msg.ID, other.ID} {
			_, err := s.Driver().UpdateMessage(ctx, id, add("a", rs[i], nil))
			require.NoError(t, err)
		}
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	names := []string{"a", "b", "c", "d", "e"}
	step := 0
	change := func() driver.MessageChange {
		step++
		who := rs[rnd.IntN(len(rs))]
		if rnd.IntN(3) == 0 {
			who = rs[rnd.IntN(6)]
		}
		ch := driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: who}}
		if rnd.IntN(3) == 0 {
			ch.Reactions.Remove = []string{names[rnd.IntN(len(names))]}
		} else {
			for range 1 + rnd.IntN(4) {
				if n := names[rnd.IntN(len(names))]; !slices.Contains(ch.Reactions.Add, n) {
					ch.Reactions.Add = append(ch.Reactions.Add, n)
				}
			}
		}
		if rnd.IntN(2) == 0 {
			ch.UpdatedAt = time.Date(2025, 4, 1, 0, 0, 0, step*1000, time.UTC)
		}
		ch.Reactions.At = time.Date(2025, 4, 2, 0, 0, 0, step*1000, time.UTC)
		return ch
	}
	for round := range 30 {
		first := change()
		var rest []driver.MessageChange
		for range 2 + rnd.IntN(12) {
			rest = append(rest, change())
		}
		got := combinedRound(t, f, first, rest)
		for k, ch := range append([]driver.MessageChange{first}, rest...) {
			ch.Record = nil
			alone, err := s.Driver().UpdateMessage(ctx, other.ID, ch)
			require.Equal(t, err == nil, got[k].err == nil, "round %d change %d: %v / %v", round, k, err, got[k].err)
			require.Equal(t, alone.Reactions, got[k].m.Reactions, "round %d change %d: %+v", round, k, ch)
			require.Equal(t, alone.UpdatedAt, got[k].m.UpdatedAt, "round %d change %d", round, k)
		}
		stored, err := s.Driver().GetMessage(ctx, f.msg.ID)
		require.NoError(t, err)
		require.Equal(t, stored, got[len(got)-1].m, "round %d", round)
	}
}

// TestCombinedReactionsQuoting: names and reactor ids that quoting could
// trip on (quotes, backslashes, dollar quotes, bun's placeholders,
// non-ASCII) are made together as alone.
func TestCombinedReactionsQuoting(t *testing.T) {
	e := postgresOnly(t)
	ctx := t.Context()
	s := e.Open(t)
	s.DB().SetMaxOpenConns(1)
	f := newCombineFixture(t, s, 2)
	other := f.msg
	other.ID = ids.NewAt(ids.Message, other.CreatedAt)
	require.NoError(t, s.Driver().CreateMessage(ctx, other, nil, nil))
	odd := []string{`it's`, `a\b`, `a\'b`, `$q$`, `$parley$`, `$1`, `?`, `?x`, `?0`, `'); DROP TABLE reactions; --`, `"`, `%s`, `é👍`, `E'\x41'`, `$$`, `\`, `''`}
	var rest []driver.MessageChange
	for _, n := range odd {
		rest = append(rest, add(n, odd[len(rest)%len(odd)], record)) // the reactor: another odd string (no contact)
	}
	rest = append(rest, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: `r'1`, Add: []string{"x1", `x'2`, `$q$x`}}, Record: record})
	rest = append(rest, remove(`it's`, `it's`), remove(`$q$`, odd[3]))
	got := combinedRound(t, f, add("first", f.reactors[0], nil), rest)
	require.NoError(t, got[0].err)
	_, err := s.Driver().UpdateMessage(ctx, other.ID, add("first", f.reactors[0], nil))
	require.NoError(t, err)
	for k, ch := range rest {
		ch.Record = nil
		alone, err := s.Driver().UpdateMessage(ctx, other.ID, ch)
		o := got[k+1]
		require.NoError(t, err, "alone %d", k)
		require.NoError(t, o.err, "change %d", k)
		assert.Equal(t, alone.Reactions, o.m.Reactions, "change %d: %+v", k, ch)
	}
	stored, err := s.Driver().GetMessage(ctx, f.msg.ID)
	require.NoError(t, err)
	assert.Equal(t, stored.Reactions, got[len(got)-1].m.Reactions)
	var txs int
	require.NoError(t, s.DB().NewRaw("SELECT count(DISTINCT xmin::text) FROM reactions WHERE message_id = ? AND name <> 'first'", f.msg.ID).Scan(ctx, &txs))
	assert.Equal(t, 1, txs, "the changes were made together")
}

// TestCombinedRefusedRolledBack: when a transaction of combined reactions
// rolls back (here a later change's Check refuses), the changes made
// again without the refused one are made in one transaction.
func TestCombinedRefusedRolledBack(t *testing.T) {
	e := postgresOnly(t)
	ctx := t.Context()
	s := e.Open(t)
	s.DB().SetMaxOpenConns(1) // a connection that has no parley_reacted yet
	f := newCombineFixture(t, s, 5)
	r := f.reactors
	bad := add("a", r[4], record)
	bad.Check = func(before, after driver.MessageCounts) error { return fmt.Errorf("refused") }
	outs := combinedRound(t, f, add("b", r[0], nil), []driver.MessageChange{add("a", r[1], record), add("a", r[2], record), add("a", r[3], record), bad})
	for k, o := range outs[:4] {
		require.NoError(t, o.err, "change %d", k)
	}
	require.Error(t, outs[4].err)
	var txs int
	require.NoError(t, s.DB().NewRaw("SELECT count(DISTINCT xmin::text) FROM reactions WHERE message_id = ? AND name = 'a'", f.msg.ID).Scan(ctx, &txs))
	assert.Equal(t, 1, txs, "the 3 changes made again without the refused one were committed by %d transactions", txs)
}
