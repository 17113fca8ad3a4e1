package sqlstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
)

// Tables of bun/migrate's bookkeeping.
const (
	migrationsTable      = "parley_migrations"
	migrationsLocksTable = "parley_migration_locks"
)

// migrationFiles holds the migrations of each engine, in bun/migrate's
// SQL files, in migrations/sqlite, migrations/postgres and
// migrations/mysql: one initial migration each. Until the first release
// it is changed in place; from then on migrations are immutable, and a
// change to the schema is a new file. SQLite's and PostgreSQL's run in a
// transaction (.tx.up.sql); MySQL's DDL commits implicitly, so its
// statements are written to be run again after an interrupted run.
//
//go:embed migrations
var migrationFiles embed.FS

// Migrate brings the schema up to date: it applies, in order, the
// migrations that the database has not recorded (in the table
// parley_migrations). It is idempotent, and safe when several processes
// start at once. On PostgreSQL each migration takes a transaction-scoped
// advisory lock (pg_advisory_xact_lock) of the database, or of
// Options.Schema, in its transaction, and is skipped if another process
// applied it meanwhile: no lock outlives a transaction, so that Migrate
// is safe behind a pooler in transaction mode (PgBouncer). On SQLite each
// migration's IMMEDIATE transaction holds the database's write lock. On
// MySQL Migrate holds GET_LOCK on a connection of its own while it runs.
// With Options.Schema it first creates that schema if it does not exist.
//
// The tables are contacts, messages, reaction_names, reactions (by contact
// id), attachments, pending_deletions (the blob keys whose rows are gone),
// conversations and conversation_members, message_revisions,
// idempotency_keys, events (and, PostgreSQL and MySQL, event_log), event_cursors
// and (PostgreSQL, MySQL) event_sequence, parley_installation, and
// bun/migrate's parley_migrations and parley_migration_locks.
func (st *Store) Migrate(ctx context.Context) error { return st.s.Migrate(ctx) }

func (s *store) Migrate(ctx context.Context) error {
	err := s.migrate(ctx)
	if err == nil {
		s.prepareWrites(ctx)
	}
	return wrapErr("sqlstore.Migrate", err)
}

// errApplied stops a migration that another process applied while this
// one waited for the lock.
var errApplied = errors.New("applied by another process")

func (s *store) migrate(ctx context.Context) error {
	files, err := fs.Sub(migrationFiles, "migrations/"+s.eng.name())
	if err != nil {
		return err
	}
	ms := migrate.NewMigrations()
	if err := ms.Discover(files); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	m := migrate.NewMigrator(s.w, ms,
		migrate.WithTableName(migrationsTable),
		migrate.WithLocksTableName(migrationsLocksTable),
		migrate.WithMarkAppliedOnSuccess(true),
		migrate.WithUpsert(true),
		migrate.BeforeMigration(s.claimMigration),
		migrate.AfterMigration(recordMigration))

	unlock, err := s.eng.lockMigrations(ctx, s)
	if err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	defer unlock()
	if err := s.eng.initMigrations(ctx, s, m); err != nil {
		return fmt.Errorf("migrate: init: %w", err)
	}
	for {
		group, err := m.Migrate(ctx)
		if errors.Is(err, errApplied) {
			continue // read which are applied again
		}
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if !group.IsZero() {
			s.opts.Logger.InfoContext(ctx, "sqlstore: schema migrated", "engine", s.eng.name(), "applied", group.Migrations.String())
		}
		return nil
	}
}

// migrationLock is the row of bun/migrate's table of locks, which the
// store does not use but creates, as Migrator.Init does.
type migrationLock struct {
	ID        int64  `bun:",pk,autoincrement"`
	TableName string `bun:",unique"`
}

// claimMigration runs first in a migration, in its transaction (SQLite,
// PostgreSQL): on PostgreSQL it takes the migration lock, which the
// transaction's end releases (SQLite's IMMEDIATE transaction holds the
// database's), and it returns errApplied if another process applied the
// migration while this one waited.
func (s *store) claimMigration(ctx context.Context, db bun.IConn, mig *migrate.Migration) error {
	if err := s.eng.claimMigration(ctx, s, db); err != nil {
		return err
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+migrationsTable+" WHERE name = ?", mig.Name).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return errApplied
	}
	return nil
}

// recordMigration records a migration in its transaction (SQLite,
// PostgreSQL), so that it commits with the schema it made; bun/migrate
// records it again (an upsert) once the transaction has committed.
func recordMigration(ctx context.Context, db bun.IConn, mig *migrate.Migration) error {
	_, err := db.ExecContext(ctx, "INSERT INTO "+migrationsTable+" (name, group_id, migrated_at) VALUES (?, ?, ?)",
		mig.Name, mig.GroupID, time.Now().UTC())
	return err
}

// schemaVersion returns the name of the last migration of s's engine.
func (s *store) schemaVersion() string {
	entries, _ := fs.ReadDir(migrationFiles, "migrations/"+s.eng.name()) // sorted by name
	if len(entries) == 0 {
		return ""
	}
	name, _, _ := strings.Cut(entries[len(entries)-1].Name(), "_")
	return name
}
