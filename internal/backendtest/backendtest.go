package backendtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // "pgx", for the admin pool
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/sqlstore"
	_ "github.com/parleychat/parley/storage/sqlstore/mysql"    // mysql:// DSNs
	_ "github.com/parleychat/parley/storage/sqlstore/postgres" // postgres:// DSNs
	_ "github.com/parleychat/parley/storage/sqlstore/sqlite"   // SQLite files
	"github.com/parleychat/parley/storage/storetest"
)

// Environment variables naming the database servers to test against.
const (
	EnvPostgres = "PARLEY_TEST_POSTGRES"
	EnvMySQL    = "PARLEY_TEST_MYSQL"
	// EnvPgBouncer names PgBouncer in transaction pooling mode in front of
	// the server of EnvPostgres (.ci/pgbouncer.sh starts one).
	EnvPgBouncer = "PARLEY_TEST_PGBOUNCER"
)

// Backend is a storage backend under test.
type Backend struct {
	// Name is "memstore", "sqlite", "postgres" or "mysql".
	Name string
	// New returns a fresh, empty store, removed when tb ends.
	New func(tb testing.TB) storetest.Store
}

// All returns memstore, sqlite, and postgres and mysql when their
// environment variables are set.
func All(tb testing.TB) []Backend {
	tb.Helper()
	out := []Backend{{Name: "memstore", New: func(testing.TB) storetest.Store { return memstore.New().Driver() }}}
	for _, e := range SQL(tb) {
		out = append(out, Backend{Name: e.Name, New: func(tb testing.TB) storetest.Store { return e.Open(tb).Driver() }})
	}
	return out
}

// SQLEngine is a SQL engine under test.
type SQLEngine struct {
	// Name is "sqlite", "postgres" or "mysql".
	Name string
	// DSN returns the DSN of a fresh, empty database (no schema), dropped
	// when tb ends.
	DSN func(tb testing.TB) string
}

// Open returns a sqlstore.Store over a fresh database, migrated, closed and
// dropped when tb ends.
func (e SQLEngine) Open(tb testing.TB) *sqlstore.Store {
	tb.Helper()
	dsn := e.DSN(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := sqlstore.Open(ctx, dsn, &sqlstore.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(tb, err, "open %s", e.Name)
	tb.Cleanup(func() { _ = s.Close() }) // runs before the drop
	require.NoError(tb, s.Migrate(ctx), "migrate %s", e.Name)
	return s
}

// SQL returns the SQL engines to test: sqlite always, postgres and mysql
// when their environment variables are set. It logs the ones skipped.
func SQL(tb testing.TB) []SQLEngine {
	tb.Helper()
	out := []SQLEngine{{Name: "sqlite", DSN: sqliteDSN}}
	if dsn := os.Getenv(EnvPostgres); dsn != "" {
		out = append(out, SQLEngine{Name: "postgres", DSN: func(tb testing.TB) string { return postgresDSN(tb, dsn) }})
	} else {
		tb.Logf("backendtest: %s is not set: not testing PostgreSQL", EnvPostgres)
	}
	if dsn := os.Getenv(EnvMySQL); dsn != "" {
		out = append(out, SQLEngine{Name: "mysql", DSN: func(tb testing.TB) string { return mysqlDSN(tb, dsn) }})
	} else {
		tb.Logf("backendtest: %s is not set: not testing MySQL/MariaDB", EnvMySQL)
	}
	return out
}

// randomName returns "parley_test_" and random hex digits.
func randomName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "parley_test_" + hex.EncodeToString(b[:])
}

// PgBouncer returns PostgreSQL reached through PgBouncer in transaction
// pooling mode, in the pooler-safe mode (default_query_exec_mode=exec),
// each DSN a fresh database, created and dropped on the server directly;
// ok is false, logged, when EnvPgBouncer or EnvPostgres is not set.
func PgBouncer(tb testing.TB) (e SQLEngine, ok bool) {
	tb.Helper()
	bouncer, base := os.Getenv(EnvPgBouncer), os.Getenv(EnvPostgres)
	if bouncer == "" || base == "" {
		tb.Logf("backendtest: %s or %s is not set: not testing PostgreSQL through PgBouncer", EnvPgBouncer, EnvPostgres)
		return SQLEngine{}, false
	}
	return SQLEngine{Name: "pgbouncer", DSN: func(tb testing.TB) string { return pgBouncerDSN(tb, bouncer, base) }}, true
}

// pgBouncerDSN creates a database on base's server and returns bouncer
// naming it, in the pooler-safe mode. (A schema would need search_path,
// a startup parameter PgBouncer refuses.)
func pgBouncerDSN(tb testing.TB, bouncer, base string) string {
	tb.Helper()
	admin := openPgx(tb, base)
	name := randomName()
	_, err := admin.Exec("CREATE DATABASE " + name)
	if err != nil {
		_ = admin.Close()
		require.NoError(tb, err, "create a PostgreSQL database (%s=%s)", EnvPostgres, base)
	}
	tb.Cleanup(func() {
		_, err := admin.Exec("DROP DATABASE " + name + " WITH (FORCE)")
		_ = admin.Close()
		if err != nil {
			tb.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(bouncer)
	require.NoError(tb, err)
	u.Path = "/" + name
	q := u.Query()
	q.Set("default_query_exec_mode", "exec")
	u.RawQuery = q.Encode()
	return u.String()
}

func sqliteDSN(tb testing.TB) string {
	return filepath.Join(tb.TempDir(), "parley.db")
}

// postgresDSN creates a schema and returns base with search_path set to it.
func postgresDSN(tb testing.TB, base string) string {
	tb.Helper()
	admin := openPgx(tb, base)
	name := randomName()
	_, err := admin.Exec("CREATE SCHEMA " + name)
	if err != nil {
		_ = admin.Close()
		require.NoError(tb, err, "create a PostgreSQL schema (%s=%s)", EnvPostgres, base)
	}
	tb.Cleanup(func() {
		// A store's last work may still hold locks the drop waits for;
		// PostgreSQL may end the drop as a deadlock's victim then
		// (SQLSTATE 40P01), and the drop is tried again.
		_, err := admin.Exec("DROP SCHEMA " + name + " CASCADE")
		for i := 0; i < 5 && err != nil && strings.Contains(err.Error(), "40P01"); i++ {
			time.Sleep(100 * time.Millisecond)
			_, err = admin.Exec("DROP SCHEMA " + name + " CASCADE")
		}
		_ = admin.Close()
		if err != nil {
			tb.Errorf("drop schema %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	require.NoError(tb, err)
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// mysqlDSN creates a database and returns base naming it.
func mysqlDSN(tb testing.TB, base string) string {
	tb.Helper()
	var cfg *mysql.Config
	var err error
	if strings.HasPrefix(base, "mysql://") {
		u, perr := url.Parse(base)
		require.NoError(tb, perr)
		cfg, err = mysql.ParseDSN("/?" + u.RawQuery)
		require.NoError(tb, err)
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
		cfg.Net, cfg.Addr, cfg.DBName = "tcp", u.Host, strings.TrimPrefix(u.Path, "/")
		if u.Port() == "" {
			cfg.Addr = u.Hostname() + ":3306"
		}
	} else {
		cfg, err = mysql.ParseDSN(base)
		require.NoError(tb, err, "%s=%s", EnvMySQL, base)
	}
	connector, err := mysql.NewConnector(cfg)
	require.NoError(tb, err)
	admin := sql.OpenDB(connector)
	name := randomName()
	if _, err := admin.Exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		_ = admin.Close()
		require.NoError(tb, err, "create a MySQL database (%s=%s)", EnvMySQL, base)
	}
	tb.Cleanup(func() {
		_, err := admin.Exec("DROP DATABASE " + name)
		_ = admin.Close()
		if err != nil {
			tb.Errorf("drop database %s: %v", name, err)
		}
	})
	if strings.HasPrefix(base, "mysql://") {
		u, _ := url.Parse(base)
		u.Path = "/" + name
		return u.String()
	}
	cfg.DBName = name
	return cfg.FormatDSN()
}

// openPgx opens a pool on the PostgreSQL DSN, through pgx.
func openPgx(tb testing.TB, dsn string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("pgx", dsn)
	require.NoError(tb, err)
	return db
}
