package sqlstore

import (
	"context"
	"database/sql"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging/driver"
)

// SetSearchLimits sets maxSearchConversations and maxPrefixWords until
// the returned func restores them.
func SetSearchLimits(conversations, prefixWords int) (restore func()) {
	oldConvs, oldWords := maxSearchConversations, maxPrefixWords
	maxSearchConversations, maxPrefixWords = conversations, prefixWords
	return func() { maxSearchConversations, maxPrefixWords = oldConvs, oldWords }
}

// SetScanLimits sets maxSearchScan to scan, and searchWindow and
// maxSearchWindow, until the returned func restores them.
func SetScanLimits(scan int64, window, maxWindow int) (restore func()) {
	oldScan, oldWindow, oldMax := maxSearchScan, searchWindow, maxSearchWindow
	maxSearchScan, searchWindow, maxSearchWindow = scan, window, maxWindow
	return func() { maxSearchScan, searchWindow, maxSearchWindow = oldScan, oldWindow, oldMax }
}

// MessagePageSQL exposes the query of a page of messages, for EXPLAIN.
func MessagePageSQL(st *Store, q driver.MessageQuery) (string, []any) {
	s := st.s
	query, args, _, _ := s.messagePageSQL(byID(q))
	return query, args
}

// PreparedSQL returns query and args as s prepares them, or false.
func PreparedSQL(st *Store, query string, args []any) (string, []any, bool) {
	s := st.s
	return expandArgs(query, args, s.eng.name() == "postgres")
}

// ReaderDB returns the database the Store reads from outside transactions.
func ReaderDB(st *Store) *bun.DB { return st.s.r }

// Write exposes the Store's retrying write transaction.
func Write(st *Store, ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	s := st.s
	return s.write(ctx, fn)
}

// Migrations returns the number of migrations of s's engine.
func Migrations(st *Store) int {
	entries, _ := fs.ReadDir(migrationFiles, "migrations/"+st.s.eng.name())
	return len(entries)
}

// CountReads makes s count the queries it reads with outside
// transactions and returns the counter. The count comes from a bun query
// hook, which SQLite's prepared reads do not pass: CountReads turns them
// off. Reads take the same queries either way.
func CountReads(st *Store) *atomic.Int64 {
	s := st.s
	n := new(atomic.Int64)
	if s.stmts != nil {
		_ = s.stmts.close()
		s.stmts = nil
	}
	s.cached = nil
	s.r = s.r.WithQueryHook(readHook{n: n})
	return n
}

// CountWrites makes s count the statements that bun formats on its
// writer (not the prepared ones, nor BEGIN and COMMIT), and returns the
// counter.
func CountWrites(st *Store) *atomic.Int64 {
	s := st.s
	n := new(atomic.Int64)
	s.w = s.w.WithQueryHook(readHook{n: n, statementsOnly: true})
	return n
}

type readHook struct {
	n              *atomic.Int64
	statementsOnly bool // not BEGIN, COMMIT and ROLLBACK
}

func (h readHook) BeforeQuery(ctx context.Context, e *bun.QueryEvent) context.Context {
	if h.statementsOnly && (strings.HasPrefix(e.Query, "BEGIN") || e.Query == "COMMIT" || e.Query == "ROLLBACK") {
		return ctx
	}
	h.n.Add(1)
	return ctx
}

func (readHook) AfterQuery(context.Context, *bun.QueryEvent) {}

// offCached is the Store.cached that SetPreparedReads turned off.
var offCached any

// SetPreparedReads turns the prepared reads of SQLite and PostgreSQL on or
// off (on PostgreSQL, the driver's cached statements, of transactions
// too); it does nothing on MySQL.
func SetPreparedReads(st *Store, on bool) {
	s := st.s
	if s.eng.name() == "postgres" {
		if !on && s.cached != nil {
			offCached, s.cached = s.cached, nil
		} else if on && s.cached == nil {
			s.cached = offCached
		}
		return
	}
	if s.eng.name() == "mysql" || s.r == s.w {
		return
	}
	if !on {
		if s.stmts != nil {
			_ = s.stmts.close()
		}
		s.stmts = nil
	} else if s.stmts == nil {
		s.stmts = newStmtCache(s.r.DB, sqliteReadCols)
	}
}

// Prepared returns the number of statements the cache of prepared reads
// holds (SQLite's reader pool), or on PostgreSQL those the server holds
// prepared on a connection of the pool.
func Prepared(st *Store) int {
	s := st.s
	if s.eng.name() == "postgres" {
		// The server's, of one connection of the pool (the tests that ask
		// have one): pgx's cache.
		var n int
		if err := s.w.DB.QueryRowContext(context.Background(), "SELECT count(*) FROM pg_prepared_statements").Scan(&n); err != nil {
			panic(err)
		}
		return n
	}
	if s.stmts == nil {
		return 0
	}
	s.stmts.mu.RLock()
	defer s.stmts.mu.RUnlock()
	return len(s.stmts.m)
}

// Unavailable exposes whether the Store reports err as ErrUnavailable.
var Unavailable = unavailable

// ReactionsSQL is SQLite's query of the embedded reactors of a message
// (one id) and of a page (two ids), for EXPLAIN.
var ReactionsSQL = [2]string{
	sqliteSQL.reactions + "= ?" + sqliteSQL.reactionsOrder,
	sqliteSQL.reactions + "IN (?, ?)" + sqliteSQL.reactionsOrder,
}

// RecordStatements makes s record every statement it runs whose
// context holds key (on its writer and its reader, prepared statements
// turned off), and returns a function that gives them.
func RecordStatements(st *Store, key any) func() []string {
	s := st.s
	s.cached = nil
	if s.stmts != nil {
		_ = s.stmts.close()
		s.stmts = nil
	}
	if s.wstmts != nil {
		_ = s.wstmts.close()
		s.wstmts = nil
	}
	var mu sync.Mutex
	var qs []string
	h := ctxHook(func(ctx context.Context, q string) {
		if ctx.Value(key) == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		qs = append(qs, q)
	})
	if s.r == s.w {
		s.w = s.w.WithQueryHook(h)
		s.r = s.w
	} else {
		s.w, s.r = s.w.WithQueryHook(h), s.r.WithQueryHook(h)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(qs)
	}
}

type ctxHook func(ctx context.Context, query string)

func (h ctxHook) BeforeQuery(ctx context.Context, e *bun.QueryEvent) context.Context {
	h(ctx, e.Query)
	return ctx
}

func (ctxHook) AfterQuery(context.Context, *bun.QueryEvent) {}

// RecordWrites makes s record the statements that bun formats on its
// writer, in order, and returns a function that gives them.
func RecordWrites(st *Store) func() []string {
	s := st.s
	var mu sync.Mutex
	var qs []string
	s.w = s.w.WithQueryHook(recordHook(func(q string) {
		mu.Lock()
		defer mu.Unlock()
		qs = append(qs, q)
	}))
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(qs)
	}
}

type recordHook func(query string)

func (h recordHook) BeforeQuery(ctx context.Context, e *bun.QueryEvent) context.Context {
	h(e.Query)
	return ctx
}

func (recordHook) AfterQuery(context.Context, *bun.QueryEvent) {}

// ExecWrite exposes the Store's prepared writes (execWrite), on the
// Store's database or in a transaction of Write.
func ExecWrite(st *Store, ctx context.Context, db bun.IConn, query string, args ...any) (sql.Result, error) {
	s := st.s
	return s.execWrite(ctx, db, query, args...)
}

// Queued returns the number of changes to the message id that wait for a
// transaction on it, and whether one runs (combine.go).
func Queued(st *Store, id string) (waiting int, running bool) {
	s := st.s
	s.combine.mu.Lock()
	defer s.combine.mu.Unlock()
	q, running := s.combine.queues[id]
	return len(q), running
}

// HoldSends takes every statement slot of sends alone (sends.go), so that
// the sends that follow wait in the queue (until stallAfter: the slots'
// statements are new as long as the test holds them). queued returns how
// many wait; release hands the slots back, the first to the sends that
// wait, which one statement then stores.
func HoldSends(st *Store) (queued func() int, release func()) {
	s := st.s
	sc := &s.sending
	since := time.Now().Add(time.Hour)
	held := []*time.Time{&since}
	sc.mu.Lock()
	sc.slots = append(sc.slots, held...)
	sc.mu.Unlock()
	queued = func() int {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		return len(sc.queue)
	}
	return queued, func() {
		for _, slot := range held {
			s.sendNext(slot)
		}
	}
}

// AgeSends makes the statements of sends under way look as if they had
// run for an hour (stalled: sends.go's stallAfter).
func AgeSends(st *Store) {
	s := st.s
	sc := &s.sending
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for _, slot := range sc.slots {
		*slot = time.Now().Add(-time.Hour)
	}
}

// HookWrites adds h to the query hooks of s's writer (the statements that
// are not prepared: turn prepared statements off with SetPreparedReads to
// see them all). Call it before s is used concurrently.
func HookWrites(st *Store, h bun.QueryHook) { st.s.w = st.s.w.WithQueryHook(h) }

// SendSlots returns the number of statement slots of sends taken.
func SendSlots(st *Store) int {
	s := st.s
	s.sending.mu.Lock()
	defer s.sending.mu.Unlock()
	return len(s.sending.slots)
}

// UploadedBytesSQL is the query of UploadedBytes, for EXPLAIN.
const UploadedBytesSQL = uploadedBytesSQL

// SetBatchBytes sets the bound on the bytes of a snapshot's batch until the
// test ends.
func SetBatchBytes(tb interface{ Cleanup(func()) }, n int) {
	old := batchBytes
	batchBytes = n
	tb.Cleanup(func() { batchBytes = old })
}

// SetGateAges sets gateAge and gateWait (MySQL's sequencer), until the
// returned func restores them.
func SetGateAges(age, wait time.Duration) (restore func()) {
	oldAge, oldWait := gateAge, gateWait
	gateAge, gateWait = age, wait
	return func() { gateAge, gateWait = oldAge, oldWait }
}
