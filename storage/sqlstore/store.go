package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/pgdriver"
	"github.com/uptrace/bun/driver/sqliteshim"
	"github.com/uptrace/bun/schema"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/messaging"
)

// Options configure a Store. A nil *Options means all defaults.
type Options struct {
	// MaxOpenConns is the most connections Open keeps open: of the pool
	// for PostgreSQL and MySQL, of the reader pool for SQLite (SQLite
	// writes always go through one connection). New leaves the pool of the
	// *bun.DB it is given as it is. Default: 16 for PostgreSQL and MySQL,
	// max(4, 2×GOMAXPROCS) SQLite readers.
	MaxOpenConns int
	// MaxRetries is how many times a write transaction is run again after a
	// serialization failure, deadlock or lock wait timeout (PostgreSQL
	// SQLSTATE 40001/40P01, MySQL errors 1213/1205) or a busy SQLite
	// database, before the error is returned. Default: 10.
	MaxRetries int
	// BusyTimeout is how long a SQLite connection waits for a lock held by
	// another connection (another process, or another Store on the same
	// file) before failing; Open only. Default: 10 seconds.
	BusyTimeout time.Duration
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
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// flavor is the SQL engine a Store speaks to.
type flavor int

const (
	flavorSQLite flavor = iota
	flavorPostgres
	flavorMySQL
)

func (f flavor) String() string {
	switch f {
	case flavorPostgres:
		return "postgres"
	case flavorMySQL:
		return "mysql"
	}
	return "sqlite"
}

// Store is a messaging.Repository and an attachments.Repository over one SQL
// database. It is safe for concurrent use.
type Store struct {
	w      *bun.DB // writes and transactions
	r      *bun.DB // reads outside transactions; w itself except for SQLite files
	flavor flavor
	opts   Options
	owned  []*bun.DB // closed by Close

	stmts *stmtCache   // prepared reads of SQLite's reader pool; nil otherwise
	reads atomic.Int64 // read queries outside transactions, for tests
}

var (
	_ messaging.Repository   = (*Store)(nil)
	_ attachments.Repository = (*Store)(nil)
)

// Open opens a store by DSN:
//
//   - "postgres://…" or "postgresql://…": PostgreSQL through pgdriver (every
//     libpq-style URL parameter pgdriver knows; others, such as
//     search_path, are sent as connection parameters);
//   - "mysql://user:pass@host:port/db?param=value": MySQL or MariaDB,
//     converted to a go-sql-driver/mysql configuration; a DSN already in
//     that driver's form ("user:pass@tcp(host:port)/db") is taken as is;
//   - anything else: a SQLite database file path, a "file:" URI, or
//     ":memory:" (one private in-memory database on a single connection).
//
// Open checks that the database can be reached (errors.Is(err,
// messaging.ErrUnavailable) when it cannot) but does not create or change
// the schema: call Migrate.
func Open(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	o := opts.withDefaults()
	var w, r *sql.DB
	var f flavor
	var err error
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		f = flavorPostgres
		w, err = openPostgres(dsn, o)
	case strings.HasPrefix(dsn, "mysql://"), isMySQLDriverDSN(dsn):
		f = flavorMySQL
		w, err = openMySQL(dsn, o)
	default:
		f = flavorSQLite
		w, r, err = openSQLite(dsn, o)
	}
	if err != nil {
		return nil, &messaging.Error{Kind: messaging.ErrInvalid, Message: "invalid database DSN", Op: "sqlstore.Open", Err: err}
	}
	if r == nil {
		r = w
	}
	// Ping before bun.NewDB: mysqldialect's Init queries the server without
	// a context, and would hang on one that does not answer.
	for _, db := range []*sql.DB{w, r} {
		if err := db.PingContext(ctx); err != nil {
			_ = w.Close()
			_ = r.Close()
			return nil, wrapErr("sqlstore.Open", err)
		}
	}
	s := &Store{flavor: f, opts: o}
	s.w = bun.NewDB(w, s.newDialect())
	s.r = s.w
	if r != w {
		s.r = bun.NewDB(r, s.newDialect())
	}
	s.owned = []*bun.DB{s.w}
	if s.r != s.w {
		s.owned = append(s.owned, s.r)
		if f == flavorSQLite {
			s.stmts = &stmtCache{db: r, m: make(map[string]*sql.Stmt)}
		}
	}
	return s, nil
}

func (s *Store) newDialect() schema.Dialect {
	switch s.flavor {
	case flavorPostgres:
		return pgdialect.New()
	case flavorMySQL:
		return mysqldialect.New()
	}
	return sqlitedialect.New()
}

// New returns a Store over db, which it does not own: Close leaves it open.
// The dialect of db decides the SQL (PostgreSQL, MySQL or SQLite). For
// SQLite, the caller is responsible for the pragmas Open sets (WAL,
// busy_timeout, foreign_keys) and should give db a single connection
// (SetMaxOpenConns(1)), as every read and write goes through it.
func New(db *bun.DB, opts *Options) (*Store, error) {
	s := &Store{w: db, r: db, opts: opts.withDefaults()}
	switch db.Dialect().Name() {
	case dialect.PG:
		s.flavor = flavorPostgres
	case dialect.MySQL:
		s.flavor = flavorMySQL
	case dialect.SQLite:
		s.flavor = flavorSQLite
	default:
		return nil, &messaging.Error{Kind: messaging.ErrUnimplemented, Op: "sqlstore.New", Message: "unsupported SQL dialect " + db.Dialect().Name().String()}
	}
	return s, nil
}

// DB returns the database the Store writes to (for SQLite files opened by
// Open, the single writer connection's pool).
func (s *Store) DB() *bun.DB { return s.w }

// Close closes the databases that Open opened; it does nothing for a Store
// made by New.
func (s *Store) Close() error {
	var errs []error
	if s.stmts != nil {
		errs = append(errs, s.stmts.close())
	}
	for _, db := range s.owned {
		errs = append(errs, db.Close())
	}
	s.owned = nil
	return errors.Join(errs...)
}

func openPostgres(dsn string, o Options) (*sql.DB, error) {
	// Validate the DSN now: pgdriver.NewConnector panics on a bad one.
	if _, err := url.Parse(dsn); err != nil {
		return nil, err
	}
	var connector *pgdriver.Connector
	if err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		connector = pgdriver.NewConnector(pgdriver.WithDSN(dsn))
		return nil
	}(); err != nil {
		return nil, err
	}
	sqldb := sql.OpenDB(connector)
	n := o.MaxOpenConns
	if n <= 0 {
		n = 16
	}
	sqldb.SetMaxOpenConns(n)
	sqldb.SetMaxIdleConns(n)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	return sqldb, nil
}

// isMySQLDriverDSN reports whether dsn is in go-sql-driver/mysql's own form.
func isMySQLDriverDSN(dsn string) bool {
	return !strings.HasPrefix(dsn, "file:") && (strings.Contains(dsn, "@tcp(") || strings.Contains(dsn, "@unix("))
}

// mysqlConfig converts a "mysql://" URL, or parses a go-sql-driver DSN, into
// a driver configuration with the settings the Store relies on: times parsed
// as UTC, and "rows affected" counting matched rows.
func mysqlConfig(dsn string) (*mysql.Config, error) {
	var cfg *mysql.Config
	if strings.HasPrefix(dsn, "mysql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return nil, err
		}
		cfg, err = mysql.ParseDSN("/?" + u.RawQuery)
		if err != nil {
			return nil, err
		}
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
		cfg.Net = "tcp"
		cfg.Addr = u.Host
		if u.Port() == "" {
			cfg.Addr = u.Hostname() + ":3306"
		}
		cfg.DBName = strings.TrimPrefix(u.Path, "/")
	} else {
		var err error
		if cfg, err = mysql.ParseDSN(dsn); err != nil {
			return nil, err
		}
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.ClientFoundRows = true
	return cfg, nil
}

func openMySQL(dsn string, o Options) (*sql.DB, error) {
	cfg, err := mysqlConfig(dsn)
	if err != nil {
		return nil, err
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	sqldb := sql.OpenDB(connector)
	n := o.MaxOpenConns
	if n <= 0 {
		n = 16
	}
	sqldb.SetMaxOpenConns(n)
	sqldb.SetMaxIdleConns(n)
	sqldb.SetConnMaxLifetime(time.Hour)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	return sqldb, nil
}

// sqliteDSN returns the driver DSN for a path, "file:" URI or ":memory:",
// with the pragmas of the package doc; txlock is the BEGIN mode.
func sqliteDSN(dsn, txlock string, busy time.Duration, memory bool) string {
	full := dsn
	if !strings.HasPrefix(full, "file:") {
		full = "file:" + full
	}
	sep := "?"
	if strings.Contains(full, "?") {
		sep = "&"
	}
	ms := busy.Milliseconds()
	if sqliteshim.DriverName() != "sqlite" { // mattn/go-sqlite3 (-tags cgosqlite)
		p := fmt.Sprintf("_busy_timeout=%d&_foreign_keys=on&_txlock=%s", ms, txlock)
		if !memory {
			p += "&_journal_mode=WAL&_synchronous=NORMAL"
		}
		return full + sep + p
	}
	// Defaults for the pragmas the DSN does not set itself.
	pragmas := []string{fmt.Sprintf("busy_timeout(%d)", ms), "foreign_keys(ON)"}
	if !memory {
		pragmas = append(pragmas, "journal_mode(WAL)", "synchronous(NORMAL)", "journal_size_limit(67108864)", "temp_store(MEMORY)", "cache_size(-16000)")
	}
	p := "_txlock=" + txlock
	lower := strings.ToLower(full)
	for _, pr := range pragmas {
		if !strings.Contains(lower, "_pragma="+strings.ToLower(pr[:strings.IndexByte(pr, '(')])) {
			p += "&_pragma=" + pr
		}
	}
	return full + sep + p
}

// openSQLite returns the writer and, for a file, the reader pool.
func openSQLite(dsn string, o Options) (w, r *sql.DB, err error) {
	if dsn == "" {
		return nil, nil, errors.New("empty SQLite path")
	}
	if dsn == ":memory:" {
		// Every connection to ":memory:" is a database of its own: use one.
		sqldb, err := sql.Open(sqliteshim.ShimName, sqliteDSN(":memory:", "immediate", o.BusyTimeout, true))
		if err != nil {
			return nil, nil, err
		}
		sqldb.SetMaxOpenConns(1)
		sqldb.SetMaxIdleConns(1)
		sqldb.SetConnMaxLifetime(0)
		sqldb.SetConnMaxIdleTime(0)
		return sqldb, nil, nil
	}
	wsql, err := sql.Open(sqliteshim.ShimName, sqliteDSN(dsn, "immediate", o.BusyTimeout, false))
	if err != nil {
		return nil, nil, err
	}
	wsql.SetMaxOpenConns(1) // the single writer
	wsql.SetMaxIdleConns(1)
	wsql.SetConnMaxLifetime(0)
	wsql.SetConnMaxIdleTime(0)
	rsql, err := sql.Open(sqliteshim.ShimName, sqliteDSN(dsn, "deferred", o.BusyTimeout, false))
	if err != nil {
		_ = wsql.Close()
		return nil, nil, err
	}
	n := o.MaxOpenConns
	if n <= 0 {
		n = max(4, 2*runtime.GOMAXPROCS(0))
	}
	rsql.SetMaxOpenConns(n)
	rsql.SetMaxIdleConns(n)
	rsql.SetConnMaxLifetime(0)
	rsql.SetConnMaxIdleTime(5 * time.Minute)
	return wsql, rsql, nil
}

// write runs fn in a write transaction, again (up to MaxRetries times) when
// it fails with a serialization failure, deadlock or busy database.
func (s *Store) write(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	var txo *sql.TxOptions
	if s.flavor == flavorMySQL {
		// REPEATABLE READ (InnoDB's default) takes gap locks and reads a
		// snapshot after a locking read; the store wants neither.
		txo = &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	}
	return s.retry(ctx, func(ctx context.Context) error { return s.w.RunInTx(ctx, txo, fn) })
}

// retry runs fn, again (up to MaxRetries times) when it fails with a
// serialization failure, deadlock or busy database. fn is a write
// transaction, or a single statement on s.w (atomic on its own).
func (s *Store) retry(ctx context.Context, fn func(ctx context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil || attempt > s.opts.MaxRetries || !s.retryable(err) || ctx.Err() != nil {
			return err
		}
		s.opts.Logger.DebugContext(ctx, "sqlstore: retrying transaction", "attempt", attempt, "err", err)
		// Jittered, growing backoff: a few milliseconds, at most ~100ms.
		d := time.Duration(rand.Int64N(int64(min(attempt, 20))*5*int64(time.Millisecond)) + 1)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// forUpdate is the locking clause of a SELECT that a transaction writes
// after: SQLite transactions are IMMEDIATE (they hold the write lock from
// the start) and need none.
func (s *Store) forUpdate() string {
	if s.flavor == flavorSQLite {
		return ""
	}
	return " FOR UPDATE"
}
