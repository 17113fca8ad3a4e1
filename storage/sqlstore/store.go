package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// Options configure a Store. A nil *Options means all defaults.
type Options struct {
	// MaxOpenConns is the most connections Open keeps open (SQLite: its
	// readers; it writes through one). Default: 16 for PostgreSQL and
	// MySQL, max(4, 2×GOMAXPROCS) SQLite readers.
	MaxOpenConns int
	// MaxRetries is how many times a write transaction is run again after
	// a serialization failure, deadlock, lock wait timeout, busy SQLite
	// database or stale prepared statement. Default: 10.
	MaxRetries int
	// BusyTimeout is how long a SQLite connection waits for another's
	// lock; Open only. Default: 10 seconds.
	BusyTimeout time.Duration
	// Schema is the PostgreSQL schema of the store's tables, a lower-case
	// SQL identifier: Open sets it as every connection's search_path and
	// Migrate creates it. Open and PostgreSQL only. Default: "", the
	// DSN's search_path.
	Schema string
	// Logger receives retried transactions and applied migrations.
	// Default: slog.Default().
	Logger *slog.Logger
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.MaxRetries <= 0 {
		c.MaxRetries = 10
	}
	if c.BusyTimeout <= 0 {
		c.BusyTimeout = 10 * time.Second
	}
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

// schemaName is a lower-case unquoted SQL identifier of at most 63 bytes
// (PostgreSQL's limit): what Options.Schema may be.
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Store is Parley's storage in one SQL database: hand it to messaging.New.
type Store struct{ s *store }

// Driver returns the contract the Store implements, for the services (see
// messaging/driver); hosts do not call it.
func (st *Store) Driver() driver.Store { return st.s }

// store implements driver.Store over one SQL database. Times are stored
// with microsecond precision (timestamptz, DATETIME(6), text in UTC on
// SQLite) and returned in UTC.
type store struct {
	w     *bun.DB // writes and transactions
	r     *bun.DB // reads outside transactions; w itself except for SQLite files
	eng   engine
	sql   *dialectSQL // eng's
	opts  Options
	owned []*bun.DB // closed by Close

	stmts  *stmtCache                 // prepared reads of SQLite's reader pool (readPrepared); nil otherwise
	wstmts *stmtCache                 // SQLite: the statements of the writer (those write transactions ran, txStmt); nil otherwise
	seqMu  sync.Mutex                 // held while this process numbers events (outbox.go)
	sealer atomic.Pointer[ids.Sealer] // the event ids' (eventSealer, outbox.go); nil until read

	combine   combiner     // changes to one message, made together (combine.go)
	sending   sendCombiner // sends alone, stored together (sends.go)
	indexerMu sync.Mutex
	indexer   *searchIndexer // SQLite's search indexer while it runs (engine_sqlite.go)
	indexing  atomic.Bool    // the indexer was started (or stopped for good)
	// cached, if set, is the argument that runs a statement from the
	// driver's statement cache (statementCacher; DESIGN.md §4.6).
	cached any
}

// Open opens a store by DSN through the driver registered for its scheme
// (see the package doc); it does not change the schema: call Migrate. A
// DSN whose driver is not imported gives an error matching
// messaging.ErrUnimplemented; a malformed DSN or unusable Options.Schema,
// messaging.ErrInvalid; an unreachable database, messaging.ErrUnavailable.
func Open(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	o := opts.withDefaults()
	d, err := driverFor(dsn)
	if err != nil {
		return nil, err
	}
	e, err := engineOf("sqlstore.Open", d.Dialect().Name())
	if err != nil {
		return nil, err
	}
	if o.Schema != "" && !e.dialect().schemas {
		return nil, &messaging.Error{Kind: messaging.ErrInvalid, Op: "sqlstore.Open", Message: "Options.Schema is for PostgreSQL: on MySQL name a database of its own in the DSN, on SQLite use a file of its own"}
	}
	if o.Schema != "" && !schemaName.MatchString(o.Schema) {
		return nil, &messaging.Error{Kind: messaging.ErrInvalid, Op: "sqlstore.Open", Message: fmt.Sprintf("Options.Schema %q is not a lower-case SQL identifier", o.Schema)}
	}
	w, r, err := d.Open(dsn, o)
	if err != nil {
		return nil, &messaging.Error{Kind: messaging.ErrInvalid, Message: "invalid database DSN", Op: "sqlstore.Open", Err: err}
	}
	if r == nil {
		r = w
	}
	// Ping before bun.NewDB: mysqldialect's Init queries the server without
	// a context, and would hang on one that does not answer.
	for _, db := range []*sql.DB{w, r} {
		if err := ping(ctx, db, o.BusyTimeout); err != nil {
			_ = w.Close()
			_ = r.Close()
			return nil, wrapErr("sqlstore.Open", err)
		}
	}
	s := &store{eng: e, sql: e.dialect(), opts: o, w: bun.NewDB(w, d.Dialect())}
	s.r, s.owned = s.w, []*bun.DB{s.w}
	if r != w {
		s.r = bun.NewDB(r, d.Dialect())
		s.owned = append(s.owned, s.r)
	}
	if c, ok := d.(statementCacher); ok {
		s.cached = c.CachedStatements(dsn)
	}
	e.opened(s, w, r)
	return &Store{s}, nil
}

// New returns a Store over db, which Close leaves open. db's dialect
// decides the SQL, and db must use the driver of that engine's package,
// which the program imports (else ErrUnimplemented). A SQLite db wants
// one connection and the pragmas Open sets (package sqlite). New takes no
// Options.Schema (ErrInvalid): set db's search_path, and create the schema.
func New(db *bun.DB, opts *Options) (*Store, error) {
	name := db.Dialect().Name()
	e, err := engineOf("sqlstore.New", name)
	if err != nil {
		return nil, err
	}
	if len(dialectDrivers(name)) == 0 {
		return nil, &messaging.Error{Kind: messaging.ErrUnimplemented, Op: "sqlstore.New",
			Message: fmt.Sprintf(`no driver registered for %[1]s: import _ "github.com/parleychat/parley/storage/sqlstore/%[1]s"`, e.name())}
	}
	if opts != nil && opts.Schema != "" {
		return nil, &messaging.Error{Kind: messaging.ErrInvalid, Op: "sqlstore.New", Message: "Options.Schema is for Open: set the search_path of db's connections instead"}
	}
	return &Store{&store{w: db, r: db, eng: e, sql: e.dialect(), opts: opts.withDefaults()}}, nil
}

// DB returns the database the Store writes to (a SQLite file's writer).
func (st *Store) DB() *bun.DB { return st.s.w }

// DB is Store.DB, for hosts that hold the driver.Store.
func (s *store) DB() *bun.DB { return s.w }

// Close waits for the writes under way and closes the databases that Open
// opened. Call it once the Store's other calls have returned.
func (st *Store) Close() error {
	s := st.s
	s.stopSearchIndexer()
	s.combine.running.Wait()
	s.sending.running.Wait()
	var errs []error
	for _, c := range []*stmtCache{s.stmts, s.wstmts} {
		if c != nil {
			errs = append(errs, c.close())
		}
	}
	for _, db := range s.owned {
		errs = append(errs, db.Close())
	}
	s.owned = nil
	return errors.Join(errs...)
}

// write runs fn in a write transaction, again when it fails retryably
// (retry).
func (s *store) write(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	err := s.retry(ctx, func(ctx context.Context) error {
		began := false
		err := s.w.RunInTx(ctx, s.sql.txOptions, func(ctx context.Context, tx bun.Tx) error {
			began = true
			return fn(ctx, tx)
		})
		if err != nil && !began && connLost(err) && ctx.Err() == nil {
			// BEGIN failed on a connection that the server or a proxy
			// closed while it was idle in the pool: nothing began, and the
			// transaction runs again on another.
			err = &staleError{err: err}
		}
		return err
	})
	if err == nil && s.wstmts != nil {
		// The statements the transaction ran unprepared, now that it holds
		// no connection (stmtCache.inTx); after a failure, at the next
		// write that succeeds.
		s.wstmts.prepareWanted(ctx)
	}
	return err
}

// retry runs fn, a write transaction or one statement on s.w, again (up
// to MaxRetries times) when it fails retryably (retryable).
func (s *store) retry(ctx context.Context, fn func(ctx context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil || attempt > s.opts.MaxRetries || !s.retryable(err) || ctx.Err() != nil {
			return err
		}
		s.opts.Logger.DebugContext(ctx, "sqlstore: retrying transaction", "attempt", attempt, "err", err)
		// Jittered, growing backoff: a few milliseconds, at most ~100ms.
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(rand.Int64N(int64(min(attempt, 20))*5*int64(time.Millisecond)) + 1)):
		}
	}
}

// exec runs one statement on s.w, again when it fails retryably, and
// returns the number of rows it affected.
func (s *store) exec(ctx context.Context, query string, args ...any) (n int64, err error) {
	err = s.retry(ctx, func(ctx context.Context) error {
		n, err = affected(s.w.ExecContext(ctx, query, args...))
		return err
	})
	return n, err
}

// readOne reads the first row of query into a T, or fails with an error
// matching ErrNotFound that names what when there is none.
func readOne[T any](ctx context.Context, read queryFn, what, query string, args ...any) (T, error) {
	var rows []T
	err := read(ctx, &rows, query, args...)
	if err == nil && len(rows) == 0 {
		err = notFound(what)
	}
	if err != nil {
		var zero T
		return zero, err
	}
	return rows[0], nil
}

// affected returns the number of rows that the statement of res affected,
// or err, the statement's error: affected(db.ExecContext(…)).
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// ping opens a first connection of db. On SQLite a connection's pragmas
// can meet a database that another process is opening or migrating: the
// switch to WAL then fails at once with SQLITE_BUSY (SQLite does not wait
// where waiting could deadlock), so it is tried again, for up to busy.
func ping(ctx context.Context, db *sql.DB, busy time.Duration) error {
	deadline := time.Now().Add(busy)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		err := db.PingContext(ctx)
		if err == nil || !sqliteBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}
