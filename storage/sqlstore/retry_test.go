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
				require.NoError(t, s.PutContact(ctx, messaging.Contact{ID: cids[i], Username: name, CreatedAt: time.Now().UTC()}))
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
