package sqlstore_test

import (
	"testing"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/storage/sqlstore"
	_ "github.com/parleychat/parley/storage/sqlstore/mysql"
	_ "github.com/parleychat/parley/storage/sqlstore/postgres"
	_ "github.com/parleychat/parley/storage/sqlstore/sqlite"
	"github.com/parleychat/parley/storage/storetest"
)

// TestConformance runs the repository contract on every SQL engine.
func TestConformance(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			storetest.RunConformanceTests(t, func(t *testing.T) storetest.Store { return e.Open(t).Driver() })
		})
	}
}

// TestSearchFallbacks runs the search contract with every member's
// conversations too many to name in the full-text query, so that they are
// probed for row by row, and (SQLite) every prefix of too many words to
// name, so that it is a prefix query; then (PostgreSQL, MySQL) with the
// conversations named, (MySQL) their rows too many to read one by one, so
// that the full-text index answers, and a search of every conversation
// walking windows of 3 rows, then up to 40, so that FULLTEXT answers many
// of its pages (search.go).
func TestSearchFallbacks(t *testing.T) {
	defer sqlstore.SetSearchLimits(0, 0)()
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			storetest.RunSearchTests(t, func(t *testing.T) storetest.Store { return e.Open(t).Driver() })
		})
		if e.Name != "sqlite" {
			t.Run(e.Name+"_named", func(t *testing.T) {
				defer sqlstore.SetSearchLimits(500, 64)()
				defer sqlstore.SetScanLimits(0, 3, 40)()
				storetest.RunSearchTests(t, func(t *testing.T) storetest.Store { return e.Open(t).Driver() })
			})
		}
	}
}

// TestConformancePgBouncer runs the repository contract on PostgreSQL
// through PgBouncer in transaction pooling mode (PARLEY_TEST_PGBOUNCER,
// which .ci/run sets), in the pooler-safe mode the package doc gives.
func TestConformancePgBouncer(t *testing.T) {
	e, ok := backendtest.PgBouncer(t)
	if !ok {
		t.Skipf("%s or %s is not set: PgBouncer not tested (.ci/pgbouncer.sh starts one)", backendtest.EnvPgBouncer, backendtest.EnvPostgres)
	}
	storetest.RunConformanceTests(t, func(t *testing.T) storetest.Store { return e.Open(t).Driver() })
}

func BenchmarkStore(b *testing.B) {
	for _, e := range backendtest.SQL(b) {
		b.Run(e.Name, func(b *testing.B) {
			storetest.RunBenchmarks(b, func(b *testing.B) storetest.Store { return e.Open(b).Driver() })
		})
	}
}
