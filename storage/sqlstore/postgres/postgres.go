// Package postgres registers PostgreSQL with sqlstore.Open, through pgx
// (github.com/jackc/pgx/v5/stdlib) and bun's pgdialect; import it for its
// effect. It handles the schemes "postgres" and "postgresql", in the URL
// or key=value form pgx reads (sslmode, connect_timeout, pgx's own
// default_query_exec_mode, …). sqlstore.Options.Schema, when set, is sent
// as the connections' search_path. A call's context cancels its statement
// on the server.
//
// # Behind a pooler
//
// By default the statements that take arguments run from pgx's cache of
// prepared statements of each connection; nothing else is left on the
// connections. Behind PgBouncer in transaction pooling mode, which keeps
// no prepared statement from one transaction to the next, set
// default_query_exec_mode to exec:
//
//	postgres://parley:secret@pgbouncer:6432/app?sslmode=disable&default_query_exec_mode=exec
//
// Every statement is then sent unnamed, and no cancel request is sent
// when a call's context ends (PgBouncer 1.18 may crash on one): pgx
// closes the connection instead. Leave Options.Schema unset there
// (PgBouncer refuses a search_path startup parameter): give the store a
// database of its own. DESIGN.md §4.6 has the figures.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/schema"

	"github.com/parleychat/parley/storage/sqlstore"
)

func init() {
	sqlstore.Register("postgres", driver{})
	sqlstore.Register("postgresql", driver{})
}

type driver struct{}

func (driver) Dialect() schema.Dialect { return pgdialect.New() }

// Code returns the SQLSTATE of a PostgreSQL error.
func (driver) Code(err error) string {
	var e *pgconn.PgError
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func (driver) Open(dsn string, o sqlstore.Options) (w, r *sql.DB, err error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, nil, err
	}
	if o.Schema != "" {
		cfg.RuntimeParams["search_path"] = o.Schema
	}
	var opts []stdlib.OptionOpenDB
	if setsExecMode(dsn) {
		opts = append(opts, stdlib.OptionBeforeConnect(noCancelRequests))
	} else {
		// Statements without arguments (bun's values are in the text)
		// are not worth preparing; the others ask (CachedStatements).
		cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	return o.SizePool(stdlib.OpenDB(*cfg, opts...), 16), nil, nil
}

// errNoCancelRequest is what a pooler-safe connection's dialer answers a
// cancel request with.
var errNoCancelRequest = errors.New("postgres: no cancel requests behind a pooler")

// noCancelRequests makes the connection cc configures send no cancel
// request: pgx dials one with cc's DialFunc when a call's context ends
// during a statement, and the dialer refuses once the connection is made.
func noCancelRequests(_ context.Context, cc *pgx.ConnConfig) error {
	dial, after := cc.DialFunc, cc.AfterConnect
	var connected atomic.Bool
	cc.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if connected.Load() {
			return nil, errNoCancelRequest
		}
		return dial(ctx, network, addr)
	}
	cc.AfterConnect = func(ctx context.Context, c *pgconn.PgConn) error {
		connected.Store(true)
		if after != nil {
			return after(ctx, c)
		}
		return nil
	}
	return nil
}

// CachedStatements returns the first argument of a statement that runs
// from pgx's per-connection statement cache, or nil when the DSN chose
// how statements run (default_query_exec_mode).
func (driver) CachedStatements(dsn string) any {
	if setsExecMode(dsn) {
		return nil
	}
	return pgx.QueryExecModeCacheStatement
}

// setsExecMode reports whether dsn sets pgx's default_query_exec_mode.
func setsExecMode(dsn string) bool {
	return strings.Contains(dsn, "default_query_exec_mode")
}
