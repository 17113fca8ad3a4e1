package sqlstore

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// unpreparedHook records the statements that ran through bun, that is
// unprepared (prepared statements run through database/sql), but BEGIN,
// COMMIT and ROLLBACK.
type unpreparedHook struct {
	mu sync.Mutex
	qs []string
}

func (h *unpreparedHook) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (h *unpreparedHook) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	switch e.Query {
	case "BEGIN", "COMMIT", "ROLLBACK":
		return
	}
	h.mu.Lock()
	h.qs = append(h.qs, e.Query)
	h.mu.Unlock()
}

// take returns the statements recorded since the last call.
func (h *unpreparedHook) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	qs := h.qs
	h.qs = nil
	return qs
}

// sqliteStore is a migrated SQLite store in a temporary file, with alice.
func sqliteStore(t *testing.T) (*Store, messaging.Contact) {
	t.Helper()
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "parley.db"), &Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Migrate(ctx))
	alice := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	require.NoError(t, s.Driver().PutContact(ctx, alice))
	return s, alice
}

// TestSQLiteWriteTransactionsPrepared: the statements that a SQLite write
// transaction runs (a reaction added and taken back, a message deleted)
// run through bun the first time, are prepared on the writer after it,
// and the second time run prepared, every one; the answers are what a
// read gives.
func TestSQLiteWriteTransactionsPrepared(t *testing.T) {
	ctx := t.Context()
	s, alice := sqliteStore(t)
	hook := &unpreparedHook{}
	s.s.w = s.s.w.WithQueryHook(hook) // the writer, whose transactions run every write
	at := alice.CreatedAt
	round := func() []string {
		m := messaging.Message{ID: ids.New(ids.Message), ConversationID: "c", Contact: alice, Text: "hi", CreatedAt: at}
		require.NoError(t, s.Driver().CreateMessage(ctx, m, nil, nil))
		hook.take()
		got, err := s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{UpdatedAt: at.Add(time.Minute), Reactions: &driver.ReactionChange{ContactID: alice.ID, Add: []string{"x"}}})
		require.NoError(t, err)
		read, err := s.Driver().GetMessage(ctx, m.ID)
		require.NoError(t, err)
		assert.Equal(t, read, got, "the answer, read on the writer, is what a read gives")
		_, err = s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: alice.ID, Remove: []string{"x"}}})
		require.NoError(t, err)
		_, err = s.Driver().DeleteMessage(ctx, m.ID, nil)
		require.NoError(t, err)
		return hook.take()
	}
	assert.NotEmpty(t, round(), "the first time, through bun")
	assert.Empty(t, round(), "the second time, every statement prepared")
}

// TestSQLiteConcurrentWritesPrepare: writers sharing SQLite's one writer
// connection, each preparing after its commit what the transactions
// noted, never wait for each other for good.
func TestSQLiteConcurrentWritesPrepare(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	s, alice := sqliteStore(t)
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := range 40 {
				m := messaging.Message{ID: ids.New(ids.Message), ConversationID: "c", Contact: alice, Text: "hi", CreatedAt: alice.CreatedAt}
				if !assert.NoError(t, s.Driver().CreateMessage(ctx, m, nil, nil)) {
					return
				}
				names := []string{"x"}
				if i%3 == g%3 {
					names = append(names, "y")
				}
				_, err := s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: alice.ID, Add: names}})
				if !assert.NoError(t, err) {
					return
				}
				_, err = s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: alice.ID, Remove: []string{"x"}}})
				if !assert.NoError(t, err) {
					return
				}
				if i%2 == 0 {
					if _, err := s.Driver().DeleteMessage(ctx, m.ID, nil); !assert.NoError(t, err) {
						return
					}
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, ctx.Err(), "the writes did not finish: a deadlock")
}

// TestLongListsNotPrepared: a read or a transaction's statement with a
// list of more than maxPreparedIDs ids is not prepared (each length would
// be a statement of its own in the cache for good); a shorter one is, a
// list of more than 16 padded to a power of two and reading the same rows.
func TestLongListsNotPrepared(t *testing.T) {
	ctx := t.Context()
	s, c := sqliteStore(t)
	var stored idList
	for range 20 {
		m := messaging.Message{ID: ids.New(ids.Message), ConversationID: "c", Contact: c, Text: "m", CreatedAt: time.Now()}
		require.NoError(t, s.Driver().CreateMessage(ctx, m, nil, nil))
		stored = append(stored, m.ID)
	}
	ids := func(n int) idList {
		l := slices.Clone(stored)
		for i := len(l); i < n; i++ {
			l = append(l, fmt.Sprint("msg_", i))
		}
		return l[:n]
	}
	for _, n := range []int{maxPreparedIDs + 1, maxPreparedIDs, 17} {
		want := min(n, len(stored))
		err := s.s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
			var got []string
			err := s.s.txRead(ctx, tx, &got, "SELECT id FROM messages WHERE id IN (?)", ids(n))
			assert.Len(t, got, want, "a transaction's read of %d ids", n)
			return err
		})
		require.NoError(t, err)
		var got []string
		require.NoError(t, s.s.read(ctx, &got, "SELECT id FROM messages WHERE id IN (?)", ids(n)))
		assert.Len(t, got, want, "a read of %d ids", n)
		got = nil
		require.NoError(t, s.s.readByIDs(ctx, &got, "SELECT id FROM messages WHERE id IN (?) AND id <> ''", ids(n)))
		assert.Len(t, got, want, "a read by %d ids", n)
	}
	lists := func(c *stmtCache) []int {
		c.mu.RLock()
		defer c.mu.RUnlock()
		var lists []int
		for q := range c.m {
			if strings.HasPrefix(q, "SELECT id FROM messages WHERE id IN (") {
				lists = append(lists, strings.Count(q, "?"))
			}
		}
		slices.Sort(lists)
		return lists
	}
	assert.Equal(t, []int{32, maxPreparedIDs}, lists(s.s.wstmts), "the writer's")
	assert.Equal(t, []int{32, 32, maxPreparedIDs, maxPreparedIDs}, lists(s.s.stmts), "the readers'")
}
