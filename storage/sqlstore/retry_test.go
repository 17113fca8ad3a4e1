package sqlstore_test

import (
	"context"
	"slices"
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
	"github.com/parleychat/parley/messaging/driver"
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
					err := s.DB().NewRaw("SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'DELETE FROM idempotency_keys%'").Scan(ctx, &n)
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

// TestRetriedSendRecordsItsAttachmentsOnce: a send with an attachment
// whose transaction deadlocks runs again, and its event then holds the
// attachment once, not once per run. The send links the attachment (its
// row locked), then waits for the conversation's row, which a
// transaction of the test holds and which then waits for the attachment's
// row; the send's backend, waiting first, finds the deadlock and fails,
// and the store makes the send again after the test's transaction ends.
func TestRetriedSendRecordsItsAttachmentsOnce(t *testing.T) {
	engines := backendtest.SQL(t)
	i := slices.IndexFunc(engines, func(e backendtest.SQLEngine) bool { return e.Name == "postgres" })
	if i < 0 {
		t.Skipf("%s is not set: the deadlock needs PostgreSQL's detector", backendtest.EnvPostgres)
	}
	e := engines[i]
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s := e.Open(t)
	d := s.Driver()
	now := time.Now().UTC()
	c := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: now}
	require.NoError(t, d.PutContact(ctx, c))
	first := messaging.Message{ID: ids.New(ids.Message), ConversationID: "general", Contact: c, Text: "first", CreatedAt: now}
	require.NoError(t, d.CreateMessage(ctx, first, nil, nil))
	a := messaging.Attachment{ID: ids.New(ids.Attachment), UploaderID: c.ID, Filename: "f.txt", FileType: "text/plain", Key: "k/1", CreatedAt: now}
	require.NoError(t, d.CreateAttachment(ctx, a, nil))

	tx, err := s.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	_, err = tx.ExecContext(ctx, "SET LOCAL deadlock_timeout = '20s'") // the send's backend finds it
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "UPDATE conversations SET message_count = message_count WHERE id = 'general'")
	require.NoError(t, err)

	var mu sync.Mutex
	var runs []int // the attachments of the message each run records
	rec := func(ch driver.Change) []messaging.Event {
		mu.Lock()
		defer mu.Unlock()
		runs = append(runs, len(ch.Message.Attachments))
		return nil
	}
	m := messaging.Message{ID: ids.New(ids.Message), ConversationID: "general", Contact: c, Text: "with a file", CreatedAt: now.Add(time.Second)}
	sent := make(chan error, 1)
	go func() { sent <- d.CreateMessage(ctx, m, []string{a.ID}, rec) }()
	require.Eventually(t, func() bool {
		var waiting int
		err := s.DB().QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").Scan(&waiting)
		return err == nil && waiting > 0
	}, 10*time.Second, 10*time.Millisecond, "the send waits for the conversation's row")
	_, err = tx.ExecContext(ctx, "UPDATE attachments SET filename = filename WHERE id = ?", a.ID)
	require.NoError(t, err, "the send, not the test, is the deadlock's victim")
	require.NoError(t, tx.Commit())
	require.NoError(t, <-sent)

	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, len(runs), 2, "the send ran again")
	for i, n := range runs {
		assert.Equal(t, 1, n, "run %d records the attachment once", i+1)
	}
}
