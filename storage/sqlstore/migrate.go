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

	"github.com/parleychat/parley/messaging"
)

// Tables of bun/migrate's bookkeeping.
const (
	migrationsTable      = "parley_migrations"
	migrationsLocksTable = "parley_migration_locks"
)

// migrationFiles holds each engine's migrations, bun/migrate's SQL files
// in migrations/{sqlite,postgres,mysql} (DESIGN.md §4.1).
//
//go:embed migrations
var migrationFiles embed.FS

// Migrate brings the schema up to date (creating Options.Schema if need
// be): it applies the migrations that the database has not recorded in
// parley_migrations. It is idempotent, and safe when several processes
// start at once, also behind PgBouncer (DESIGN.md §4.1).
func (st *Store) Migrate(ctx context.Context) error {
	return wrapErr("sqlstore.Migrate", st.s.migrate(ctx))
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

// claimMigration runs first in a migration's transaction (SQLite,
// PostgreSQL), takes the engine's lock there, and returns errApplied if
// another process applied the migration while this one waited.
func (s *store) claimMigration(ctx context.Context, db bun.IConn, mig *migrate.Migration) error {
	if err := s.eng.claimMigration(ctx, s, db); err != nil {
		return err
	}
	var n int
	err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+migrationsTable+" WHERE name = ?", mig.Name).Scan(&n)
	if err == nil && n > 0 {
		err = errApplied
	}
	return err
}

// recordMigration records a migration in its transaction, to commit with
// its schema; bun/migrate records it again (an upsert) after the commit.
func recordMigration(ctx context.Context, db bun.IConn, mig *migrate.Migration) error {
	_, err := db.ExecContext(ctx, "INSERT INTO "+migrationsTable+" (name, group_id, migrated_at) VALUES (?, ?, ?)",
		mig.Name, mig.GroupID, time.Now().UTC())
	return err
}

// checkVersion checks that the schema is the one this version of the
// store reads and writes: the last migration of its engine.
func (s *store) checkVersion(ctx context.Context) error {
	entries, _ := fs.ReadDir(migrationFiles, "migrations/"+s.eng.name()) // sorted by name
	want, _, _ := strings.Cut(entries[len(entries)-1].Name(), "_")
	var names []string
	if err := s.w.NewRaw("SELECT name FROM "+migrationsTable+" ORDER BY name DESC LIMIT 1").Scan(ctx, &names); err != nil {
		return fmt.Errorf("read the schema version (run Migrate): %w", err)
	}
	switch {
	case len(names) == 0 || names[0] < want:
		return &messaging.Error{Kind: messaging.ErrInvalid, Message: fmt.Sprintf(
			"the database's schema is older than this program's (version %s): run Migrate, or start the server on it once", want)}
	case names[0] > want:
		return &messaging.Error{Kind: messaging.ErrInvalid, Message: fmt.Sprintf(
			"the database's schema (version %s) is newer than this program's (%s): use the program that wrote it", names[0], want)}
	}
	return nil
}
