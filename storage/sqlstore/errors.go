package sqlstore

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/uptrace/bun/dialect"

	"github.com/parleychat/parley/messaging"
)

// sqliteCode returns the (extended) result code of a SQLite error, or 0;
// its low byte is the primary code.
func sqliteCode(err error) int {
	n, _ := strconv.Atoi(errCode(dialect.SQLite, err))
	return n
}

// sqliteBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED.
func sqliteBusy(err error) bool {
	c := sqliteCode(err) & 0xff
	return c == 5 || c == 6
}

// pgCode returns the SQLSTATE of a PostgreSQL error, or "".
func pgCode(err error) string { return errCode(dialect.PG, err) }

// mysqlCode returns the error number of a MySQL error, or 0. A connection
// the driver found broken is 2013 (CR_SERVER_LOST).
func mysqlCode(err error) uint16 {
	n, _ := strconv.ParseUint(errCode(dialect.MySQL, err), 10, 16)
	return uint16(n)
}

// stalePlan reports whether err, of a prepared statement, is PostgreSQL's
// "cached plan must not change result type" (SQLSTATE 0A000, also that of
// every unsupported feature): prepared again, the statement runs.
func stalePlan(err error) bool { return pgCode(err) == "0A000" }

// staleError is the error of a transaction's stale statement, which the
// cache dropped (staleInCachedTx), or of its BEGIN on a stale connection,
// closed while idle (connLost): run again, the transaction may succeed.
type staleError struct{ err error }

func (e *staleError) Error() string { return e.err.Error() }
func (e *staleError) Unwrap() error { return e.err }

// connLost reports whether err, of a PostgreSQL statement, says that its
// connection was closed, with an answer that ends the session (08:
// connection exception; 57P0x: shutdown, idle_session_timeout) or
// without one. A timeout is not: the statement may still be running.
func connLost(err error) bool {
	if c := pgCode(err); c != "" {
		return strings.HasPrefix(c, "08") || strings.HasPrefix(c, "57P")
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	// pgx's errors of a connection it found closed before it sent
	// anything (pgconn.SafeToRetry).
	var safe interface{ SafeToRetry() bool }
	if errors.As(err, &safe) && safe.SafeToRetry() {
		return true
	}
	return broken(err) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)
}

// broken reports whether err says that a connection broke under a
// statement.
func broken(err error) bool {
	return errors.Is(err, sqldriver.ErrBadConn) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrUnexpectedEOF)
}

// retryable reports whether a transaction that failed with err may succeed
// if run again.
func (s *store) retryable(err error) bool {
	var stale *staleError
	if errors.As(err, &stale) || sqliteBusy(err) {
		return true
	}
	switch pgCode(err) {
	case "40001", "40P01": // serialization_failure, deadlock_detected
		return true
	}
	switch mysqlCode(err) {
	case 1213, 1205: // ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT
		return true
	}
	return false
}

// isUniqueViolation reports whether err is a unique or primary key
// violation.
func isUniqueViolation(err error) bool {
	if pgCode(err) == "23505" || mysqlCode(err) == 1062 {
		return true
	}
	switch sqliteCode(err) {
	case 2067, 1555: // SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_PRIMARYKEY
		return true
	case 19: // SQLITE_CONSTRAINT
		return strings.Contains(err.Error(), "UNIQUE")
	}
	return false
}

// unavailable reports whether err means that the database cannot be
// reached or cannot serve now, rather than that the request is wrong.
func unavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ECONNREFUSED) || broken(err) || networkError(err) {
		return true
	}
	if c := pgCode(err); c != "" {
		// 08: connection exception; 53: insufficient resources (too many
		// connections, disk full); 57P0x: shutting down or starting up.
		return strings.HasPrefix(c, "08") || strings.HasPrefix(c, "53") ||
			c == "57P01" || c == "57P02" || c == "57P03"
	}
	switch mysqlCode(err) {
	case 1040, 1053, 1077, 1152, 1158, 1159, 1160, 1161, 1203, 1226: // too many connections, shutdown, aborted connections, user limits
		return true
	case 2006, 2013: // CR_SERVER_GONE_ERROR, CR_SERVER_LOST: the connection broke
		return true
	}
	return sqliteCode(err)&0xff == 14 // SQLITE_CANTOPEN
}

// wrapErr returns err as the store returns it: a contract error (one with a
// messaging kind) as it is, an unreachable database as one of kind
// messaging.ErrUnavailable, anything else with op (the Service turns it
// into an internal error, shown to no one).
func wrapErr(op string, err error) error {
	if err == nil || messaging.KindOf(err) != 0 {
		return err
	}
	if unavailable(err) {
		return fmt.Errorf("%s: %w: %w", op, messaging.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// wrapTo sets *err to wrapErr(op, *err): deferred by the store's methods
// with named results.
func wrapTo(op string, err *error) { *err = wrapErr(op, *err) }

func notFound(what string) error {
	return fmt.Errorf("sqlstore: no such %s: %w", what, messaging.ErrNotFound)
}

func conflict(msg string) error {
	return fmt.Errorf("sqlstore: %s: %w", msg, messaging.ErrConflict)
}

func invalid(msg string) error {
	return fmt.Errorf("sqlstore: %s: %w", msg, messaging.ErrInvalid)
}

// networkError reports whether err is the failure of a network operation:
// a *net.OpError, or a net.Error other than a bare syscall.Errno (a local
// failure, such as a full disk, which waiting will not mend).
func networkError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) {
		return true
	}
	var ne net.Error
	if !errors.As(err, &ne) {
		return false
	}
	_, local := ne.(syscall.Errno)
	return !local
}
