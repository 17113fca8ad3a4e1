package sqlstore_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
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

// eachEngineBefore runs fn, in a subtest of each SQL engine of the tests,
// on a new store migrated up to the schema version before version (named
// "engine" as backendtest names it): the tests of an upgrade fill it as
// that version found it, then migrate it.
func eachEngineBefore(t *testing.T, version string, fn func(t *testing.T, engine string, s *sqlstore.Store)) {
	t.Helper()
	versions := sqlstore.Versions()
	i := slices.Index(versions, version)
	require.Positive(t, i, "the version %s is listed, after the first", version)
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			s := open(t, e.DSN(t))
			require.NoError(t, sqlstore.MigrateTo(s, t.Context(), versions[i-1]))
			fn(t, e.Name, s)
		})
	}
}

func TestMigrateIdempotent(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			s := open(t, e.DSN(t))
			require.NoError(t, s.Migrate(ctx), "on an empty database")

			c := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
			require.NoError(t, s.PutContact(ctx, c))
			m := messaging.Message{ID: ids.New(ids.Message), ConversationID: "c", Contact: c, Text: "hi", CreatedAt: c.CreatedAt}
			require.NoError(t, s.CreateMessage(ctx, m, nil, nil))

			require.NoError(t, s.Migrate(ctx), "again on top")
			got, err := s.GetMessage(ctx, m.ID)
			require.NoError(t, err, "the data survives")
			assert.Equal(t, "hi", got.Text)

			var n int
			require.NoError(t, s.DB().NewRaw("SELECT COUNT(*) FROM parley_migrations").Scan(ctx, &n))
			assert.Equal(t, len(sqlstore.Versions()), n, "each version is recorded once")
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
			assert.Equal(t, len(sqlstore.Versions()), count, "each version is recorded once")
			c := messaging.Contact{ID: ids.New(ids.Contact), Username: "bob", CreatedAt: time.Now().UTC()}
			assert.NoError(t, stores[n-1].PutContact(ctx, c), "the schema works")
		})
	}
}

func TestOpenDoesNotMigrate(t *testing.T) {
	s := open(t, t.TempDir()+"/x.db")
	_, err := s.GetContact(context.Background(), "ctc_x")
	require.Error(t, err, "no tables before Migrate")
	assert.NotErrorIs(t, err, messaging.ErrNotFound)
}
