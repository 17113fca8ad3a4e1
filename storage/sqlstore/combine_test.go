package sqlstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/domain"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
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
		require.NoError(t, s.Driver().PutContact(ctx, c))
		f.reactors = append(f.reactors, c.ID)
	}
	f.msg = messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: "c",
		Contact: messaging.Contact{ID: f.reactors[0]}, Text: "m", CreatedAt: at}
	require.NoError(t, s.Driver().CreateMessage(ctx, f.msg, nil, nil))
	return f
}

// outcome is what UpdateMessage returned to one caller.
type outcome struct {
	m   messaging.Message
	err error
}

// start makes ch in a goroutine and returns where its outcome arrives.
// When a transaction on the message runs, it waits until the change waits
// for it (or has returned, should that transaction have been ending): the
// changes started while one is held queue in the order started.
func (f *combineFixture) start(ctx context.Context, ch driver.MessageChange) <-chan outcome {
	f.t.Helper()
	return f.launch(ctx, ch, false)
}

// startRecovering is start, with a panic of UpdateMessage turned into the
// outcome's error (as net/http's per-request recover would contain it).
func (f *combineFixture) startRecovering(ctx context.Context, ch driver.MessageChange) <-chan outcome {
	f.t.Helper()
	return f.launch(ctx, ch, true)
}

// settle waits until no transaction runs on the message: a change
// started then runs first.
func (f *combineFixture) settle() {
	f.t.Helper()
	require.Eventually(f.t, func() bool { n, running := sqlstore.Queued(f.s, f.msg.ID); return n == 0 && !running },
		10*time.Second, time.Millisecond, "the message's transactions end")
}

func (f *combineFixture) launch(ctx context.Context, ch driver.MessageChange, recovering bool) <-chan outcome {
	f.t.Helper()
	before, running := sqlstore.Queued(f.s, f.msg.ID)
	out := make(chan outcome, 1)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		if recovering {
			defer func() {
				if p := recover(); p != nil {
					out <- outcome{err: fmt.Errorf("panicked: %v", p)}
				}
			}()
		}
		m, err := f.s.Driver().UpdateMessage(ctx, f.msg.ID, ch)
		out <- outcome{m, err}
	}()
	if running {
		require.Eventually(f.t, func() bool {
			select {
			case <-returned:
				return true
			default:
			}
			n, _ := sqlstore.Queued(f.s, f.msg.ID)
			return n == before+1
		}, 10*time.Second, time.Millisecond, "the change waits for the transaction that runs")
	}
	return out
}

// record is a Recorder that stores the message after the change in an
// event, so that the events say what each change left.
func record(c driver.Change) []messaging.Event {
	e := domain.NewEvent(messaging.EventMessageUpdated, c.Message.ConversationID, "", time.Now())
	e.Message = c.Message
	return []messaging.Event{e}
}

// hold waits until no transaction runs on the message, starts ch with a
// Recorder that records as record does once release is closed, and
// returns when ch's transaction runs: the changes started before release
// is closed wait for it, in the order started.
func (f *combineFixture) hold(ctx context.Context, ch driver.MessageChange) (out <-chan outcome, release chan struct{}) {
	f.t.Helper()
	f.settle() // ch runs first
	rec, release, entered := blocking()
	ch.Record = rec
	out = f.start(ctx, ch)
	<-entered
	return out, release
}

// blocking returns a Recorder that records as record does, once the
// channel it returns with is closed, and a channel closed when the
// recorder is first called: the transaction is then running.
func blocking() (rec driver.Recorder, release chan struct{}, entered chan struct{}) {
	release, entered = make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	return func(c driver.Change) []messaging.Event {
		if once.CompareAndSwap(false, true) {
			close(entered)
		}
		<-release
		return record(c)
	}, release, entered
}

func add(name, reactor string, rec driver.Recorder) driver.MessageChange {
	return driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: reactor, Add: []string{name}}, Record: rec}
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
			c1 := f.start(ctx, add("a", r[1], func(c driver.Change) []messaging.Event {
				recorded1.Add(1)
				return record(c)
			}))
			bad := add("a", r[2], record)
			bad.Check = func(before, after driver.MessageCounts) error { return errLimit }
			c2 := f.start(ctx, bad)
			c3 := f.start(ctx, add("b", r[3], record))
			c4 := f.start(ctx, add("c", r[2], record))
			c5 := f.start(ctx, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: r[0], Remove: []string{"a"}}, Record: record})
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

			got, err := f.s.Driver().GetMessage(ctx, f.msg.ID)
			require.NoError(t, err)
			assert.Equal(t, want[len(want)-1], reactors(got))
			names, _ := counters(t, f.s, f.msg.ID)
			assert.Equal(t, 3, names, "the message counts its names")
			evs, err := f.s.Driver().ReadEvents(ctx, driver.EventQuery{Scope: driver.Scope{All: true}, Limit: 100})
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
			c0, release := f.hold(ctx, add("a", f.reactors[0], nil))
			leaving, leave := context.WithCancel(ctx)
			c1 := f.start(leaving, add("a", f.reactors[1], record))
			leave()
			assert.ErrorIs(t, wait(t, c1).err, context.Canceled, "while the transaction before it still runs")
			close(release)
			require.NoError(t, wait(t, c0).err)

			got, err := f.s.Driver().GetMessage(ctx, f.msg.ID)
			require.NoError(t, err)
			assert.Equal(t, map[string][]string{"a": {"r0"}}, reactors(got))
			assert.Eventually(t, func() bool { n, running := sqlstore.Queued(f.s, f.msg.ID); return n == 0 && !running },
				10*time.Second, time.Millisecond, "nothing left waiting")
		})
	}
}

// TestCombinedCallerLeavesDuringTransaction: a caller whose context ends
// while a transaction makes its change returns at once; the transaction
// goes on while another of its callers waits, and makes the change; when
// every caller of a transaction has left, it is rolled back.
func TestCombinedCallerLeavesDuringTransaction(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			f := newCombineFixture(t, e.Open(t), 4)
			r := f.reactors
			c0, release0 := f.hold(ctx, add("a", r[0], nil))
			rec1, release1, entered1 := blocking()
			leaving, leave := context.WithCancel(ctx)
			c1 := f.start(leaving, add("a", r[1], rec1))
			c2 := f.start(ctx, add("a", r[2], record))
			close(release0)
			require.NoError(t, wait(t, c0).err)
			<-entered1 // c1 and c2's transaction runs
			leave()
			assert.ErrorIs(t, wait(t, c1).err, context.Canceled, "c1 returns while its transaction runs")
			close(release1)
			o2 := wait(t, c2)
			require.NoError(t, o2.err)
			assert.Equal(t, map[string][]string{"a": {"r0", "r1", "r2"}}, reactors(o2.m), "c1 was made, then c2")

			// Alone, and left: nothing is made.
			f.settle()
			rec3, release3, entered3 := blocking()
			alone, leave3 := context.WithCancel(ctx)
			c3 := f.start(alone, add("b", r[3], rec3))
			<-entered3
			leave3()
			assert.ErrorIs(t, wait(t, c3).err, context.Canceled)
			close(release3)
			require.Eventually(t, func() bool { _, running := sqlstore.Queued(f.s, f.msg.ID); return !running }, 10*time.Second, time.Millisecond)
			got, err := f.s.Driver().GetMessage(ctx, f.msg.ID)
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
			c0, release := f.hold(ctx, add("a", r[0], nil))
			c1 := f.start(ctx, add("a", r[1], record)) // the first of the next transaction, with c2
			bad := add("a", r[2], record)
			bad.Check = func(before, after driver.MessageCounts) error { panic("check") }
			panicked := make(chan any, 1)
			go func() {
				defer func() { panicked <- recover() }()
				_, _ = f.s.Driver().UpdateMessage(ctx, f.msg.ID, bad)
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
			f.settle()
			o = wait(t, f.start(ctx, add("b", r[3], record)))
			require.NoError(t, o.err, "later changes are made")
			assert.Equal(t, map[string][]string{"a": {"r0", "r1"}, "b": {"r3"}}, reactors(o.m), "c2 changed nothing")
		})
	}
}

func within(c <-chan outcome, d time.Duration) (outcome, bool) {
	select {
	case o := <-c:
		return o, true
	case <-time.After(d):
		return outcome{}, false
	}
}

// TestCombinedPanicFreesTheQueue: after a change whose Recorder panicked
// (its caller panics), a later change of the message is made, and nothing
// is left running.
func TestCombinedPanicFreesTheQueue(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			f := newCombineFixture(t, e.Open(t), 2)
			boom := add("a", f.reactors[0], func(driver.Change) []messaging.Event { panic("recorder bug") })
			o, ok := within(f.startRecovering(t.Context(), boom), 10*time.Second)
			require.True(t, ok)
			require.ErrorContains(t, o.err, "panicked")

			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			defer cancel()
			_, err := f.s.Driver().UpdateMessage(ctx, f.msg.ID, add("a", f.reactors[1], record))
			assert.NoError(t, err, "a later change of the message is made")
			assert.Eventually(t, func() bool { _, running := sqlstore.Queued(f.s, f.msg.ID); return !running },
				10*time.Second, time.Millisecond, "the message's queue ends")
		})
	}
}

// TestCombinedPanicInWaiter: the panic of a waiting change's Recorder
// reaches its own caller only: the change made in the same transaction is
// answered without it.
func TestCombinedPanicInWaiter(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			f := newCombineFixture(t, e.Open(t), 3)
			r := f.reactors
			rec0, release, entered := blocking()
			c0 := f.startRecovering(t.Context(), add("a", r[0], rec0))
			<-entered
			c1 := f.startRecovering(t.Context(), add("a", r[1], record))
			ctx2, cancel2 := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel2()
			c2 := f.startRecovering(ctx2, add("a", r[2], func(driver.Change) []messaging.Event { panic("recorder bug") }))
			close(release)
			require.NoError(t, wait(t, c0).err)

			o1, ok := within(c1, 5*time.Second)
			require.True(t, ok)
			assert.NotContains(t, fmt.Sprint(o1.err), "panicked", "c1's caller is not hit by c2's panic")
			_, ok = within(c2, 5*time.Second)
			assert.True(t, ok, "c2 returns (its context ended 2s in)")
		})
	}
}

// TestCombinedNoHostage: a caller whose change is committed, or whose
// context ends, returns without waiting for the changes of others (here,
// one whose Recorder blocks, made again after a refused one).
func TestCombinedNoHostage(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			f := newCombineFixture(t, e.Open(t), 4)
			r := f.reactors
			c0, release0 := f.hold(t.Context(), add("a", r[0], nil))
			wctx, leave := context.WithCancel(t.Context())
			w := f.start(wctx, add("a", r[1], record)) // the first of the next transaction
			bad := add("a", r[2], record)
			bad.Check = func(before, after driver.MessageCounts) error { return errors.New("refused") }
			x := f.start(t.Context(), bad)
			recY, releaseY, enteredY := blocking()
			y := f.start(t.Context(), add("b", r[3], recY))
			close(release0)
			require.NoError(t, wait(t, c0).err)
			<-enteredY // w was committed alone, x refused; y's transaction runs
			require.Error(t, wait(t, x).err)
			leave()
			_, ok := within(w, 3*time.Second)
			close(releaseY)
			require.NoError(t, wait(t, y).err)
			assert.True(t, ok, "w's change was committed and its context ended: it returns without waiting for y")
		})
	}
}

// TestCombinedEventsFailAlone: when the events' insert of a transaction
// fails, each change is made again alone: here c2's event has a type too
// long for its column (MySQL, strict); c1, which alone commits, does.
func TestCombinedEventsFailAlone(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		if e.Name != "mysql" {
			continue
		}
		t.Run(e.Name, func(t *testing.T) {
			f := newCombineFixture(t, e.Open(t), 3)
			r := f.reactors
			rec0, release, entered := blocking()
			c0 := f.start(t.Context(), add("a", r[0], rec0))
			<-entered
			c1 := f.start(t.Context(), add("a", r[1], record))
			c2 := f.start(t.Context(), add("a", r[2], func(c driver.Change) []messaging.Event {
				evs := record(c)
				evs[0].Type = messaging.EventType(strings.Repeat("x", 65)) // type is VARCHAR(64)
				return evs
			}))
			close(release)
			require.NoError(t, wait(t, c0).err)
			assert.Error(t, wait(t, c2).err, "c2's event cannot be stored")
			assert.NoError(t, wait(t, c1).err, "c1 is made, as it would be alone")
		})
	}
}

// TestCombinedCarriedRow: the message's row carried across the changes of
// one transaction is as each left it, for edits, read state, attachments
// and reactions, and an edit keeps the text the one before it left.
func TestCombinedCarriedRow(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			f := newCombineFixture(t, e.Open(t), 2)
			r := f.reactors
			at := func(s int) time.Time { return time.Date(2025, 3, 2, 0, 0, s, 0, time.UTC) }
			text := func(s string) *string { return &s }
			yes := true
			c0, release := f.hold(ctx, add("a", r[0], nil))
			c1 := f.start(ctx, driver.MessageChange{Text: text("t1"), RevisionID: "rev_1", UpdatedAt: at(1), Record: record})
			c2 := f.start(ctx, driver.MessageChange{Text: text("t2"), RevisionID: "rev_2", UpdatedAt: at(2), Record: record})
			c3 := f.start(ctx, driver.MessageChange{Read: &yes, ReadAt: at(3), Record: record})
			att := messaging.Attachment{ID: "att_1", UploaderID: r[0], Filename: "f", FileType: "text/plain", FileSize: 1, SHA256: "x", Key: "k", CreatedAt: at(4)}
			c4 := f.start(ctx, driver.MessageChange{NewAttachment: &att, UpdatedAt: at(4), Record: record})
			c5 := f.start(ctx, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: r[1], Add: []string{"b"}}, UpdatedAt: at(5), Record: record})
			c6 := f.start(ctx, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: r[0], Remove: []string{"a"}}, Record: record})
			close(release)
			require.NoError(t, wait(t, c0).err)
			o1, o2, o3, o4, o5, o6 := wait(t, c1), wait(t, c2), wait(t, c3), wait(t, c4), wait(t, c5), wait(t, c6)
			for i, o := range []outcome{o1, o2, o3, o4, o5, o6} {
				require.NoError(t, o.err, "change %d", i+1)
			}
			assert.Equal(t, "t1", o1.m.Text)
			assert.Equal(t, "t2", o2.m.Text)
			assert.Equal(t, at(2), o2.m.UpdatedAt)
			assert.Equal(t, "t2", o3.m.Text)
			assert.False(t, o3.m.ReadAt.IsZero(), "c3 read")
			assert.Len(t, o4.m.Attachments, 1)
			assert.False(t, o4.m.ReadAt.IsZero())
			assert.Len(t, o5.m.Attachments, 1)
			assert.Equal(t, map[string][]string{"a": {"r0"}, "b": {"r1"}}, reactors(o5.m))
			assert.Equal(t, at(5), o5.m.UpdatedAt)
			assert.Equal(t, map[string][]string{"b": {"r1"}}, reactors(o6.m))
			got, err := f.s.Driver().GetMessage(ctx, f.msg.ID)
			require.NoError(t, err)
			assert.Equal(t, got, o6.m, "the last answer is the message as stored")
			rev, err := f.s.Driver().GetRevision(ctx, "rev_2")
			require.NoError(t, err)
			assert.Equal(t, "t1", rev.Text, "c2 kept the text c1 left")
			rev, err = f.s.Driver().GetRevision(ctx, "rev_1")
			require.NoError(t, err)
			assert.Equal(t, "m", rev.Text)
		})
	}
}

// TestReactionAnswerIsStored: the message a reaction change answers
// (on PostgreSQL, reactPostgres's statements' reactions after the change)
// is GetMessage's, and its Check sees the message's names before and
// after, over random changes: 1 to 4 names added (new and existing), 1 to
// 3 taken back, both at once, around the 100 embedded reactors, names
// that disappear, and a reactor with no contact.
func TestReactionAnswerIsStored(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			f := newCombineFixture(t, e.Open(t), 115)
			rs := append(f.reactors, "ctc_nocontact")
			rnd := rand.New(rand.NewPCG(1, 2))
			names := []string{"a", "b", "c", "d", "e"}
			// Fill "a" past 100 first, so that the boundary is crossed often.
			for i := range 103 {
				_, err := f.s.Driver().UpdateMessage(ctx, f.msg.ID, add("a", rs[i], nil))
				require.NoError(t, err)
			}
			pick := func(list []string, n int) []string {
				for range n {
					if n := names[max(0, rnd.IntN(len(names)+2)-2)]; !slices.Contains(list, n) {
						list = append(list, n)
					}
				}
				return list
			}
			before, err := f.s.Driver().GetMessage(ctx, f.msg.ID)
			require.NoError(t, err)
			for step := range 400 {
				who := rs[rnd.IntN(len(rs))]
				ch := driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: who}}
				switch rnd.IntN(5) {
				case 0:
					ch.Reactions.Remove = pick(nil, 1+rnd.IntN(3))
				case 1:
					ch.Reactions.Add, ch.Reactions.Remove = pick(nil, 1+rnd.IntN(2)), pick(nil, 1+rnd.IntN(2))
				default:
					ch.Reactions.Add = pick(nil, 1+rnd.IntN(4))
				}
				if rnd.IntN(2) == 0 {
					ch.UpdatedAt = time.Date(2025, 4, 1, 0, 0, step, 0, time.UTC)
				}
				var seen []driver.MessageCounts
				if rnd.IntN(2) == 0 {
					ch.Check = func(b, a driver.MessageCounts) error {
						seen = append(seen, b, a)
						return nil
					}
				}
				got, err := f.s.Driver().UpdateMessage(ctx, f.msg.ID, ch)
				require.NoError(t, err)
				stored, err := f.s.Driver().GetMessage(ctx, f.msg.ID)
				require.NoError(t, err)
				require.Equal(t, stored, got, "step %d: %+v", step, ch.Reactions)
				if ch.Check != nil {
					require.Len(t, seen, 2)
					assert.Equal(t, len(before.Reactions), seen[0].ReactionNames, "step %d: names before", step)
					assert.Equal(t, len(stored.Reactions), seen[1].ReactionNames, "step %d: names after", step)
				}
				before = stored
			}
		})
	}
}

// TestCombinedLeavesRaceTheNextTransaction: callers that leave while the
// transaction before theirs ends all return, and nothing is left queued
// or running.
func TestCombinedLeavesRaceTheNextTransaction(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		if e.Name == "mysql" {
			continue
		}
		t.Run(e.Name, func(t *testing.T) {
			f := newCombineFixture(t, e.Open(t), 4)
			r := f.reactors
			for i := range 40 {
				c0, release := f.hold(t.Context(), add("a", r[i%2], nil))
				var outs []<-chan outcome
				var leaves []context.CancelFunc
				for k := range 3 {
					ctx, leave := context.WithCancel(t.Context())
					leaves = append(leaves, leave)
					var ch driver.MessageChange
					if (i+k)%2 == 0 {
						ch = add("b", r[1+k], record)
					} else {
						ch = driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: r[1+k], Remove: []string{"b"}}, Record: record}
					}
					outs = append(outs, f.start(ctx, ch))
				}
				go close(release)
				for k, leave := range leaves {
					if (i+k)%3 != 0 {
						go leave()
					}
				}
				wait(t, c0)
				for _, c := range outs {
					o := wait(t, c)
					if o.err != nil {
						require.ErrorIs(t, o.err, context.Canceled)
					}
				}
				for _, leave := range leaves {
					leave()
				}
				require.Eventually(t, func() bool {
					n, running := sqlstore.Queued(f.s, f.msg.ID)
					return n == 0 && !running
				}, 5*time.Second, time.Millisecond)
			}
		})
	}
}

// TestCombinedEventsAsRecorded: the events of a combined transaction
// (inserted together, on PostgreSQL in one statement) are stored as their
// Recorders made them, in order: type, conversation, audience, time (to
// the microsecond) and payload.
func TestCombinedEventsAsRecorded(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			f := newCombineFixture(t, e.Open(t), 4)
			r := f.reactors
			var mu sync.Mutex
			var recorded []messaging.Event
			twice := func(c driver.Change) []messaging.Event {
				at := time.Date(2025, 5, 1, 12, 0, 0, 123456789, time.UTC).Add(time.Duration(len(recorded)) * time.Millisecond)
				a := domain.NewEvent(messaging.EventMessageUpdated, c.Message.ConversationID, "", at)
				odd := *c.Message // a payload with what array and JSON literals escape
				odd.Text = `say "hi" \ {a,b} NULL ' $q$ ?`
				a.Message = &odd
				b := domain.NewEvent(messaging.EventMessageUpdated, c.Message.ConversationID, "", at.Add(time.Nanosecond))
				b.Message, b.AudienceID = c.Message, r[3] // one reader's, as conversation.read's
				mu.Lock()
				defer mu.Unlock()
				recorded = append(recorded, a, b)
				return []messaging.Event{a, b}
			}
			c0, release := f.hold(ctx, add("a", r[0], nil))
			var cs []<-chan outcome
			for i := 1; i < 4; i++ {
				cs = append(cs, f.start(ctx, add(fmt.Sprintf("n%d", i), r[i], twice)))
			}
			close(release)
			require.NoError(t, wait(t, c0).err)
			for _, c := range cs {
				require.NoError(t, wait(t, c).err)
			}
			got, err := f.s.Driver().ReadEvents(ctx, driver.EventQuery{Scope: driver.Scope{All: true}, Limit: 100})
			require.NoError(t, err)
			require.Len(t, got, 1+len(recorded))
			for i, want := range recorded {
				g := got[1+i]
				assert.Equal(t, want.Type, g.Type, "event %d", i)
				assert.Equal(t, want.ConversationID, g.ConversationID, "event %d", i)
				assert.Equal(t, want.AudienceID, g.AudienceID, "event %d", i)
				assert.Equal(t, want.Created.Truncate(time.Microsecond), g.Created, "event %d", i)
				wj, err := json.Marshal(want.Message)
				require.NoError(t, err)
				gj, err := json.Marshal(g.Message)
				require.NoError(t, err)
				assert.JSONEq(t, string(wj), string(gj), "event %d", i)
			}
		})
	}
}

// TestCloseAwaitsCombined: Close waits for the transactions of changes
// under way, and those waiting behind them, which are made.
func TestCloseAwaitsCombined(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			s := e.Open(t)
			f := newCombineFixture(t, s, 2)
			held, release := f.hold(ctx, add("a", f.reactors[0], nil))
			queued := f.start(ctx, add("b", f.reactors[1], record))
			closed := make(chan error, 1)
			go func() { closed <- s.Close() }()
			select {
			case err := <-closed:
				t.Fatalf("Close returned (%v) while a transaction ran", err)
			case <-time.After(100 * time.Millisecond):
			}
			close(release)
			require.NoError(t, wait(t, held).err)
			require.NoError(t, wait(t, queued).err, "made after the one under way")
			select {
			case err := <-closed:
				require.NoError(t, err)
			case <-time.After(20 * time.Second):
				t.Fatal("Close did not return")
			}
		})
	}
}
