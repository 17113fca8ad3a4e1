// Package sqlstore is Parley's SQL backend: one Store that implements both
// messaging.Repository and attachments.Repository over one database, with
// bun (github.com/uptrace/bun), so that a message and the links of its
// attachments commit together.
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
// # Errors
//
// Contract conditions are bare messaging kinds: ErrNotFound, ErrConflict
// (a username taken, an attachment linked elsewhere), and the error of a
// messaging.MessageChange's Check as it is. A
// database that cannot be reached gives an error matching
// messaging.ErrUnavailable, with the driver's error as its cause. Other
// errors are the driver's, after the store has retried serialization
// failures, deadlocks and a busy SQLite database (Options.MaxRetries).
package sqlstore
