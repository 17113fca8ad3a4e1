// Package sqlite registers SQLite with sqlstore.Open, through bun's
// sqliteshim (modernc.org/sqlite: no cgo); import it for its effect. It
// handles every DSN that names no other scheme: a file path ("parley.db"),
// a "file:" URI whose parameters are kept, or ":memory:" for a private
// in-memory database on a single connection (for tests).
//
// A file is opened as two pools: one connection for writes, whose
// transactions are BEGIN IMMEDIATE, and readers (Options.MaxOpenConns).
// Every connection runs with busy_timeout (Options.BusyTimeout),
// foreign_keys on, journal_mode=WAL and synchronous=NORMAL: a committed
// transaction survives the process being killed, but an operating-system
// crash or power loss may lose the last ones (the database stays
// consistent). A "file:" DSN's own pragmas win:
// "file:parley.db?_pragma=synchronous(FULL)" is durable against power loss.
// A read-only DSN ("file:parley.db?mode=ro") keeps the file's journal
// mode: setting it is a write.
package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/sqliteshim"
	"github.com/uptrace/bun/schema"

	"github.com/parleychat/parley/storage/sqlstore"
)

func init() { sqlstore.Register("file", driver{}) }

type driver struct{}

func (driver) Dialect() schema.Dialect { return sqlitedialect.New() }

// Code returns the extended result code of a modernc.org/sqlite error.
func (driver) Code(err error) string {
	var c interface{ Code() int } // *sqlite.Error
	if errors.As(err, &c) {
		return strconv.Itoa(c.Code())
	}
	return ""
}

// Open returns the writer and, for a file, the reader pool.
func (driver) Open(dsn string, o sqlstore.Options) (w, r *sql.DB, err error) {
	if dsn == "" {
		return nil, nil, errors.New("empty SQLite path")
	}
	memory := dsn == ":memory:"
	w, err = sql.Open(sqliteshim.ShimName, driverDSN(dsn, "immediate", o.BusyTimeout, memory))
	if err != nil {
		return nil, nil, err
	}
	w.SetMaxOpenConns(1) // the single writer, never closed (database/sql's defaults)
	if memory {
		return w, nil, nil // every connection to ":memory:" is a database of its own
	}
	r, err = sql.Open(sqliteshim.ShimName, driverDSN(dsn, "deferred", o.BusyTimeout, false))
	if err != nil {
		_ = w.Close()
		return nil, nil, err
	}
	return w, o.SizePool(r, max(4, 2*runtime.GOMAXPROCS(0))), nil
}

// driverDSN returns the driver DSN, with the pragmas of the package doc;
// txlock is the BEGIN mode.
func driverDSN(dsn, txlock string, busy time.Duration, memory bool) string {
	full := dsn
	if !strings.HasPrefix(full, "file:") {
		full = "file:" + full
	}
	sep := "?"
	if strings.Contains(full, "?") {
		sep = "&"
	}
	ms := busy.Milliseconds()
	_, query, _ := strings.Cut(full, "?")
	readOnly := slices.Contains(strings.Split(strings.ToLower(query), "&"), "mode=ro")
	if sqliteshim.DriverName() != "sqlite" { // mattn/go-sqlite3 (-tags cgosqlite)
		p := fmt.Sprintf("_busy_timeout=%d&_foreign_keys=on&_txlock=%s", ms, txlock)
		if !memory && !readOnly {
			p += "&_journal_mode=WAL"
		}
		if !memory {
			p += "&_synchronous=NORMAL"
		}
		return full + sep + p
	}
	// Defaults for the pragmas the DSN does not set itself.
	pragmas := []string{fmt.Sprintf("busy_timeout(%d)", ms), "foreign_keys(ON)"}
	if !memory && !readOnly {
		pragmas = append(pragmas, "journal_mode(WAL)")
	}
	if !memory {
		pragmas = append(pragmas, "synchronous(NORMAL)", "journal_size_limit(67108864)", "temp_store(MEMORY)", "cache_size(-16000)")
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
