package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/sqlstore"
)

var quiet = &sqlstore.Options{Logger: discard}

// open opens dsn with quiet or the given options, closed when t ends.
func open(t *testing.T, dsn string, opts ...*sqlstore.Options) *sqlstore.Store {
	t.Helper()
	o := quiet
	if len(opts) > 0 {
		o = opts[0]
	}
	s, err := sqlstore.Open(t.Context(), dsn, o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestMigrateIdempotent(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			s := open(t, e.DSN(t))
			require.NoError(t, s.Migrate(ctx), "on an empty database")

			c := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
			require.NoError(t, s.Driver().PutContact(ctx, c))
			m := messaging.Message{ID: ids.New(ids.Message), ConversationID: "c", Contact: c, Text: "hi", CreatedAt: c.CreatedAt}
			require.NoError(t, s.Driver().CreateMessage(ctx, m, nil, nil))

			require.NoError(t, s.Migrate(ctx), "again on top")
			got, err := s.Driver().GetMessage(ctx, m.ID)
			require.NoError(t, err, "the data survives")
			assert.Equal(t, "hi", got.Text)

			var n int
			require.NoError(t, s.DB().NewRaw("SELECT COUNT(*) FROM parley_migrations").Scan(ctx, &n))
			assert.Equal(t, sqlstore.Migrations(s), n, "each migration is recorded once")
		})
	}
}

func TestMigrateConcurrentStarts(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			dsn := e.DSN(t)
			ctx := t.Context()
			const n = 4
			stores := make([]*sqlstore.Store, n)
			for i := range stores {
				stores[i] = open(t, dsn) // separate pools: as separate processes
			}
			errs := make([]error, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i, s := range stores {
				wg.Go(func() {
					<-start
					errs[i] = s.Migrate(ctx)
				})
			}
			close(start)
			wg.Wait()
			for i, err := range errs {
				assert.NoError(t, err, "Migrate %d", i)
			}
			var count int
			require.NoError(t, stores[0].DB().NewRaw("SELECT COUNT(*) FROM parley_migrations").Scan(ctx, &count))
			assert.Equal(t, sqlstore.Migrations(stores[0]), count, "each migration is recorded once")
			c := messaging.Contact{ID: ids.New(ids.Contact), Username: "bob", CreatedAt: time.Now().UTC()}
			assert.NoError(t, stores[n-1].Driver().PutContact(ctx, c), "the schema works")
		})
	}
}

func TestOpenDoesNotMigrate(t *testing.T) {
	s := open(t, t.TempDir()+"/x.db")
	_, err := s.Driver().GetContact(context.Background(), "ctc_x")
	require.Error(t, err, "no tables before Migrate")
	assert.NotErrorIs(t, err, messaging.ErrNotFound)
}

// TestMigratePgBouncer migrates through PgBouncer in transaction pooling
// mode (PARLEY_TEST_PGBOUNCER, started by .ci/pgbouncer.sh), where a
// session's state stays on a server connection that the next transaction
// may not get: twice in a row, then from two Stores at once, on a fresh
// database each. A session lock (pg_advisory_lock) would be left held on
// a pooled backend, and the next Migrate would wait for it forever.
func TestMigratePgBouncer(t *testing.T) {
	bouncer, base := os.Getenv("PARLEY_TEST_PGBOUNCER"), os.Getenv(backendtest.EnvPostgres)
	if bouncer == "" || base == "" {
		t.Skipf("PARLEY_TEST_PGBOUNCER or %s is not set: not testing PgBouncer", backendtest.EnvPostgres)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a hang fails
	defer cancel()
	admin := openPgx(t, base)
	t.Cleanup(func() { _ = admin.Close() })
	// fresh creates a database and returns its DSN through PgBouncer, in
	// the pooler-safe mode (without it, two pools may prepare statements
	// of one name on one server connection);
	// newStore makes a Store on dsn as a host would, with New over its
	// own pgx pool.
	fresh := func() string {
		name := fmt.Sprintf("parley_bouncer_%x", rand.Uint32())
		_, err := admin.ExecContext(ctx, "CREATE DATABASE "+name)
		require.NoError(t, err)
		t.Cleanup(func() {
			_, err := admin.ExecContext(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)")
			assert.NoError(t, err)
		})
		u, err := url.Parse(bouncer)
		require.NoError(t, err)
		u.Path = "/" + name
		q := u.Query()
		q.Set("default_query_exec_mode", "exec") // the pooler-safe mode (package doc)
		u.RawQuery = q.Encode()
		return u.String()
	}
	newStore := func(dsn string) *sqlstore.Store {
		db := bun.NewDB(openPgx(t, dsn), pgdialect.New())
		t.Cleanup(func() { _ = db.Close() })
		s, err := sqlstore.New(db, quiet)
		require.NoError(t, err)
		return s
	}

	s := newStore(fresh())
	require.NoError(t, s.Migrate(ctx), "on an empty database")
	require.NoError(t, s.Migrate(ctx), "again")
	c := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
	require.NoError(t, s.Driver().PutContact(ctx, c), "the schema works")

	dsn := fresh()
	stores := []*sqlstore.Store{newStore(dsn), newStore(dsn)}
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() { errs[i] = s.Migrate(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "Migrate %d", i)
	}
	for _, s := range stores {
		require.NoError(t, s.Migrate(ctx), "again, from each")
	}
	var n int
	require.NoError(t, stores[0].DB().NewRaw("SELECT COUNT(*) FROM parley_migrations").Scan(ctx, &n))
	assert.Equal(t, sqlstore.Migrations(stores[0]), n, "each migration is recorded once")
}

// TestMigrateMySQLInterrupted: MySQL's DDL commits implicitly, so a run
// cut short leaves some tables made and the migration unrecorded; the
// next run completes it and keeps what was there.
func TestMigrateMySQLInterrupted(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		if e.Name != "mysql" {
			continue
		}
		ctx := t.Context()
		s := open(t, e.DSN(t))
		require.NoError(t, s.Migrate(ctx))
		id, err := s.Driver().(driver.Installation).InstallationID(ctx)
		require.NoError(t, err)
		// As a run cut short after its first statements would leave it.
		for _, q := range []string{"DELETE FROM parley_migrations", "DROP TABLE event_cursors", "DROP TABLE events"} {
			_, err := s.DB().ExecContext(ctx, q)
			require.NoError(t, err)
		}
		require.NoError(t, s.Migrate(ctx), "again after an interrupted run")
		again, err := s.Driver().(driver.Installation).InstallationID(ctx)
		require.NoError(t, err)
		assert.Equal(t, id, again, "the installation keeps its id")
		var n int
		require.NoError(t, s.DB().NewRaw("SELECT COUNT(*) FROM events").Scan(ctx, &n), "the tables are made")
		require.NoError(t, s.DB().NewRaw("SELECT COUNT(*) FROM parley_migrations").Scan(ctx, &n))
		assert.Equal(t, sqlstore.Migrations(s), n, "each migration is recorded once")
		return
	}
	t.Skipf("%s is not set: not testing MySQL", backendtest.EnvMySQL)
}

// openPgx opens a pool on the PostgreSQL DSN, through pgx.
func openPgx(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	return db
}
