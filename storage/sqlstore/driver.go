package sqlstore

import (
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/schema"

	"github.com/parleychat/parley/messaging"
)

// A Driver connects the Store to one SQL engine through a database/sql
// driver; the packages sqlite, postgres and mysql under this one each
// Register one in init.
type Driver interface {
	// Dialect returns a new bun dialect of the engine (sqlitedialect,
	// pgdialect or mysqldialect); its Name decides the SQL the Store speaks.
	Dialect() schema.Dialect
	// Open returns the pools for dsn, without connecting: w for writes
	// and transactions, and r for reads outside transactions, or nil when
	// those go through w as well. It applies o (defaults filled in) where
	// its engine can (SizePool). An error means the DSN is malformed.
	Open(dsn string, o Options) (w, r *sql.DB, err error)
	// Code returns the engine's code for an error of the driver: a
	// PostgreSQL SQLSTATE ("40001"), a MySQL error number ("1213") or a
	// SQLite extended result code ("2067"), in decimal. It returns "" for
	// an error that is not the driver's or that carries no code.
	Code(err error) string
}

// SizePool sizes db, a pool a Driver opened, by o.MaxOpenConns, or def
// connections by default; idle ones close after five minutes.
func (o Options) SizePool(db *sql.DB, def int) *sql.DB {
	n := o.MaxOpenConns
	if n <= 0 {
		n = def
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return db
}

// statementCacher is implemented by a Driver whose connections cache
// prepared statements (package postgres: pgx's cache).
type statementCacher interface {
	// CachedStatements returns the value that, given as a statement's
	// first argument, runs it from the connection's statement cache, or
	// nil when the pools of dsn must not prepare statements.
	CachedStatements(dsn string) any
}

var drivers = struct {
	sync.RWMutex
	byScheme map[string]Driver
	byName   map[dialect.Name][]Driver // in order of registration
}{byScheme: map[string]Driver{}, byName: map[dialect.Name][]Driver{}}

// Register makes d the driver of the DSNs of scheme, for Open: the URL
// scheme of "scheme://…" DSNs ("postgres"), "mysql" also for
// go-sql-driver/mysql's own form, and "file" for "file:" URIs and every
// DSN without a scheme (SQLite paths, ":memory:"). It panics if scheme
// already has a driver, as sql.Register does.
func Register(scheme string, d Driver) {
	name := d.Dialect().Name()
	drivers.Lock()
	defer drivers.Unlock()
	if _, dup := drivers.byScheme[scheme]; dup {
		panic("sqlstore: Register called twice for scheme " + scheme)
	}
	drivers.byScheme[scheme] = d
	drivers.byName[name] = append(drivers.byName[name], d)
}

// driverFor returns the driver of dsn's scheme.
func driverFor(dsn string) (Driver, error) {
	scheme := dsnScheme(dsn)
	drivers.RLock()
	d, ok := drivers.byScheme[scheme]
	drivers.RUnlock()
	if ok {
		return d, nil
	}
	msg := fmt.Sprintf("no driver for %s DSNs", scheme)
	if pkg, ok := map[string]string{"file": "sqlite", "postgres": "postgres", "postgresql": "postgres", "mysql": "mysql"}[scheme]; ok {
		msg += `: import _ "github.com/parleychat/parley/storage/sqlstore/` + pkg + `"`
	}
	return nil, &messaging.Error{Kind: messaging.ErrUnimplemented, Op: "sqlstore.Open", Message: msg}
}

// dsnScheme returns the scheme that chooses the driver of dsn (Register).
func dsnScheme(dsn string) string {
	if strings.HasPrefix(dsn, "file:") {
		return "file"
	}
	if m := urlScheme.FindStringSubmatch(dsn); m != nil {
		return strings.ToLower(m[1])
	}
	if strings.Contains(dsn, "@tcp(") || strings.Contains(dsn, "@unix(") {
		return "mysql"
	}
	return "file"
}

// urlScheme matches a URL's scheme (RFC 3986).
var urlScheme = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9+.-]*)://`)

// dialectDrivers returns the registered drivers of an engine.
func dialectDrivers(name dialect.Name) []Driver {
	drivers.RLock()
	defer drivers.RUnlock()
	return drivers.byName[name]
}

// errCode returns the code of err according to the drivers registered for
// the engine name, or "".
func errCode(name dialect.Name, err error) string {
	if err == nil {
		return ""
	}
	for _, d := range dialectDrivers(name) {
		if c := d.Code(err); c != "" {
			return c
		}
	}
	return ""
}
