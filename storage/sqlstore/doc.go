// Package sqlstore is a SQL backend of Parley: one Store that implements
// both messaging.Repository and attachments.Repository over the same
// database, with bun (github.com/uptrace/bun), so that a message and its
// attachment links commit together.
//
//	store, err := sqlstore.Open(ctx, "parley.db", nil) // or "postgres://…", "mysql://…"
//	if err != nil { … }
//	defer store.Close()
//	if err := store.Migrate(ctx); err != nil { … }
//	msgs := messaging.New(store, nil)
//	files := attachments.New(store, blobs, msgs, nil)
//
// # Backends
//
//   - SQLite, through sqliteshim (modernc.org/sqlite: no cgo). Writes go
//     through one connection (SetMaxOpenConns(1)) whose transactions are
//     BEGIN IMMEDIATE; reads go through a pool of reader connections. The
//     database runs in WAL mode, with busy_timeout (Options.BusyTimeout)
//     and foreign_keys on.
//   - PostgreSQL, through pgdriver and pgdialect.
//   - MySQL 8 and MariaDB 10.6+, through go-sql-driver/mysql and
//     mysqldialect; InnoDB tables in utf8mb4 with binary collation (ids and
//     usernames compare and sort by bytes, as in Go); transactions run at
//     READ COMMITTED.
//
// Times are stored with microsecond precision (timestamptz, DATETIME(6),
// SQLite text in UTC) and returned in UTC.
//
// # DSN forms
//
// Open takes:
//
//   - "postgres://user:pass@host:5432/db?sslmode=disable" (or
//     "postgresql://"): the libpq URL form pgdriver reads; parameters it does
//     not know, such as search_path, are sent as connection parameters;
//   - "mysql://user:pass@host:3306/db?param=value": converted to a
//     go-sql-driver/mysql configuration (parameters as that driver reads
//     them); a DSN in the driver's own form, "user:pass@tcp(host:3306)/db",
//     works as well. The store always sets parseTime, loc=UTC and
//     clientFoundRows;
//   - anything else: a SQLite database file ("parley.db",
//     "/var/lib/parley/parley.db"), a "file:" URI whose parameters are kept,
//     or ":memory:" for a private in-memory database (one connection, for
//     tests).
//
// New wraps a *bun.DB that the caller opened and configured.
//
// # Schema and migrations
//
// Migrate applies versioned migrations with bun/migrate (bookkeeping in
// parley_migrations). It is idempotent, and safe when several processes
// start at once: PostgreSQL and MySQL serialize it with an advisory lock
// (pg_advisory_lock, GET_LOCK); on SQLite every version is applied in one
// IMMEDIATE transaction that records it, and skipped if already recorded.
//
// Tables: contacts (unique username); messages, indexed by
// (conversation_id, created_at DESC, id DESC) and (created_at DESC, id
// DESC), with counters of their reaction names and linked attachments
// (reaction_count, attachment_count; version 2, backfilled on upgrade)
// kept in the transactions that change them; reaction_names, one row per (message_id, name) with an increasing
// seq that keeps a name's place while it has reactors; reactions, one row
// per (message_id, name, reactor), unique, with an increasing seq that
// orders a name's reactors; attachments, indexed for conversation lists and
// by message; and pending_deletions, the blob keys whose rows are gone.
//
// # Concurrency
//
// Lists use keyset pagination on (created_at, id) in a form each engine
// reads from an index, and load a page in at most three queries: the
// messages with their contacts, then, only for the messages whose counters
// say they have some, their reactions and their attachments. A page or a
// message with neither is one query. On SQLite, reads outside
// transactions use prepared statements, kept per query text (up to 256).
// Writes that are one statement (a message without attachments, a
// contact, a touch) run without BEGIN and COMMIT. UpdateMessage locks the
// message row first (SELECT … FOR UPDATE; SQLite's single writer), so the
// changes of one message, and the limits of messaging.MessageChange, are
// serialized; the counters give the limits their value before the change. Reactions
// are merged by INSERT … ON CONFLICT DO NOTHING statements (MySQL: ON
// DUPLICATE KEY UPDATE), one for new names and one for new reactors, never
// by reading and rewriting them. An attachment is linked
// by one conditional UPDATE, so that of two messages linking it at once
// exactly one succeeds, and the other gets ErrConflict. Serialization
// failures and deadlocks (PostgreSQL 40001/40P01, MySQL 1213/1205) and a
// busy SQLite database are retried inside the store (Options.MaxRetries).
//
// # Durability
//
// SQLite runs with journal_mode=WAL and synchronous=NORMAL: every
// committed transaction survives the process being killed, but an
// operating-system crash or power loss may lose the last transactions
// committed before it (the database stays consistent). Use a "file:" DSN
// with _pragma=synchronous(FULL) to trade write speed for durability
// against power loss as well. PostgreSQL and MySQL are as durable as the
// server is configured to be.
//
// # Errors
//
// Contract conditions are the messaging and attachments sentinels:
// ErrNotFound, ErrConflict (a username taken, an attachment linked
// elsewhere), ErrInvalid (a limit of messaging.MessageChange). A database that
// cannot be reached (connection refused or reset, a bad connection, a
// deadline while connecting, a server shutting down or out of connections)
// is an *messaging.Error matching messaging.ErrUnavailable, whose Message
// shows no SQL; the driver's error is its cause. Other errors are the
// driver's, unchanged.
package sqlstore
