// Package postgres registers PostgreSQL with sqlstore.Open, through bun's
// pgdriver. Import it for its effect:
//
//	import _ "github.com/parleychat/parley/storage/sqlstore/postgres"
//
//	store, err := sqlstore.Open(ctx, "postgres://parley:secret@db:5432/app?sslmode=disable", nil)
//
// It handles the schemes "postgres" and "postgresql", in the libpq URL
// form pgdriver reads (sslmode, connect_timeout, application_name, …);
// other parameters, such as search_path, are sent to the server as
// connection parameters. sqlstore.Options.Schema, when set, replaces the
// DSN's search_path. The pool holds Options.MaxOpenConns connections
// (default 16).
//
// The connections have plan_cache_mode set to force_generic_plan unless
// the DSN sets it: the store runs its reads by key and by the range of one
// index as prepared statements, whose generic plan the server keeps,
// rather than parsing and planning each anew (a page of messages took
// longer to plan than to run). It applies to prepared statements only:
// those of a host's own, on the store's connections (Store.DB), too.
//
// A transaction of the default options sends no BEGIN of its own: its
// first statement carries it, when that statement is not a prepared one
// (which sends it first, alone), and a transaction that runs nothing
// sends nothing. The store also commits some transactions with their last
// statement. Each saves a round trip; a host's transactions on Store.DB
// behave as any PostgreSQL transaction does (after an error in the first
// statement, the others fail until the rollback, as the server would have
// it). The pool's driver and connections wrap pgdriver's own types, so
// pgdriver.NewListener, CopyFrom and CopyTo, which need those, take a pool
// of their own: sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn))).
package postgres

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/driver/pgdriver"
	"github.com/uptrace/bun/schema"

	"github.com/parleychat/parley/storage/sqlstore"
)

func init() {
	sqlstore.Register("postgres", driver{})
	sqlstore.Register("postgresql", driver{})
}

type driver struct{}

func (driver) Dialect() schema.Dialect { return pgdialect.New() }

// Code returns the SQLSTATE of a pgdriver error.
func (driver) Code(err error) string {
	var e pgdriver.Error
	if errors.As(err, &e) {
		return e.Field('C')
	}
	return ""
}

func (driver) Open(dsn string, o sqlstore.Options) (w, r *sql.DB, err error) {
	// Validate the DSN now: pgdriver.NewConnector panics on a bad one.
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, nil, err
	}
	q := u.Query()
	if o.Schema != "" {
		q.Set("search_path", o.Schema)
	}
	if !q.Has("plan_cache_mode") {
		// The store prepares only the reads whose plan suits every value
		// of their arguments (sqlstore's readPrepared); left to choose,
		// the server plans some of them anew at every run, which costs
		// more than running them.
		q.Set("plan_cache_mode", "force_generic_plan")
	}
	u.RawQuery = q.Encode()
	dsn = u.String()
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
		return nil, nil, err
	}
	db := sql.OpenDB(foldingConnector{connector})
	n := o.MaxOpenConns
	if n <= 0 {
		n = 16
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return db, nil, nil
}
