package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/sqlstore"
)

// combineFixture is a message with reactors, and the changes to it that
// tests start one by one, each in its own goroutine.
type combineFixture struct {
	t        *testing.T
	s        *sqlstore.Store
	msg      messaging.Message
	reactors []string // contact ids
}

func newCombineFixture(t *testing.T, s *sqlstore.Store, reactors int) *combineFixture {
	ctx := t.Context()
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	f := &combineFixture{t: t, s: s}
	for i := range reactors {
		c := messaging.Contact{ID: ids.New(ids.Contact), Username: fmt.Sprintf("r%d", i), CreatedAt: at}
		require.NoError(t, s.PutContact(ctx, c))
		f.reactors = append(f.reactors, c.ID)
	}
	f.msg = messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: "c",
		Contact: messaging.Contact{ID: f.reactors[0]}, Text: "m", CreatedAt: at}
	require.NoError(t, s.CreateMessage(ctx, f.msg, nil, nil))
	return f
}

// outcome is what UpdateMessage returned to one caller.
type outcome struct {
	m   messaging.Message
	err error
}

// start makes ch in a goroutine and returns where its outcome arrives.
// Unless it is the first, it waits until the change waits for the
// transaction that runs: the changes started queue in the order started.
func (f *combineFixture) start(ctx context.Context, ch messaging.MessageChange) <-chan outcome {
	f.t.Helper()
	before, running := sqlstore.Queued(f.s, f.msg.ID)
	out := make(chan outcome, 1)
	go func() {
		m, err := f.s.UpdateMessage(ctx, f.msg.ID, ch)
		out <- outcome{m, err}
	}()
	if running {
		require.Eventually(f.t, func() bool {
			n, _ := sqlstore.Queued(f.s, f.msg.ID)
			return n == before+1
		}, 10*time.Second, time.Millisecond, "the change waits for the transaction that runs")
	}
	return out
}

// record is a Recorder that stores the message after the change in an
// event, so that the events say what each change left.
func record(c messaging.Change) []messaging.Event {
	e := messaging.NewEvent(messaging.EventMessageUpdated, c.Message.ConversationID, "", time.Now())
	e.Message = c.Message
	return []messaging.Event{e}
}

// blocking returns a Recorder that records as record does, once the
// channel it returns with is closed, and a channel closed when the
// recorder is first called: the transaction is then running.
func blocking() (rec messaging.Recorder, release chan struct{}, entered chan struct{}) {
	release, entered = make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	return func(c messaging.Change) []messaging.Event {
		if once.CompareAndSwap(false, true) {
			close(entered)
		}
		<-release
		return record(c)
	}, release, entered
}

func add(name, reactor string, rec messaging.Recorder) messaging.MessageChange {
	return messaging.MessageChange{AddReactions: []messaging.Reaction{{Name: name, Reactors: []string{reactor}}}, Record: rec}
}

// reactors returns the embedded reactors of each name of m.
func reactors(m messaging.Message) map[string][]string {
	out := map[string][]string{}
	for _, r := range m.Reactions {
		out[r.Name] = r.Reactors
	}
	return out
}

func wait(t *testing.T, c <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-c:
		return o
	case <-time.After(20 * time.Second):
		t.Fatal("UpdateMessage did not return")
		return outcome{}
	}
}

// TestCombinedChanges: changes to one message that wait for the
// transaction changing it are made in the order they arrived, each seeing
// the message as the one before left it, with its own events; the one
// whose check fails changes nothing and records nothing, and the others
// are all made.
func TestCombinedChanges(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			f := newCombineFixture(t, e.Open(t), 4)
			r := f.reactors
			rec0, release, entered := blocking()
			var recorded1 atomic.Int32
			errLimit := errors.New("too many")

			c0 := f.start(ctx, add("a", r[0], rec0))
			<-entered // c0's transaction runs, until release
			c1 := f.start(ctx, add("a", r[1], func(c messaging.Change) []messaging.Event {
				recorded1.Add(1)
				return record(c)
			}))
			bad := add("a", r[2], record)
			bad.Check = func(before, after messaging.MessageCounts) error { return errLimit }
			c2 := f.start(ctx, bad)
			c3 := f.start(ctx, add("b", r[3], record))
			c4 := f.start(ctx, add("c", r[2], record))
			c5 := f.start(ctx, messaging.MessageChange{RemoveReaction: &messaging.Reaction{Name: "a", Reactors: []string{r[0]}}, Record: record})
			close(release)

			u := func(id int) string { return fmt.Sprintf("r%d", id) }
			want := []map[string][]string{
				{"a": {u(0)}},
				{"a": {u(0), u(1)}},
				{"a": {u(0), u(1)}, "b": {u(3)}},
				{"a": {u(0), u(1)}, "b": {u(3)}, "c": {u(2)}},
				{"a": {u(1)}, "b": {u(3)}, "c": {u(2)}},
			}
			for i, c := range []<-chan outcome{c0, c1, c3, c4, c5} {
				o := wait(t, c)
				require.NoError(t, o.err, "change %d", i)
				assert.Equal(t, want[i], reactors(o.m), "the message as change %d left it", i)
			}
			o := wait(t, c2)
			assert.ErrorIs(t, o.err, errLimit)
			assert.EqualValues(t, 2, recorded1.Load(), "c1 was made with c2, which failed, then again without it")

			got, err := f.s.GetMessage(ctx, f.msg.ID)
			require.NoError(t, err)
			assert.Equal(t, want[len(want)-1], reactors(got))
			names, _ := counters(t, f.s, f.msg.ID)
			assert.Equal(t, 3, names, "the message counts its names")
			evs, err := f.s.ReadEvents(ctx, events.Query{All: true, Limit: 100})
			require.NoError(t, err)
			require.Len(t, evs, len(want), "one event for each change made")
			for i, e := range evs {
				assert.Equal(t, want[i], reactors(*e.Message), "event %d", i)
			}
		})
	}
}

// TestCombinedCallerLeaves: a change whose caller's context ends while it
// waits returns the context's error at once and is not made.
func TestCombinedCallerLeaves(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			f := newCombineFixture(t, e.Open(t), 2)
			rec0, release, entered := blocking()
			c0 := f.start(ctx, add("a", f.reactors[0], rec0))
			<-entered
			leaving, leave := context.WithCancel(ctx)
			c1 := f.start(leaving, add("a", f.reactors[1], record))
			leave()
			assert.ErrorIs(t, wait(t, c1).err, context.Canceled, "while the transaction before it still runs")
			close(release)
			require.NoError(t, wait(t, c0).err)

			got, err := f.s.GetMessage(ctx, f.msg.ID)
			require.NoError(t, err)
			assert.Equal(t, map[string][]string{"a": {"r0"}}, reactors(got))
			n, running := sqlstore.Queued(f.s, f.msg.ID)
			assert.Zero(t, n)
			assert.False(t, running, "nothing left waiting")
		})
	}
}

// TestCombinedLeaderLeaves: the transaction of several changes goes on
// when the caller whose goroutine runs it leaves, since another waits for
// it; when every caller of a transaction has left, it is rolled back.
func TestCombinedLeaderLeaves(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			f := newCombineFixture(t, e.Open(t), 4)
			r := f.reactors
			rec0, release0, entered0 := blocking()
			c0 := f.start(ctx, add("a", r[0], rec0))
			<-entered0
			rec1, release1, entered1 := blocking()
			leaving, leave := context.WithCancel(ctx)
			c1 := f.start(leaving, add("a", r[1], rec1)) // runs the next transaction
			c2 := f.start(ctx, add("a", r[2], record))
			close(release0)
			require.NoError(t, wait(t, c0).err)
			<-entered1 // c1 and c2's transaction runs
			leave()
			close(release1)
			o1, o2 := wait(t, c1), wait(t, c2)
			require.NoError(t, o2.err)
			assert.Equal(t, map[string][]string{"a": {"r0", "r1", "r2"}}, reactors(o2.m), "c1 was made, then c2")
			require.NoError(t, o1.err, "c1 was made: its caller hears so")

			// Alone, and left: nothing is made.
			rec3, release3, entered3 := blocking()
			alone, leave3 := context.WithCancel(ctx)
			c3 := f.start(alone, add("b", r[3], rec3))
			<-entered3
			leave3()
			close(release3)
			assert.ErrorIs(t, wait(t, c3).err, context.Canceled)
			got, err := f.s.GetMessage(ctx, f.msg.ID)
			require.NoError(t, err)
			assert.Equal(t, map[string][]string{"a": {"r0", "r1", "r2"}}, reactors(got), "b was rolled back")
		})
	}
}

// TestCombinedPanic: a change that panics (its Check, here) panics in
// its caller's goroutine and changes nothing; the change made in the same
// transaction is made again without it, and later changes are made.
func TestCombinedPanic(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			f := newCombineFixture(t, e.Open(t), 4)
			r := f.reactors
			rec0, release, entered := blocking()
			c0 := f.start(ctx, add("a", r[0], rec0))
			<-entered
			c1 := f.start(ctx, add("a", r[1], record)) // runs the next transaction, with c2
			bad := add("a", r[2], record)
			bad.Check = func(before, after messaging.MessageCounts) error { panic("check") }
			panicked := make(chan any, 1)
			go func() {
				defer func() { panicked <- recover() }()
				_, _ = f.s.UpdateMessage(ctx, f.msg.ID, bad)
			}()
			require.Eventually(t, func() bool { n, _ := sqlstore.Queued(f.s, f.msg.ID); return n == 2 }, 10*time.Second, time.Millisecond)
			close(release)
			require.NoError(t, wait(t, c0).err)
			o := wait(t, c1)
			require.NoError(t, o.err)
			assert.Equal(t, map[string][]string{"a": {"r0", "r1"}}, reactors(o.m))
			select {
			case p := <-panicked:
				assert.Equal(t, "check", p, "the caller of the change that panicked panics")
			case <-time.After(20 * time.Second):
				t.Fatal("no panic")
			}
			o = wait(t, f.start(ctx, add("b", r[3], record)))
			require.NoError(t, o.err, "later changes are made")
			assert.Equal(t, map[string][]string{"a": {"r0", "r1"}, "b": {"r3"}}, reactors(o.m), "c2 changed nothing")
		})
	}
}
