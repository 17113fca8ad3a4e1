package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/sqlstore"
)

// commits counts the COMMITs of a store's writer (sqlstore.HookWrites).
type commits struct{ n atomic.Int32 }

func (c *commits) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

func (c *commits) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if e.Query == "COMMIT" && e.Err == nil {
		c.n.Add(1)
	}
}

// sqliteSends is a migrated SQLite store whose writer's commits are
// counted, and a send fixture on it.
func sqliteSends(t *testing.T, contacts int) (*sendFixture, *commits) {
	s := open(t, engine(t, "sqlite").DSN(t))
	require.NoError(t, s.Migrate(t.Context()))
	c := &commits{}
	sqlstore.HookWrites(s, c)
	return newSendFixtureOn(t, s, contacts), c
}

// TestSendsInOneTransaction (SQLite): the sends that wait for the writer
// are made by one transaction, each as alone, in a savepoint of its own:
// one whose id or key is taken, or a reply to no message, fails alone,
// the others (a reply too) commit together, with their events in the
// order of the sends, counted as alone; one whose caller left while it
// waited is not made.
func TestSendsInOneTransaction(t *testing.T) {
	f, commits := sqliteSends(t, 2)
	ctx := t.Context()
	f.release()
	first := f.message("c", 0)
	require.NoError(t, f.s.Driver().CreateMessageKeyed(ctx, f.message("c", 0), nil, record, *f.key("taken")))
	require.NoError(t, f.s.Driver().CreateMessage(ctx, first, nil, record))
	f.queued, f.release = sqlstore.HoldSends(f.s)
	commits.n.Store(0)

	leaving, leave := context.WithCancel(ctx)
	ok1, ok2, ok3, left := f.message("c", 1), f.message("d", 0), f.message("c", 0), f.message("c", 1)
	orphan := f.message("c", 1)
	orphan.ParentID = ids.New(ids.Message)
	ok3.ParentID = first.ID
	outs := []<-chan error{
		f.send(ctx, ok1, nil),
		f.send(ctx, first, nil), // its id exists
		f.send(leaving, left, nil),
		f.send(ctx, f.message("c", 1), f.key("taken")),
		f.send(ctx, orphan, nil),
		f.send(ctx, ok2, f.key("free")),
		f.send(ctx, ok3, nil),
	}
	leave()
	assert.ErrorIs(t, <-outs[2], context.Canceled)
	f.release()
	require.NoError(t, <-outs[0])
	assert.ErrorIs(t, <-outs[1], messaging.ErrConflict)
	assert.ErrorIs(t, <-outs[3], driver.ErrKeyTaken)
	assert.ErrorIs(t, <-outs[4], driver.ErrNoParent)
	require.NoError(t, <-outs[5])
	require.NoError(t, <-outs[6])
	f.wg.Wait()
	assert.EqualValues(t, 1, commits.n.Load(), "one transaction made them")

	_, err := f.s.Driver().GetMessage(ctx, left.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "the send whose caller left")
	evs, err := f.s.Driver().ReadEvents(ctx, driver.EventQuery{Scope: driver.Scope{All: true}, Limit: 100})
	require.NoError(t, err)
	var got []string
	for _, e := range evs[len(evs)-3:] {
		got = append(got, e.Message.ID)
	}
	assert.Equal(t, []string{ok1.ID, ok2.ID, ok3.ID}, got, "the events of the sends made, in their order")
	assert.Len(t, evs, 6, "and none of those that failed")
	k, err := f.s.Driver().GetIdempotencyKey(ctx, f.contacts[0], "free")
	require.NoError(t, err)
	assert.Equal(t, "fp-free", k.Fingerprint)
	for _, conv := range []string{"c", "d", "c/" + first.ID} {
		assertCounted(t, f.s, conv, conv)
	}
}

// TestSendsInOneTransactionConcurrent (SQLite): many callers sending at
// once, to conversations of their own and shared ones, lose nothing and
// count everything; events are numbered in commit order.
func TestSendsInOneTransactionConcurrent(t *testing.T) {
	f, commits := sqliteSends(t, 4)
	f.release()
	ctx := t.Context()
	const callers, each = 16, 25
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				m := messaging.Message{ID: ids.New(ids.Message), ConversationID: fmt.Sprintf("c%d", i%3),
					Contact: messaging.Contact{ID: f.contacts[c%4]}, Text: "m", CreatedAt: time.Now().UTC()}
				assert.NoError(t, f.s.Driver().CreateMessage(ctx, m, nil, record))
			}
		})
	}
	wg.Wait()
	t.Logf("%d sends, %d commits", callers*each, commits.n.Load())
	var total int64
	for i := range 3 {
		conv := fmt.Sprintf("c%d", i)
		c, err := f.s.Driver().GetConversation(ctx, conv, f.contacts[0])
		require.NoError(t, err)
		total += c.MessageCount
		assertCounted(t, f.s, conv, conv)
	}
	assert.EqualValues(t, callers*each, total)
	evs, err := f.s.Driver().ReadEvents(ctx, driver.EventQuery{Scope: driver.Scope{All: true}, Limit: callers * each * 2})
	require.NoError(t, err)
	assert.Len(t, evs, callers*each+1, "and the fixture's first")
}
