package postgres

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/parleychat/parley/internal/pgtx"
)

// The store's connections fold a transaction's BEGIN into its first
// statement and its COMMIT into a last statement that asks for it
// (internal/pgtx): each is a round trip saved, and the transactions that
// change one popular message follow each other, so their round trips set
// its pace.

// foldingConnector makes the connections of c fold BEGIN and COMMIT.
type foldingConnector struct{ c *pgdriver.Connector }

func (f foldingConnector) Connect(ctx context.Context) (sqldriver.Conn, error) {
	cn, err := f.c.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &foldingConn{Conn: cn.(*pgdriver.Conn)}, nil
}

func (f foldingConnector) Driver() sqldriver.Driver { return foldingDriver{f} }

// foldingDriver is the driver of foldingConnector; it implements pgtx.Driver.
type foldingDriver struct{ f foldingConnector }

func (d foldingDriver) Open(string) (sqldriver.Conn, error) { return d.f.Connect(context.Background()) }

// FoldsTransactions reports true.
func (foldingDriver) FoldsTransactions() bool { return true }

var _ pgtx.Driver = foldingDriver{}

// foldState is where a foldingConn is in a transaction.
type foldState int

const (
	noTx        foldState = iota
	beginUnsent           // begun, BEGIN not sent yet
	inTx                  // BEGIN sent
	aborted               // its first statement, which carried BEGIN, failed
	committed             // a statement committed it (pgtx.CommitSuffix)
)

// foldingConn is a pgdriver connection that folds BEGIN and COMMIT.
// database/sql uses a connection from one goroutine at a time.
type foldingConn struct {
	*pgdriver.Conn
	state foldState
	// broken is set once a call failed on the connection itself (a
	// timeout, a reset): what the server did is unknown, so the
	// connection is done for, and its closing sends nothing more.
	broken bool
}

// check notes an error of the connection itself, and returns err.
// pgdriver bounds a call without a deadline by its read timeout (10 s),
// and closing a statement on a connection that stopped answering would
// wait that long for each: database/sql closes them all when it discards
// the connection, in the goroutine of the request that found it broken.
func (c *foldingConn) check(err error) error {
	if err == nil || answered(err) || c.broken {
		return err
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, sqldriver.ErrBadConn) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		c.broken = true
		_ = c.Conn.Conn().Close() // what waits on it returns at once
	}
	return err
}

// IsValid reports false once the connection broke, so that database/sql
// discards it rather than reuse it.
func (c *foldingConn) IsValid() bool { return !c.broken && c.Conn.IsValid() }

var (
	_ sqldriver.ConnBeginTx        = (*foldingConn)(nil)
	_ sqldriver.ExecerContext      = (*foldingConn)(nil)
	_ sqldriver.QueryerContext     = (*foldingConn)(nil)
	_ sqldriver.ConnPrepareContext = (*foldingConn)(nil)
	_ sqldriver.SessionResetter    = (*foldingConn)(nil)
)

// BeginTx sends nothing for a transaction of the default options; others
// begin as pgdriver begins them.
func (c *foldingConn) BeginTx(ctx context.Context, opts sqldriver.TxOptions) (sqldriver.Tx, error) {
	if opts.Isolation != sqldriver.IsolationLevel(sql.LevelDefault) || opts.ReadOnly {
		if _, err := c.Conn.BeginTx(ctx, opts); err != nil {
			return nil, err
		}
		c.state = inTx
		return foldingTx{c}, nil
	}
	c.state = beginUnsent
	return foldingTx{c}, nil
}

// Begin is BeginTx with the default options.
func (c *foldingConn) Begin() (sqldriver.Tx, error) {
	return c.BeginTx(context.Background(), sqldriver.TxOptions{})
}

// fold returns query with the BEGIN in front that it must carry, if any.
// From here on the transaction counts as begun: if the query fails, the
// server may have run its BEGIN, and the rollback must be sent.
func (c *foldingConn) fold(query string) string {
	if c.state != beginUnsent {
		return query
	}
	c.state = inTx
	return "BEGIN; " + query
}

func (c *foldingConn) ExecContext(ctx context.Context, query string, args []sqldriver.NamedValue) (sqldriver.Result, error) {
	if c.state == aborted {
		return nil, pgtx.ErrAborted
	}
	first := c.state == beginUnsent
	query = c.fold(query)
	res, err := c.Conn.ExecContext(ctx, query, args)
	err = c.check(err)
	if c.state == inTx && strings.HasSuffix(query, pgtx.CommitSuffix) {
		switch {
		case err == nil:
			c.state = committed
		case !answered(err):
			err = fmt.Errorf("%w: %w", pgtx.ErrCommitUnknown, err)
		}
	}
	if err != nil && first {
		c.state = aborted
	}
	return res, err
}

func (c *foldingConn) QueryContext(ctx context.Context, query string, args []sqldriver.NamedValue) (sqldriver.Rows, error) {
	if c.state == aborted {
		return nil, pgtx.ErrAborted
	}
	first := c.state == beginUnsent
	rows, err := c.Conn.QueryContext(ctx, c.fold(query), args)
	err = c.check(err)
	if err != nil && first {
		c.state = aborted
	}
	return rows, err
}

// answered reports whether err is the server's answer that a statement
// failed (severity ERROR): the transaction is then aborted, or rolled
// back, and nothing of it committed. A FATAL error ends the session, and
// an error of the connection says nothing of what the server did.
func answered(err error) bool {
	var pe pgdriver.Error
	return errors.As(err, &pe) && pe.Field('V') == "ERROR"
}

// PrepareContext prepares query; the statement sends the transaction's
// BEGIN, alone, before it runs first in one.
func (c *foldingConn) PrepareContext(ctx context.Context, query string) (sqldriver.Stmt, error) {
	st, err := c.Conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, c.check(err)
	}
	return &foldingStmt{Stmt: st, c: c}, nil
}

func (c *foldingConn) Prepare(query string) (sqldriver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// begin sends the BEGIN not sent yet, alone.
func (c *foldingConn) begin(ctx context.Context) error {
	if c.state == aborted {
		return pgtx.ErrAborted
	}
	if c.state != beginUnsent {
		return nil
	}
	c.state = inTx
	_, err := c.Conn.ExecContext(ctx, "BEGIN", nil)
	return c.check(err)
}

// end ends the transaction with cmd (COMMIT or ROLLBACK), unless it ran
// nothing or a statement committed it. An aborted transaction is rolled
// back (the server may have run its BEGIN), and a COMMIT of it fails.
func (c *foldingConn) end(cmd string) error {
	st := c.state
	c.state = noTx
	switch {
	case st == beginUnsent || st == committed:
		return nil
	case c.broken:
		return sqldriver.ErrBadConn
	case st == aborted:
		if _, err := c.Conn.ExecContext(context.Background(), "ROLLBACK", nil); err != nil || cmd == "ROLLBACK" {
			return c.check(err)
		}
		return pgtx.ErrAborted
	}
	_, err := c.Conn.ExecContext(context.Background(), cmd, nil)
	return c.check(err)
}

func (c *foldingConn) ResetSession(ctx context.Context) error {
	c.state = noTx
	if c.broken {
		return sqldriver.ErrBadConn
	}
	return c.check(c.Conn.ResetSession(ctx))
}

// foldingTx is a transaction of a foldingConn.
type foldingTx struct{ c *foldingConn }

func (t foldingTx) Commit() error   { return t.c.end("COMMIT") }
func (t foldingTx) Rollback() error { return t.c.end("ROLLBACK") }

// foldingStmt is a statement prepared on a foldingConn. pgdriver's
// statements run in the extended protocol, one statement a round trip, so
// a BEGIN not sent yet goes first, alone.
type foldingStmt struct {
	sqldriver.Stmt // pgdriver's, a StmtExecContext and StmtQueryContext
	c              *foldingConn
}

var (
	_ sqldriver.StmtExecContext  = (*foldingStmt)(nil)
	_ sqldriver.StmtQueryContext = (*foldingStmt)(nil)
)

func (s *foldingStmt) ExecContext(ctx context.Context, args []sqldriver.NamedValue) (sqldriver.Result, error) {
	if err := s.c.begin(ctx); err != nil {
		return nil, err
	}
	res, err := s.Stmt.(sqldriver.StmtExecContext).ExecContext(ctx, args)
	return res, s.c.check(err)
}

func (s *foldingStmt) QueryContext(ctx context.Context, args []sqldriver.NamedValue) (sqldriver.Rows, error) {
	if err := s.c.begin(ctx); err != nil {
		return nil, err
	}
	rows, err := s.Stmt.(sqldriver.StmtQueryContext).QueryContext(ctx, args)
	return rows, s.c.check(err)
}

// Close closes the statement on the server, unless the connection broke:
// then the connection's end closes it.
func (s *foldingStmt) Close() error {
	if s.c.broken {
		return nil
	}
	return s.c.check(s.Stmt.Close())
}
