package sqlstore

import (
	"context"
	sqldriver "database/sql/driver"
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
// idempotency_keys, events, event_cursors and (PostgreSQL, MySQL)
// event_sequence, parley_installation, and bun/migrate's parley_migrations
// and parley_migration_locks.
func (st *Store) Migrate(ctx context.Context) error { return st.s.Migrate(ctx) }

func (s *store) Migrate(ctx context.Context) error {
	err := s.migrate(ctx)
	if err == nil {
		s.prepareWrites(ctx)
		s.startSearchIndexer()
	}
	return wrapErr("sqlstore.Migrate", err)
}

// errApplied stops a migration that another process applied while this
// one waited for the lock.
var errApplied = errors.New("applied by another process")

func (s *store) migrate(ctx context.Context) error {
	files, err := fs.Sub(migrationFiles, "migrations/"+s.flavor.String())
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

	if s.flavor == flavorMySQL {
		unlock, err := s.lockMySQL(ctx)
		if err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		defer unlock()
	}
	if err := s.initMigrations(ctx, m); err != nil {
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
			s.opts.Logger.InfoContext(ctx, "sqlstore: schema migrated", "engine", s.flavor.String(), "applied", group.Migrations.String())
		}
		return nil
	}
}

// initMigrations creates the schema (Options.Schema) and bun/migrate's
// tables if they do not exist. On PostgreSQL, where two processes
// creating one table at once can fail, it does so in a transaction that
// holds the migration lock (and so does not call m.Init, which runs on
// the pool), as Migrator.Init would.
func (s *store) initMigrations(ctx context.Context, m *migrate.Migrator) error {
	if s.flavor != flavorPostgres {
		return m.Init(ctx)
	}
	return s.w.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := s.lockPostgres(ctx, tx); err != nil {
			return err
		}
		if s.opts.Schema != "" { // a valid identifier (Options.checkSchema)
			if _, err := tx.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+s.opts.Schema); err != nil {
				return err
			}
		}
		_, err := tx.NewCreateTable().Model((*migrate.Migration)(nil)).ModelTableExpr(migrationsTable).IfNotExists().Exec(ctx)
		if err == nil {
			_, err = tx.NewCreateIndex().Unique().TableExpr(migrationsTable).Index(migrationsTable + "_name_unique").Column("name").IfNotExists().Exec(ctx)
		}
		if err == nil {
			_, err = tx.NewCreateTable().Model((*migrationLock)(nil)).ModelTableExpr(migrationsLocksTable).IfNotExists().Exec(ctx)
		}
		return err
	})
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
	if s.flavor == flavorPostgres {
		if err := s.lockPostgres(ctx, db); err != nil {
			return err
		}
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

// lockPostgres takes the migration lock of the schema (Options.Schema or
// the current one, which need not exist yet) in db's transaction, until
// it ends.
func (s *store) lockPostgres(ctx context.Context, db bun.IConn) error {
	_, err := db.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext('parley.migrate:' || current_database() || '.' || COALESCE(?, current_schema(), '')))",
		nullable(s.opts.Schema))
	return err
}

// lockMySQL takes the migration lock of the database on a connection of
// its own (GET_LOCK is held by the session; MySQL does not sit behind a
// transaction pooler); unlock releases it, or closes the connection if
// that fails.
func (s *store) lockMySQL(ctx context.Context) (unlock func(), err error) {
	const key = "CONCAT('parley.migrate:', SHA1(DATABASE()))"
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return nil, err
	}
	var got *int64
	if err = conn.NewRaw("SELECT GET_LOCK("+key+", 600)").Scan(ctx, &got); err == nil && (got == nil || *got != 1) {
		err = errors.New("timed out waiting for the migration lock")
	}
	// drop closes the connection rather than return it to the pool with
	// the lock perhaps held: closing the session releases the lock.
	drop := func() {
		_ = conn.Raw(func(any) error { return sqldriver.ErrBadConn })
		_ = conn.Close()
	}
	if err != nil {
		drop()
		return nil, err
	}
	return func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK("+key+")"); err != nil {
			drop()
			return
		}
		_ = conn.Close()
	}, nil
}

// schemaVersion returns the name of the last migration of s's engine.
func (s *store) schemaVersion() string {
	entries, _ := fs.ReadDir(migrationFiles, "migrations/"+s.flavor.String()) // sorted by name
	if len(entries) == 0 {
		return ""
	}
	name, _, _ := strings.Cut(entries[len(entries)-1].Name(), "_")
	return name
}
