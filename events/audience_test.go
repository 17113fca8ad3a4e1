package events_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/storetest"
)

// countingPolicy is a privatePolicy that counts its CanView calls for
// mallory.
type countingPolicy struct {
	*privatePolicy
	calls atomic.Int64
}

func (p *countingPolicy) CanView(ctx context.Context, contactID, conv string) (bool, error) {
	if contactID == p.malloryID {
		p.calls.Add(1)
	}
	return p.privatePolicy.CanView(ctx, contactID, conv)
}

// TestStreamThatSeesNothingIsNotOffered: once the Policy has said that a
// caller may not see a conversation, none of the caller's streams is
// offered its events (they cost nothing), the Policy is asked once for all
// of them, and streams narrowed to a quiet conversation get nothing of the
// others'.
func TestStreamThatSeesNothingIsNotOffered(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storetest.Store) {
		pol := &countingPolicy{privatePolicy: &privatePolicy{}}
		e := newEnvPolicy(t, store, pol, &events.Options{PolicyTTL: time.Hour})
		pol.malloryID = e.mal.ID
		var subs []*events.Subscription
		for range 50 {
			subs = append(subs, e.subscribe(e.mal, events.SubscribeOptions{}))
		}
		quiet := e.subscribe(e.bob, events.SubscribeOptions{ConversationID: "quiet"})
		watcher := e.subscribe(e.alice, events.SubscribeOptions{})

		e.send(e.alice, "private-team", "first")
		next(t, watcher)
		none(t, subs[0], 200*time.Millisecond) // asks the Policy: no
		before := pol.calls.Load()
		for i := range 20 {
			e.send(e.alice, "private-team", "more "+string(rune('a'+i)))
		}
		take(t, watcher, 20) // the Feed has delivered them all
		for i, s := range subs[1:] {
			assert.LessOrEqual(t, events.Queued(s), 1, "stream %d of a caller kept from the conversation holds only the event before the Policy's answer", i+1)
		}
		assert.Zero(t, events.Queued(subs[0]))
		assert.Zero(t, events.Queued(quiet), "a stream of a quiet conversation is offered nothing")
		none(t, subs[1], 100*time.Millisecond)
		assert.Equal(t, before, pol.calls.Load(), "the Policy's answer is shared by the caller's streams")
	})
}

// TestMembershipChangeTakesEffectAtOnce: under MembersOnly, a member
// removed through the Service stops getting the conversation's events at
// once (not after PolicyTTL), and one added gets them at once, in this
// instance and, once the pub/sub has brought the change, in another.
func TestMembershipChangeTakesEffectAtOnce(t *testing.T) {
	for name, stores := range sharedStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			a, b := joined(t, stores, messaging.MembersOnly(), events.Options{PolicyTTL: time.Hour, PollInterval: time.Hour})
			bob, err := b.msgs.SaveContact(ctx, messaging.Contact{Username: "bob"})
			require.NoError(t, err)
			for _, who := range []messaging.Contact{a.alice, a.bob} {
				require.NoError(t, a.msgs.AddMember(ctx, "team", who.ID))
			}
			onA := a.subscribe(a.bob, events.SubscribeOptions{})
			onB := b.subscribe(bob, events.SubscribeOptions{})
			onANarrow := a.subscribe(a.bob, events.SubscribeOptions{ConversationID: "team"})
			m := a.send(a.alice, "team", "while a member")
			for i, s := range []*events.Subscription{onA, onB, onANarrow} {
				assert.Equal(t, m.ID, next(t, s).Message.ID, "subscription %d", i)
			}

			// B learns of a change with A's wake-ups; gocloud's pub/sub does
			// not promise their order, so wait for it.
			changed := func() {
				require.Eventually(t, func() bool { return !events.Holds(b.feed, bob.ID, "team") }, 5*time.Second, time.Millisecond, "B forgets its answer")
			}
			// The setup's AddMember may reach B after m's wake-up and make
			// it forget the answer m made it ask for; B asks again at the
			// next event.
			for i := 0; !events.Holds(b.feed, bob.ID, "team"); i++ {
				require.Less(t, i, 10, "B holds no answer for bob")
				m := a.send(a.alice, "team", "still a member")
				for i, s := range []*events.Subscription{onA, onB, onANarrow} {
					require.Equal(t, m.ID, next(t, s).Message.ID, "subscription %d", i)
				}
			}
			require.NoError(t, a.msgs.RemoveMember(ctx, "team", a.bob.ID))
			changed()
			a.send(a.alice, "team", "after the removal")
			last, err := a.store.LastEvent(ctx)
			require.NoError(t, err)
			// Passed over before bob is a member again: the event would be
			// his once he is (visibility is asked when a stream reads).
			for _, s := range []*events.Subscription{onA, onB, onANarrow} {
				passes(t, s, last.Seq)
			}

			require.Eventually(t, func() bool { return events.Holds(b.feed, bob.ID, "team") }, 5*time.Second, time.Millisecond, "B asks again for the event after the removal")
			require.NoError(t, a.msgs.AddMember(ctx, "team", a.bob.ID))
			changed()
			m = a.send(a.alice, "team", "a member again")
			for i, s := range []*events.Subscription{onA, onB, onANarrow} {
				assert.Equal(t, m.ID, next(t, s).Message.ID, "subscription %d", i)
			}
		})
	}
}

// readingStore records the events each ReadEvents returned.
type readingStore struct {
	storetest.Store
	mu   sync.Mutex
	read []messaging.Event
}

func (s *readingStore) ReadEvents(ctx context.Context, q driver.EventQuery) ([]messaging.Event, error) {
	evs, err := s.Store.ReadEvents(ctx, q)
	s.mu.Lock()
	s.read = append(s.read, evs...)
	s.mu.Unlock()
	return evs, err
}

// TestResumeReadsOnlyWhatTheCallerMaySee: a resume reads from the store
// the events of the caller's scope, not those of conversations it may not
// see (which the Feed would only drop).
func TestResumeReadsOnlyWhatTheCallerMaySee(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storetest.Store) {
		rs := &readingStore{Store: store}
		e := newEnv(t, rs, nil)
		live := e.subscribe(e.mal, events.SubscribeOptions{})
		e.send(e.alice, "general", "before")
		from := next(t, live)
		for i := range 20 {
			e.send(e.alice, "private-x", "hidden "+string(rune('a'+i)))
		}
		want := e.send(e.alice, "general", "after")
		require.Equal(t, want.ID, next(t, live).Message.ID) // the Feed has read them all
		live.Close()

		rs.mu.Lock()
		rs.read = nil
		rs.mu.Unlock()
		s := e.subscribe(e.mal, events.SubscribeOptions{After: from.ID})
		assert.Equal(t, want.ID, next(t, s).Message.ID)
		rs.mu.Lock()
		defer rs.mu.Unlock()
		require.NotEmpty(t, rs.read)
		for _, ev := range rs.read {
			assert.NotEqual(t, "private-x", ev.ConversationID, "the store reads no event of a conversation mallory may not see")
		}
	})
}

// heldPolicy is a privatePolicy whose answers for one caller are counted,
// may be held until released, and may turn to "no".
type heldPolicy struct {
	*privatePolicy
	who   string
	calls atomic.Int64
	mu    sync.Mutex
	gate  chan struct{} // when not nil, the caller's answers wait for it
	deny  bool
}

func (p *heldPolicy) CanView(ctx context.Context, contactID, conv string) (bool, error) {
	if contactID != p.who {
		return p.privatePolicy.CanView(ctx, contactID, conv)
	}
	p.calls.Add(1)
	p.mu.Lock()
	gate, deny := p.gate, p.deny
	p.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return !deny, nil
}

func (p *heldPolicy) set(gate chan struct{}, deny bool) {
	p.mu.Lock()
	p.gate, p.deny = gate, deny
	p.mu.Unlock()
}

// TestBusyStreamDoesNotWaitForThePolicy: a "yes" that a stream relies on
// is asked again in the background once less than half of PolicyTTL is
// left, so that a stream of a conversation with traffic goes on past the
// first answer's expiry without asking the Policy (here held); a "no"
// that the renewal brings stops the events.
func TestBusyStreamDoesNotWaitForThePolicy(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storetest.Store) {
		pol := &heldPolicy{privatePolicy: &privatePolicy{}}
		e := newEnvPolicy(t, store, pol, &events.Options{PolicyTTL: time.Hour})
		pol.who = e.bob.ID
		s := e.subscribe(e.bob, events.SubscribeOptions{})
		narrow := e.subscribe(e.bob, events.SubscribeOptions{ConversationID: "general"})
		read := func(text string, subs ...*events.Subscription) messaging.Message {
			t.Helper()
			m := e.send(e.alice, "general", text)
			for i, sub := range subs {
				require.Equal(t, m.ID, next(t, sub).Message.ID, "subscription %d", i)
			}
			return m
		}

		read("first", s, narrow) // asked: yes, for an hour
		require.Equal(t, int64(1), pol.calls.Load(), "one answer for both streams")
		first := events.Expiry(e.feed, e.bob.ID, "general")
		e.clock.add(40 * time.Minute)
		read("second", s, narrow) // 20 minutes left: asked again in the background
		require.Eventually(t, func() bool { return events.Expiry(e.feed, e.bob.ID, "general").After(first) },
			10*time.Second, time.Millisecond, "the answer is renewed")
		assert.Equal(t, int64(2), pol.calls.Load(), "renewed once for both streams")

		gate := make(chan struct{})
		t.Cleanup(func() { close(gate) })
		pol.set(gate, false)
		e.clock.add(25 * time.Minute) // past the first answer's expiry, 35 minutes left
		read("third", s, narrow)      // the Policy is held: the renewed answer is used
		assert.Equal(t, int64(2), pol.calls.Load(), "the Policy is not asked while the renewed answer holds")

		pol.set(nil, true)
		e.clock.add(30 * time.Minute) // 5 minutes left of the renewed answer
		// Still a "yes" for the first reader, which has it renewed: "no".
		// The second may read the event after the "no" has come, and then
		// not get it.
		fourth := read("fourth", s)
		require.Eventually(t, func() bool { return pol.calls.Load() == 3 && !events.Admits(e.feed, e.bob.ID, "general") },
			10*time.Second, time.Millisecond, "the renewal brings the Policy's no")
		e.send(e.alice, "general", "fifth")
		none(t, s, 300*time.Millisecond)
		ctx, cancel := context.WithTimeout(e.ctx, 100*time.Millisecond)
		defer cancel()
		if ev, err := narrow.Next(ctx); err == nil {
			require.Equal(t, fourth.ID, ev.Message.ID, "only the event from before the no")
			none(t, narrow, 100*time.Millisecond)
		}
	})
}
