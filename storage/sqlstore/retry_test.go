package sqlstore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/sqlstore"
)

// TestDeadlockIsRetried makes two transactions lock two rows in opposite
// orders: the server aborts one, and the store runs it again.
func TestDeadlockIsRetried(t *testing.T) {
	ran := false
	for _, e := range backendtest.SQL(t) {
		if e.Name == "sqlite" {
			continue // one writer: transactions cannot interleave
		}
		ran = true
		t.Run(e.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			s := e.Open(t)
			var cids [2]string
			for i, name := range []string{"a", "b"} {
				cids[i] = ids.New(ids.Contact)
				require.NoError(t, s.Driver().PutContact(ctx, messaging.Contact{ID: cids[i], Username: name, CreatedAt: time.Now().UTC()}))
			}
			var attempts [2]atomic.Int32
			var holding sync.WaitGroup
			holding.Add(2)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i := range 2 {
				wg.Go(func() {
					errs[i] = sqlstore.Write(s, ctx, func(ctx context.Context, tx bun.Tx) error {
						n := attempts[i].Add(1)
						if _, err := tx.ExecContext(ctx, "UPDATE contacts SET phone_number = ? WHERE id = ?", "first", cids[i]); err != nil {
							return err
						}
						if n == 1 {
							holding.Done()
							holding.Wait() // both hold their first row
						}
						_, err := tx.ExecContext(ctx, "UPDATE contacts SET phone_number = ? WHERE id = ?", "second", cids[1-i])
						return err
					})
				})
			}
			wg.Wait()
			assert.NoError(t, errs[0])
			assert.NoError(t, errs[1])
			// The deadlock's victim ran again (a loaded server may make a
			// retry meet the other transaction once more: more is allowed).
			assert.GreaterOrEqual(t, attempts[0].Load()+attempts[1].Load(), int32(3), "a transaction ran again")
		})
	}
	if !ran {
		t.Skipf("%s and %s are not set: no server to deadlock", backendtest.EnvPostgres, backendtest.EnvMySQL)
	}
}

// TestPruneKeepsARenewedKey: a keyed write renews an expired record while
// a prune runs; once the write commits, the prune leaves the renewed
// record. On PostgreSQL the prune found it expired and waits for its row:
// its DELETE checks the expiry again on the row as renewed, not only in
// the subquery that found it.
func TestPruneKeepsARenewedKey(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		if e.Name == "sqlite" {
			continue // one writer: the prune cannot wait inside a write
		}
		t.Run(e.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			s := e.Open(t)
			now := time.Now().UTC().Truncate(time.Second)
			_, err := s.DB().NewRaw(`INSERT INTO idempotency_keys (scope, client_key, fingerprint, lock_token, created_at, expires_at)
				VALUES ('ctc_a', 'k', 'f', '', ?, ?)`, now.Add(-48*time.Hour), now.Add(-24*time.Hour)).Exec(ctx)
			require.NoError(t, err)

			tx, err := s.DB().BeginTx(ctx, nil)
			require.NoError(t, err)
			defer tx.Rollback()
			_, err = tx.NewRaw("UPDATE idempotency_keys SET created_at = ?, expires_at = ? WHERE scope = 'ctc_a' AND client_key = 'k'",
				now, now.Add(24*time.Hour)).Exec(ctx)
			require.NoError(t, err)
			type result struct {
				n   int
				err error
			}
			pruned := make(chan result, 1)
			go func() {
				n, err := s.Driver().PruneIdempotencyKeys(ctx, now, 10)
				pruned <- result{n, err}
			}()
			if e.Name == "postgres" {
				require.Eventually(t, func() bool {
					var n int
					err := s.DB().NewRaw("SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'DELETE FROM idempotency_keys%'").Scan(ctx, &n)
					return err == nil && n > 0
				}, 10*time.Second, 10*time.Millisecond, "the prune waits for the renewed row")
			} else {
				// MariaDB's DELETE may wait for the row, or read it as
				// renewed without waiting: either way it must keep it.
				time.Sleep(200 * time.Millisecond)
			}
			require.NoError(t, tx.Commit())
			got := <-pruned
			require.NoError(t, got.err)
			assert.Zero(t, got.n, "the renewed record is not pruned")
			rec, err := s.Driver().GetIdempotencyKey(ctx, "ctc_a", "k")
			require.NoError(t, err)
			assert.Equal(t, now.Add(24*time.Hour), rec.ExpiresAt)
		})
	}
}
