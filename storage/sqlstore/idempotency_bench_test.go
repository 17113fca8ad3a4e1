package sqlstore_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/sqlstore"
)

// BenchmarkKeyRecordBytes measures what an idempotency record costs the
// database: keyed no-op PUTs (read=true) of a large message (a text of
// 4,000 characters, 20 reactions of 100 reactors each), whose JSON is some
// 25 KB, each under a new key. A record keeps the message's id, not its
// body, so the bytes per record do not depend on the message.
// bytes/record is the growth of the database (SQLite: its file, after a
// checkpoint; PostgreSQL: the idempotency_keys relation with its indexes
// and TOAST) over the records written, at least 1,000 of them:
//
//	go test ./storage/sqlstore -run '^$' -bench KeyRecordBytes -benchtime 1000x
func BenchmarkKeyRecordBytes(b *testing.B) {
	for _, e := range backendtest.SQL(b) {
		if e.Name == "mysql" {
			continue // InnoDB's sizes are estimates, refreshed when it likes
		}
		b.Run(e.Name, func(b *testing.B) {
			ctx := b.Context()
			s := e.Open(b)
			msgs := svctest.New(b, s, nil, nil)
			alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
			require.NoError(b, err)
			m, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "big", Text: strings.Repeat("word ", 800)})
			require.NoError(b, err)
			for i := range 100 {
				c, err := msgs.SaveContact(ctx, messaging.Contact{Username: "reactor" + strconv.Itoa(i)})
				require.NoError(b, err)
				names := make([]string, 20)
				for j := range names {
					names[j] = "reaction_" + strconv.Itoa(j)
				}
				_, err = msgs.Update(ctx, c, m.ID, messaging.Update{React: names})
				require.NoError(b, err)
			}
			read := true
			n := max(b.N, 1000)
			events := func() (n int64) {
				require.NoError(b, s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM events").Scan(&n))
				return n
			}
			before, eventsBefore := dbBytes(b, ctx, e.Name, s), events()
			b.ResetTimer()
			for i := range n {
				_, err := msgs.Update(ctx, alice, m.ID, messaging.Update{Read: &read, Idempotency: messaging.Idempotency{Key: "read-" + strconv.Itoa(i)}})
				require.NoError(b, err)
			}
			b.StopTimer()
			grown := dbBytes(b, ctx, e.Name, s) - before
			b.ReportMetric(float64(grown)/float64(n), "bytes/record")
			b.ReportMetric(float64(grown)*1000/float64(n)/(1<<20), "MiB/1000-records")
			b.ReportMetric(float64(events()-eventsBefore)/float64(n), "events/op")
		})
	}
}

// dbBytes returns the size of what idempotency records grow: SQLite's
// database file, PostgreSQL's idempotency_keys with its indexes.
func dbBytes(b *testing.B, ctx context.Context, engine string, s *sqlstore.Store) int64 {
	b.Helper()
	var n int64
	switch engine {
	case "sqlite":
		_, err := s.DB().ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
		require.NoError(b, err)
		require.NoError(b, s.DB().QueryRowContext(ctx, "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()").Scan(&n))
	case "postgres":
		require.NoError(b, s.DB().QueryRowContext(ctx, "SELECT pg_total_relation_size('idempotency_keys')").Scan(&n))
	}
	return n
}
