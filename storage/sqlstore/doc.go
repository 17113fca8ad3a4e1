// Package sqlstore stores Parley in a SQL database: SQLite, PostgreSQL, or
// MySQL 8 and MariaDB 10.6+, through bun (github.com/uptrace/bun). One
// Store holds messages, attachments' rows and events, so that a change and
// its events commit together; the messaging, attachments and events
// services are built on it.
//
// The package links no database driver: import the package of each engine
// the program opens, for its effect, as with database/sql. The DSN's form
// picks the engine:
//
//	import _ "github.com/parleychat/parley/storage/sqlstore/sqlite"   // "data/parley.db", "file:…", ":memory:"
//	import _ "github.com/parleychat/parley/storage/sqlstore/postgres" // "postgres://user:pass@host:5432/db?sslmode=disable"
//	import _ "github.com/parleychat/parley/storage/sqlstore/mysql"    // "mysql://user:pass@host:3306/db", "user:pass@tcp(host:3306)/db"
//
//	store, err := sqlstore.Open(ctx, "data/parley.db", nil)
//	if err != nil { … }
//	defer store.Close()
//	if err := store.Migrate(ctx); err != nil { … } // at every start
//	msgs, err := messaging.New(ctx, store, blobs, nil)
//	if err != nil { … }
//	defer msgs.Close()
//	if err := msgs.Files().Claim(ctx); err != nil { … } // the bucket is this database's
//
// Each driver package documents its DSN parameters. A DSN whose driver the
// program does not import is an error that names the package. New wraps a
// *bun.DB the program opened itself; Register plugs in another
// database/sql driver of these engines.
//
// Migrate creates the tables, or brings them up to date; it is safe when
// several instances start at once, and it gives the database its
// installation id, which attachments' Claim and Reconcile use to tell this
// database's files from others' in a shared bucket. To keep the tables
// apart from the host's own, use Options.Schema on PostgreSQL (Migrate
// creates the schema), a database of its own on MySQL, a file of its own on
// SQLite.
//
// # Connections
//
// A Store is safe for concurrent use, and many instances may share one
// database. Open keeps at most Options.MaxOpenConns connections (16 on
// PostgreSQL and MySQL); a SQLite file gets one writer connection and a
// pool of readers. DB returns the database handle for the host's own
// queries; the store changes nothing on its connections. Close waits for
// the writes under way, then closes what Open opened.
//
// PostgreSQL behind PgBouncer in transaction pooling mode: add
// default_query_exec_mode=exec to the DSN and leave Options.Schema unset
// (package postgres); the store keeps no other session state.
//
// How the store works inside (migrations, the outbox's order, counting
// in the send, combined writes, prepared statements) is in DESIGN.md at the
// repository root.
//
// # Errors
//
// A database that cannot be reached gives errors matching
// messaging.ErrUnavailable; a malformed DSN or an Options.Schema the engine
// cannot use, messaging.ErrInvalid. Serialization failures, deadlocks and a
// busy SQLite database are retried (Options.MaxRetries) before an error is
// returned; other errors are the driver's, wrapped.
package sqlstore
