package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gocloud.dev/pubsub/mempubsub"

	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

// memberStore runs then after each membership change has committed, before
// the Service is told it returned: what another writer may do meanwhile.
type memberStore struct {
	storetest.Store
	then func()
}

func (s *memberStore) AddMember(ctx context.Context, conv, contact string, at time.Time) error {
	err := s.Store.AddMember(ctx, conv, contact, at)
	if err == nil && s.then != nil {
		s.then()
	}
	return err
}

func (s *memberStore) RemoveMember(ctx context.Context, conv, contact string) error {
	err := s.Store.RemoveMember(ctx, conv, contact)
	if err == nil && s.then != nil {
		s.then()
	}
	return err
}

// TestMembershipChangeWindow: an event committed after a membership change
// has committed, but before the Service has returned from it, follows the
// new membership: a removed member's streams never get it, and an added
// member's get it (none is skipped).
func TestMembershipChangeWindow(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storetest.Store) {
		ms := &memberStore{Store: store}
		e := newEnvPolicy(t, ms, messaging.MembersOnly(), &events.Options{PolicyTTL: time.Hour})
		ctx := e.ctx
		for _, who := range []messaging.Contact{e.alice, e.bob} {
			require.NoError(t, e.msgs.AddMember(ctx, "team", who.ID))
		}
		wide := e.subscribe(e.bob, events.SubscribeOptions{})
		narrow := e.subscribe(e.bob, events.SubscribeOptions{ConversationID: "team"})
		watcher := e.subscribe(e.alice, events.SubscribeOptions{ConversationID: "team"})
		m := e.send(e.alice, "team", "while a member")
		for _, s := range []*events.Subscription{wide, narrow, watcher} {
			require.Equal(t, m.ID, next(t, s).Message.ID)
		}

		// Removed: alice writes as soon as the removal has committed.
		var during messaging.Message
		ms.then = func() {
			during = e.send(e.alice, "team", "just after the removal")
			require.Equal(t, during.ID, next(t, watcher).Message.ID)
			last, err := e.store.LastEvent(ctx)
			require.NoError(t, err)
			for _, s := range []*events.Subscription{wide, narrow} {
				readUpTo(t, s, last.Seq)
			}
		}
		require.NoError(t, e.msgs.RemoveMember(ctx, "team", e.bob.ID))
		ms.then = nil
		e.send(e.alice, "team", "after the removal") // bob's streams now hold a "no"
		next(t, watcher)
		last, err := e.store.LastEvent(ctx)
		require.NoError(t, err)
		for _, s := range []*events.Subscription{wide, narrow} {
			readUpTo(t, s, last.Seq)
		}
		require.True(t, events.Holds(e.feed, e.bob.ID, "team"))

		// Added again: alice writes as soon as the addition has committed.
		var back messaging.Message
		ms.then = func() {
			back = e.send(e.alice, "team", "just after the addition")
			require.Equal(t, back.ID, next(t, watcher).Message.ID)
		}
		require.NoError(t, e.msgs.AddMember(ctx, "team", e.bob.ID))
		ms.then = nil
		after := e.send(e.alice, "team", "later")
		for i, s := range []*events.Subscription{wide, narrow} {
			assert.Equal(t, back.ID, next(t, s).Message.ID, "subscription %d: the event after the addition", i)
			assert.Equal(t, after.ID, next(t, s).Message.ID, "subscription %d", i)
		}
	})
}

// readUpTo reads the subscription until it has considered the event seq,
// and fails if it returns any event meanwhile.
func readUpTo(t testing.TB, s *events.Subscription, seq int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for events.Floor(s) < seq && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		ev, err := s.Next(ctx)
		cancel()
		if err == nil {
			t.Errorf("a removed member got event %s %s of %s", ev.Type, ev.ID, ev.ConversationID)
		}
	}
}

// TestOtherReaderGoneDoesNotFailStream: when the reader that asks the
// Policy for the caller's streams goes away (its context ends) before the
// answer comes, another stream of the caller that waits for that answer
// asks again itself, rather than fail with the first reader's
// cancellation.
func TestOtherReaderGoneDoesNotFailStream(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storetest.Store) {
		pol := &heldPolicy{privatePolicy: &privatePolicy{}}
		e := newEnvPolicy(t, store, pol, &events.Options{PolicyTTL: time.Hour})
		pol.who = e.bob.ID
		gone := e.subscribe(e.bob, events.SubscribeOptions{})
		stays := e.subscribe(e.bob, events.SubscribeOptions{})
		gate := make(chan struct{})
		pol.set(gate, false)
		m := e.send(e.alice, "general", "hello")

		ctx, cancel := context.WithCancel(e.ctx)
		goneErr := make(chan error, 1)
		go func() {
			_, err := gone.Next(ctx)
			goneErr <- err
		}()
		require.Eventually(t, func() bool { return pol.calls.Load() == 1 }, 10*time.Second, time.Millisecond, "the first reader asks")
		got := make(chan error, 1)
		var ev messaging.Event
		go func() {
			var err error
			ev, err = stays.Next(e.ctx)
			got <- err
		}()
		require.Eventually(t, func() bool { return events.Queued(stays) == 0 }, 10*time.Second, time.Millisecond)
		time.Sleep(50 * time.Millisecond) // let it wait for the first reader's answer
		cancel()
		require.ErrorIs(t, <-goneErr, context.Canceled)
		for deadline := time.Now().Add(10 * time.Second); pol.calls.Load() < 2; {
			require.True(t, time.Now().Before(deadline), "the second reader asks again")
			select {
			case err := <-got:
				require.NoError(t, err, "the other stream goes on")
				require.Fail(t, "an event without the Policy's answer")
			case <-time.After(time.Millisecond):
			}
		}
		close(gate)
		require.NoError(t, <-got, "the other stream goes on")
		assert.Equal(t, m.ID, ev.Message.ID)
	})
}

// TestPrunedDuringResumeIsLost: events pruned after a resume found the
// event it resumes after, but before it read the events after it, are not
// passed over in silence: the subscription starts with events.lost.
func TestPrunedDuringResumeIsLost(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storetest.Store) {
		e := newEnv(t, store, &events.Options{Retention: time.Hour, PruneInterval: time.Hour})
		watcher := e.subscribe(e.alice, events.SubscribeOptions{})
		from := e.send(e.alice, "general", "from")
		for i := range 3 {
			e.send(e.alice, "general", "missed "+string(rune('a'+i)))
		}
		take(t, watcher, 4) // the Feed has read them all
		page, err := e.feed.Events(e.ctx, e.bob, "general", messaging.ListOptions{Limit: 4})
		require.NoError(t, err)
		require.Len(t, page.Data, 4)
		after := page.Data[3] // the oldest
		require.Equal(t, from.ID, after.Message.ID)
		r := e.subscribe(e.bob, events.SubscribeOptions{After: after.ID})

		// The retention passes: all but the newest (kept, on SQLite) go.
		_, err = store.PruneEvents(e.ctx, time.Now().Add(time.Hour))
		require.NoError(t, err)
		ev := next(t, r)
		assert.Equal(t, messaging.EventsLost, ev.Type, "got %s %s rather than events.lost", ev.Type, ev.ID)
		live := e.send(e.alice, "general", "live")
		assert.Equal(t, live.ID, next(t, r).Message.ID, "then live")
	})
}

// TestClosedFeedKeepsNothingForWakeUps: after Close (the Service's other
// calls keep working), membership changes and typing keep nothing for
// wake-ups that no one will send.
func TestClosedFeedKeepsNothingForWakeUps(t *testing.T) {
	ctx := context.Background()
	topic := mempubsub.NewTopic()
	t.Cleanup(func() { _ = topic.Shutdown(ctx) })
	e := newEnv(t, memstore.New().Driver(), &events.Options{Topic: topic})
	require.NoError(t, e.msgs.Close())
	for range 100 {
		require.NoError(t, e.msgs.AddMember(ctx, "general", e.bob.ID))
		_, err := e.msgs.Typing(ctx, e.alice, "general")
		require.NoError(t, err)
	}
	members, typings := events.Untold(e.feed)
	assert.Zero(t, members)
	assert.Zero(t, typings)
}
