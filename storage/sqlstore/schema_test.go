package sqlstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/sqlstore"
)

// TestSchemaPostgres: stores with different Options.Schema in one
// database are independent, Migrate creates the schema (once, when several
// start at once), and a host's own "messages" table is left alone.
func TestSchemaPostgres(t *testing.T) {
	base := os.Getenv(backendtest.EnvPostgres)
	if base == "" {
		t.Skipf("%s is not set: not testing PostgreSQL", backendtest.EnvPostgres)
	}
	ctx := t.Context()
	name := func(prefix string) string { return fmt.Sprintf("%s_%x", prefix, rand.Uint32()) }
	host, a, b := name("host"), name("parley_a"), name("parley_b")
	admin := open(t, base)
	t.Cleanup(func() {
		for _, s := range []string{host, a, b} {
			_, err := admin.DB().ExecContext(context.Background(), "DROP SCHEMA IF EXISTS "+s+" CASCADE")
			assert.NoError(t, err)
		}
	})
	// The host's own messages table, in its own schema.
	for _, q := range []string{
		"CREATE SCHEMA " + host,
		"CREATE TABLE " + host + ".messages (n integer PRIMARY KEY, body text NOT NULL)",
		"INSERT INTO " + host + ".messages VALUES (1, 'the host''s row')",
	} {
		_, err := admin.DB().ExecContext(ctx, q)
		require.NoError(t, err)
	}
	u, err := url.Parse(base)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", host) // the DSN's search_path; Schema wins
	u.RawQuery = q.Encode()
	hostDSN := u.String()

	// Several stores migrate schema a at once, as processes starting
	// together would; one migrates schema b.
	var stores []*sqlstore.Store
	for range 3 {
		stores = append(stores, open(t, hostDSN, &sqlstore.Options{Schema: a, Logger: discard}))
	}
	sb := open(t, hostDSN, &sqlstore.Options{Schema: b, Logger: discard})
	stores = append(stores, sb)
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() { errs[i] = s.Migrate(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "Migrate %d", i)
	}
	sa := stores[0]

	c := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
	m := messaging.Message{ID: ids.New(ids.Message), ConversationID: "c", Contact: c, Text: "in a", CreatedAt: c.CreatedAt}
	require.NoError(t, sa.Driver().PutContact(ctx, c))
	require.NoError(t, sa.Driver().CreateMessage(ctx, m, nil, nil))
	got, err := stores[1].Driver().GetMessage(ctx, m.ID)
	require.NoError(t, err, "another store of schema a sees it")
	assert.Equal(t, "in a", got.Text)
	_, err = sb.Driver().GetMessage(ctx, m.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "schema b is another store")
	require.NoError(t, sb.Driver().PutContact(ctx, c), "the same username is free in b")

	for schema, want := range map[string]int{a: 1, b: 0} {
		var n int
		require.NoError(t, admin.DB().NewRaw("SELECT COUNT(*) FROM "+schema+".messages").Scan(ctx, &n))
		assert.Equal(t, want, n, "messages in %s", schema)
		require.NoError(t, admin.DB().NewRaw("SELECT COUNT(*) FROM "+schema+".parley_migrations").Scan(ctx, &n))
		assert.Equal(t, sqlstore.Migrations(sa), n, "migrations recorded once in %s", schema)
	}
	var body string
	require.NoError(t, admin.DB().NewRaw("SELECT body FROM "+host+".messages WHERE n = 1").Scan(ctx, &body))
	assert.Equal(t, "the host's row", body, "the host's table is untouched")
}

func TestSchemaIsInvalid(t *testing.T) {
	for name, dsn := range map[string]string{
		"sqlite": filepath.Join(t.TempDir(), "parley.db"),
		"mysql":  "mysql://root@127.0.0.1:1/test", // rejected before connecting
	} {
		t.Run(name, func(t *testing.T) {
			_, err := sqlstore.Open(t.Context(), dsn, &sqlstore.Options{Schema: "parley", Logger: discard})
			assert.ErrorIs(t, err, messaging.ErrInvalid)
			assert.ErrorContains(t, err, "PostgreSQL")
			assert.NotContains(t, err.Error(), "identifier", "the name is not what is wrong")
		})
	}
	for _, schema := range []string{"Parley", "parley-chat", "1parley", "parley;drop", `"parley"`} {
		_, err := sqlstore.Open(t.Context(), "postgres://u@127.0.0.1:1/db?sslmode=disable", &sqlstore.Options{Schema: schema, Logger: discard})
		assert.ErrorIs(t, err, messaging.ErrInvalid, "%q", schema)
		assert.ErrorContains(t, err, "is not a lower-case SQL identifier", "%q", schema)
	}
	_, err := sqlstore.New(bun.NewDB(nil, pgdialect.New()), &sqlstore.Options{Schema: "parley"})
	assert.ErrorIs(t, err, messaging.ErrInvalid, "New takes the connections as they are")
}
