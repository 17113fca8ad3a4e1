// Package sqlstore stores Parley in a SQL database: SQLite, PostgreSQL, or
// MySQL 8 and MariaDB 10.6+, through bun (github.com/uptrace/bun). One
// Store holds messages, attachments' rows and events, so that a change and
// its events commit together; the messaging, attachments and events
// services are built on it.
//
// The package links no database driver: import the package of each engine
// the program opens, for its effect, as with database/sql; each documents
// its DSNs. The DSN's form picks the engine:
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
// New wraps a *bun.DB the program opened itself; Register plugs in another
// database/sql driver of these engines. A Store is safe for concurrent
// use, many instances may share one database, and the store changes
// nothing on its connections (behind PgBouncer, see package postgres).
// Migrate gives the database its installation id, which attachments'
// Claim and Reconcile use to tell this database's files from others' in
// a shared bucket. To keep the tables apart from the host's own, use
// Options.Schema on PostgreSQL, a database of its own on MySQL, a file of
// its own on SQLite. How the store works inside is in DESIGN.md §4.
//
// # Errors
//
// A database that cannot be reached gives errors matching
// messaging.ErrUnavailable. Serialization failures, deadlocks and a busy
// SQLite database are retried (Options.MaxRetries) before an error is
// returned; other errors are the driver's, wrapped.
package sqlstore
