// Package sqlstore is Parley's SQL backend: one Store that implements
// driver.MessageStore, driver.AttachmentStore and driver.EventStore over
// one database, with bun (github.com/uptrace/bun), so that a message, the
// links of its attachments and its events commit together.
//
// The package links no database driver. A program imports the driver
// package of its engine, which registers its DSNs with Open, then opens
// the store and brings its schema up to date:
//
//	import _ "github.com/parleychat/parley/storage/sqlstore/sqlite"
//
//	store, err := sqlstore.Open(ctx, "data/parley.db", nil)
//	if err != nil { … }
//	defer store.Close()
//	if err := store.Migrate(ctx); err != nil { … }
//	msgs := messaging.New(store, nil)
//	files := attachments.New(store, blobs, msgs, nil)
//
// New wraps a *bun.DB the program opened itself.
//
// # Backends
//
//   - SQLite: storage/sqlstore/sqlite (modernc.org/sqlite, no cgo); a file
//     in WAL mode, one writer connection and a pool of readers.
//   - PostgreSQL: storage/sqlstore/postgres (pgdriver).
//   - MySQL 8 and MariaDB 10.6+: storage/sqlstore/mysql
//     (go-sql-driver/mysql); InnoDB, utf8mb4 with binary collation,
//     transactions at READ COMMITTED.
//
// The driver packages document their DSNs. Another database/sql driver of
// these engines can be plugged in with Register.
//
// # Beside the host's tables
//
// The store's tables have plain names (messages, contacts, …). To keep
// them apart from a host's own tables, give them a namespace of their own
// rather than a name prefix: on PostgreSQL, a schema (Options.Schema,
// which Migrate creates); on MySQL and MariaDB, a database of its own
// named in the DSN; on SQLite, a file of its own, which the host can
// ATTACH to join across.
//
// # Events in commit order
//
// The writes store their events in the table events, in their
// transactions (version 20261123000003: events, with the JSON of the
// resource after the change, indexed by seq, by id and, on PostgreSQL and
// MySQL, by conversation; event_sequence; event_cursors, the positions and
// claims of the Feed's handlers). Readers of the outbox follow each
// event's seq, which must never let a reader pass over an event that
// commits later. On SQLite the writes are serialized, and seq is the rowid
// given at insert. On PostgreSQL and MySQL, transactions commit in another
// order than they insert, so the writes leave seq NULL, and every reader
// first numbers the events that have committed since (ReadEvents,
// LastEvent): under the lock of the one row of event_sequence, in the
// order of insertion (an identity column), after the greatest seq given.
// Writers take no lock and wait for nothing; numbering costs readers one
// short transaction when something is new. On PostgreSQL the event of a
// message without attachments is inserted in the same statement as the
// message.
//
// # Counting sends
//
// On SQLite a send counts its message in its conversation's counters in
// its own transaction. On PostgreSQL and MySQL that would make the sends
// of one conversation wait for each other's lock on its row, each until
// its commit is flushed; there a send inserts a tally of its message
// (version 20261123000007, message_tallies) and writes no shared row, and
// the tallies are folded into the counters under the conversation's lock
// when it is read, by MarkRead and every 64 sends (see tallies.go). On
// PostgreSQL a send without attachments is one statement, prepared once,
// without a transaction (its key's record, when keyed, in it too); on
// SQLite the statements of a send are prepared once on the writer.
//
// On PostgreSQL, sends without attachments that arrive while two such
// statements run wait, and the next statement stores all of them (up to
// 64), from arrays, each as alone (sends.go): many callers sending at once
// take one commit per statement rather than one per send. A statement
// that the server refuses (a message id or a key's record in its way, a
// lock or statement timeout) stored nothing, and its sends are made again
// (those without a key together, those with one alone), so that a send
// fails only of its own error; an error of the database (unreachable, a
// statement whose outcome is unknown) is each caller's, as alone. A send
// does not wait behind statements that have all run for 100 ms (waiting
// for a lock): it is made alone beside them. A send that waits is not made
// once its caller's context ends.
//
// # Reactions and prepared statements in transactions
//
// A change of one message locks its row first, so that its counters and
// limits are decided one change at a time. The changes of one message
// that arrive while a transaction changes it wait, and the next
// transaction makes them all, in order, each as alone, and commits them
// together (combine.go): a popular message takes many changes per commit
// rather than one. On PostgreSQL a change of reactions alone, added in
// one reactor's name or one reactor's taken back (every change the
// messaging.Service makes), is then one statement (reactOne in
// reactions.go), which also updates the message's row and returns its
// reactions after the change; the reactions of a combined transaction go
// in one round trip (reactMany, which keeps SQL prepared statements and a
// temporary table, parley_reacted, on each connection), and their events
// in one statement. On the connections that package postgres opens, a
// transaction's BEGIN goes with its first statement (the message's lock,
// sent unprepared for it) and a combined transaction's COMMIT with its
// events: three round trips where there were five, which sets the pace of
// a popular message when the database is across a network. The statements of
// write transactions are prepared once a first transaction ran them
// (PostgreSQL from the cache of the reads, SQLite on its one writer
// connection): preparing takes a connection of the pool, so a transaction
// never prepares; the statements it ran unprepared are prepared after it
// commits. Prepared statements run through database/sql, not through
// bun's query hooks: a host's hooks (logging, tracing) see the statements
// that are not prepared only.
//
// # Stale prepared statements
//
// PostgreSQL refuses to run a prepared statement whose result columns a
// schema change has changed the type of (ALTER TABLE … ALTER COLUMN …
// TYPE, by a newer instance's migration during a rolling deployment or by
// the host): SQLSTATE 0A000, "cached plan must not change result type".
// The store then drops the statement from its cache, to prepare it anew
// at its next use, and runs the operation again: a read or a write
// outside a transaction at once, unprepared; a transaction, which the
// error aborted, whole, as a serialization failure (Options.MaxRetries).
// The caller does not see the error.
//
// # Idempotency keys and revisions
//
// Version 20261123000002 adds idempotency_keys, one row per (scope,
// client_key) with the request's fingerprint, the kept result and
// expires_at (indexed, for pruning), and message_revisions, the earlier
// texts of edited messages, indexed by (message_id, created_at DESC, id
// DESC). A keyed write stores its key's row in the write's transaction with one
// conditional upsert, which replaces only an expired row or the write's own
// claim, and rolls back with driver.ErrKeyTaken when another row is in
// the way (MySQL reads the row FOR UPDATE first); on SQLite the upsert is
// prepared once on the writer connection. An upload's claim is a row with
// a lock_token, inserted by one statement that on PostgreSQL commits
// without waiting for the WAL to be flushed: a claim lost in a crash is as
// if never made, and the write that completes it flushes it. UpdateMessage
// keeps the replaced text in the edit's transaction; DeleteMessage removes
// the revisions of an edited message with it.
//
// # Copies
//
// A Store is a storecopy.Source and storecopy.Sink, so that
// storage/storecopy (and the example server's copy command) can move a
// whole Parley into or out of it. Snapshot reads every table in one
// read-only transaction (REPEATABLE READ on PostgreSQL and MySQL, a read
// transaction of SQLite's WAL), each with one query streamed in the order
// of its key; Load writes a batch with multi-row INSERTs that skip the
// rows already there (ON CONFLICT DO NOTHING; MySQL: ON DUPLICATE KEY
// UPDATE of the key to itself), counters and reaction sequences as given
// (PostgreSQL's identity of seq then continues after the greatest).
//
// # Errors
//
// Contract conditions are bare messaging kinds: ErrNotFound, ErrConflict
// (a username taken, an attachment linked elsewhere), and the error of a
// driver.MessageChange's Check as it is. A
// database that cannot be reached gives an error matching
// messaging.ErrUnavailable, with the driver's error as its cause. Other
// errors are the driver's, after the store has retried serialization
// failures, deadlocks, stale prepared statements and a busy SQLite
// database (Options.MaxRetries).
package sqlstore
