package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/sqlstore"
)

// sendFixture is a PostgreSQL store whose sends alone wait in the queue
// (sqlstore.HoldSends) until released, and contacts to send from.
type sendFixture struct {
	t        *testing.T
	s        *sqlstore.Store
	contacts []string
	at       time.Time
	queued   func() int
	release  func()
	wg       sync.WaitGroup
}

func newSendFixture(t *testing.T, contacts int) *sendFixture {
	f := &sendFixture{t: t, s: postgresOnly(t).Open(t), at: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	for i := range contacts {
		c := messaging.Contact{ID: ids.New(ids.Contact), Username: fmt.Sprintf("u%d", i), CreatedAt: f.at}
		require.NoError(t, f.s.Driver().PutContact(t.Context(), c))
		f.contacts = append(f.contacts, c.ID)
	}
	f.queued, f.release = sqlstore.HoldSends(f.s)
	return f
}

// message is a message from the contact i to conv.
func (f *sendFixture) message(conv string, i int) messaging.Message {
	f.at = f.at.Add(time.Millisecond + 1234*time.Nanosecond) // below a microsecond too: stored truncated, as alone
	return messaging.Message{ID: ids.NewAt(ids.Message, f.at), ConversationID: conv,
		Contact: messaging.Contact{ID: f.contacts[i]}, Text: fmt.Sprintf(`"%s", \ from %d`, conv, i), CreatedAt: f.at}
}

// send sends m (keyed by done when not nil) in a goroutine once the sends
// queued before it wait, and returns where its error arrives once it
// waits too.
func (f *sendFixture) send(ctx context.Context, m messaging.Message, done *driver.IdempotencyRecord) <-chan error {
	f.t.Helper()
	out := make(chan error, 1)
	before := f.queued()
	f.wg.Go(func() {
		if done != nil {
			out <- f.s.Driver().CreateMessageKeyed(ctx, m, nil, record, *done)
		} else {
			out <- f.s.Driver().CreateMessage(ctx, m, nil, record)
		}
	})
	require.Eventually(f.t, func() bool { return f.queued() == before+1 }, 5*time.Second, time.Millisecond, "the send waits")
	return out
}

// key is the record of the key k of a send.
func (f *sendFixture) key(k string) *driver.IdempotencyRecord {
	return &driver.IdempotencyRecord{Scope: f.contacts[0], Key: k, Fingerprint: "fp-" + k,
		Result: []byte(`{"id":"` + k + `"}`), CreatedAt: f.at, ExpiresAt: f.at.Add(time.Hour)}
}

// transactions returns how many transactions stored the messages ms.
func (f *sendFixture) transactions(ms ...messaging.Message) int {
	f.t.Helper()
	var idList []string
	for _, m := range ms {
		idList = append(idList, m.ID)
	}
	var n int
	require.NoError(f.t, f.s.DB().NewRaw("SELECT count(DISTINCT xmin::text) FROM messages WHERE id = ANY(?)", pgTextArray(idList)).Scan(f.t.Context(), &n))
	return n
}

func pgTextArray(vs []string) string {
	out := "{"
	for i, v := range vs {
		if i > 0 {
			out += ","
		}
		out += `"` + v + `"`
	}
	return out + "}"
}

// TestSendsTogether: sends that wait for a statement are stored by one,
// each as it would be alone: its message, its conversation and membership
// when new, its events in order, its key's record, its count.
func TestSendsTogether(t *testing.T) {
	f := newSendFixture(t, 3)
	ctx := t.Context()
	var ms []messaging.Message
	var outs []<-chan error
	keys := map[int]*driver.IdempotencyRecord{1: f.key("k1"), 4: f.key("k4")}
	for i, conv := range []string{"c1", "c2", "c1", "c1", "c2", "c1"} {
		m := f.message(conv, i%3)
		ms = append(ms, m)
		outs = append(outs, f.send(ctx, m, keys[i]))
	}
	f.release()
	for i, out := range outs {
		require.NoError(t, <-out, "send %d", i)
	}
	assert.Equal(t, 1, f.transactions(ms...), "one statement stored them all")

	for _, m := range ms {
		got, err := f.s.Driver().GetMessage(ctx, m.ID)
		require.NoError(t, err)
		assert.Equal(t, m.Text, got.Text)
		assert.Equal(t, m.Contact.ID, got.Contact.ID)
		assert.Equal(t, m.ConversationID, got.ConversationID)
		assert.True(t, m.CreatedAt.Truncate(time.Microsecond).Equal(got.CreatedAt), "created at %v, stored %v", m.CreatedAt, got.CreatedAt)
		assert.True(t, got.ReadAt.IsZero() && got.UpdatedAt.IsZero())
	}
	c1, err := f.s.Driver().GetConversation(ctx, "c1", f.contacts[0])
	require.NoError(t, err)
	assert.EqualValues(t, 4, c1.MessageCount)
	assert.EqualValues(t, 2, c1.UnreadCount, "c1's messages but u0's own, unread by u0")
	assert.True(t, ms[0].CreatedAt.Truncate(time.Microsecond).Equal(c1.CreatedAt), "created by its first message")
	c2, err := f.s.Driver().GetConversation(ctx, "c2", f.contacts[0])
	require.NoError(t, err)
	assert.EqualValues(t, 2, c2.MessageCount)
	assert.EqualValues(t, 2, c2.UnreadCount)
	var rows []string
	require.NoError(t, f.s.DB().NewRaw("SELECT conversation_id || ' ' || contact_id FROM conversation_members ORDER BY 1").Scan(ctx, &rows))
	assert.ElementsMatch(t, []string{"c1 " + f.contacts[0], "c1 " + f.contacts[2], "c2 " + f.contacts[1]}, rows,
		"a row of each sender in each conversation, for its read state")

	evs, err := f.s.Driver().ReadEvents(ctx, driver.EventQuery{Scope: driver.Scope{All: true}, Limit: 100})
	require.NoError(t, err)
	require.Len(t, evs, len(ms))
	for i, e := range evs {
		assert.Equal(t, ms[i].ID, e.Message.ID, "event %d, in the order of the sends", i)
	}
	for i, k := range keys {
		got, err := f.s.Driver().GetIdempotencyKey(ctx, k.Scope, k.Key)
		require.NoError(t, err, "send %d's key", i)
		assert.Equal(t, k.Fingerprint, got.Fingerprint)
		assert.Equal(t, k.Result, got.Result)
		assert.Empty(t, got.Lock)
	}
}

// TestSendsTogetherFailAlone: when one send of a statement fails, the
// others are made again alone and stored, and the failing one fails as it
// would alone.
func TestSendsTogetherFailAlone(t *testing.T) {
	f := newSendFixture(t, 2)
	ctx := t.Context()
	first := f.message("c", 0)
	f.release() // the first send alone
	require.NoError(t, f.s.Driver().CreateMessageKeyed(ctx, f.message("c", 0), nil, record, *f.key("taken")))
	require.NoError(t, f.s.Driver().CreateMessage(ctx, first, nil, record))
	f.queued, f.release = sqlstore.HoldSends(f.s)

	ok1, ok2 := f.message("c", 1), f.message("d", 0)
	outs := []<-chan error{
		f.send(ctx, ok1, nil),
		f.send(ctx, first, nil), // its id exists
		f.send(ctx, f.message("c", 1), f.key("taken")),
		f.send(ctx, ok2, f.key("free")),
	}
	f.release()
	require.NoError(t, <-outs[0])
	assert.ErrorIs(t, <-outs[1], messaging.ErrConflict)
	assert.ErrorIs(t, <-outs[2], driver.ErrKeyTaken)
	require.NoError(t, <-outs[3])
	assert.Equal(t, 2, f.transactions(ok1, ok2), "made again alone")
	evs, err := f.s.Driver().ReadEvents(ctx, driver.EventQuery{Scope: driver.Scope{All: true}, Limit: 100})
	require.NoError(t, err)
	assert.Len(t, evs, 4, "the events of the four sends made")
	_, err = f.s.Driver().GetIdempotencyKey(ctx, f.contacts[0], "free")
	assert.NoError(t, err)
}

// TestSendsCallerLeaves: a send whose caller's context ends while it
// waits returns at once and is not made; the others are.
func TestSendsCallerLeaves(t *testing.T) {
	f := newSendFixture(t, 1)
	ctx := t.Context()
	leaving, leave := context.WithCancel(ctx)
	stays, left := f.message("c", 0), f.message("c", 0)
	out1 := f.send(ctx, stays, nil)
	out2 := f.send(leaving, left, nil)
	leave()
	select {
	case err := <-out2:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the send whose caller left still waits")
	}
	f.release()
	require.NoError(t, <-out1)
	_, err := f.s.Driver().GetMessage(ctx, left.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	_, err = f.s.Driver().GetMessage(ctx, stays.ID)
	assert.NoError(t, err)
	f.wg.Wait()
}

// TestSendsConcurrent: many callers sending at once, in and out of the
// queue, lose nothing.
func TestSendsConcurrent(t *testing.T) {
	f := newSendFixture(t, 4)
	f.release()
	ctx := t.Context()
	const callers, each = 16, 20
	var wg sync.WaitGroup
	errs := make(chan error, callers*each)
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				m := messaging.Message{ID: ids.New(ids.Message), ConversationID: fmt.Sprintf("c%d", i%3),
					Contact: messaging.Contact{ID: f.contacts[c%4]}, Text: "m", CreatedAt: time.Now().UTC()}
				errs <- f.s.Driver().CreateMessage(ctx, m, nil, record)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	var total int64
	for i := range 3 {
		c, err := f.s.Driver().GetConversation(ctx, fmt.Sprintf("c%d", i), f.contacts[0])
		require.NoError(t, err)
		total += c.MessageCount
	}
	assert.EqualValues(t, callers*each, total)
	evs, err := f.s.Driver().ReadEvents(ctx, driver.EventQuery{Scope: driver.Scope{All: true}, Limit: callers * each * 2})
	require.NoError(t, err)
	assert.Len(t, evs, callers*each)
}

// TestSendsRetriedKey: a statement that fails on a key's record in its
// way (a retried keyed send) stores the sends without a key together
// again, and the keyed one fails alone.
func TestSendsRetriedKey(t *testing.T) {
	f := newSendFixture(t, 2)
	ctx := t.Context()
	f.release()
	require.NoError(t, f.s.Driver().CreateMessageKeyed(ctx, f.message("c", 0), nil, record, *f.key("taken")))
	f.queued, f.release = sqlstore.HoldSends(f.s)

	unkeyed := []messaging.Message{f.message("c", 0), f.message("c", 1), f.message("d", 1)}
	var outs []<-chan error
	for _, m := range unkeyed {
		outs = append(outs, f.send(ctx, m, nil))
	}
	retried := f.send(ctx, f.message("c", 0), f.key("taken"))
	f.release()
	for i, out := range outs {
		require.NoError(t, <-out, "send %d", i)
	}
	assert.ErrorIs(t, <-retried, driver.ErrKeyTaken)
	assert.Equal(t, 1, f.transactions(unkeyed...), "the sends without a key, together again")
}

// TestSendsWaitingBehindStalledStatements: a send that waits while every
// statement under way has run for long (stallAfter) is made alone beside
// them.
func TestSendsWaitingBehindStalledStatements(t *testing.T) {
	f := newSendFixture(t, 1)
	ctx := t.Context()
	m := f.message("c", 0)
	out := f.send(ctx, m, nil)
	select {
	case err := <-out:
		t.Fatalf("the send did not wait: %v", err)
	case <-time.After(300 * time.Millisecond): // beyond stallAfter: the statements are new
	}
	sqlstore.AgeSends(f.s)
	select {
	case err := <-out:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the send still waits behind stalled statements")
	}
	assert.Zero(t, f.queued())
	_, err := f.s.Driver().GetMessage(ctx, m.ID)
	assert.NoError(t, err)
	f.release()
}
