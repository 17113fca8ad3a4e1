package events_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/internal/eventstest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

// TestEveryKindOfEventOnceInOrderByPolicy makes a change of every kind
// through the services and follows three callers' subscriptions: each
// gets every event it may see, once, in the order of the changes, with
// the resource as a read returns it after the change.
func TestEveryKindOfEventOnceInOrderByPolicy(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storetest.Store) {
		e := newEnv(t, store, nil)
		alice := e.subscribe(e.alice, events.SubscribeOptions{})
		bob := e.subscribe(e.bob, events.SubscribeOptions{})
		mal := e.subscribe(e.mal, events.SubscribeOptions{})
		general := e.subscribe(e.bob, events.SubscribeOptions{ConversationID: "general"})
		ctx := e.ctx

		// alice uploads a file in no conversation, then sends it in
		// "private": the upload's event is hers alone.
		unfiled := e.upload(e.alice, "", "notes.txt")
		m := e.send(e.alice, "private", "hello", unfiled.ID)
		_, err := e.msgs.Update(ctx, e.alice, m.ID, messaging.Update{Text: new("hello, bob")})
		require.NoError(t, err)
		_, err = e.msgs.Update(ctx, e.bob, m.ID, messaging.Update{React: []string{"wave"}})
		require.NoError(t, err)
		_, err = e.msgs.MarkRead(ctx, e.bob, "private", m.ID) // bob's alone
		require.NoError(t, err)
		_, err = e.files.Rename(ctx, e.alice, unfiled.ID, "minutes.txt")
		require.NoError(t, err)
		_, err = e.msgs.Unreact(ctx, e.bob, m.ID, "wave")
		require.NoError(t, err)
		g := e.send(e.bob, "general", "in general")
		filed := e.upload(e.alice, "general", "filed.txt")
		require.NoError(t, e.files.Delete(ctx, e.alice, filed.ID))
		require.NoError(t, e.msgs.Delete(ctx, e.alice, m.ID))
		_, err = e.msgs.Update(ctx, e.alice, g.ID, messaging.Update{Read: new(true)})
		require.NoError(t, err)

		const (
			msgCreated = messaging.EventMessageCreated
			msgUpdated = messaging.EventMessageUpdated
			msgDeleted = messaging.EventMessageDeleted
			attCreated = messaging.EventAttachmentCreated
			attUpdated = messaging.EventAttachmentUpdated
			attDeleted = messaging.EventAttachmentDeleted
			read       = messaging.EventConversationRead
		)
		wantAlice := []messaging.EventType{attCreated, msgCreated, attUpdated, msgUpdated, msgUpdated, attUpdated, msgUpdated,
			msgCreated, attCreated, attDeleted, msgDeleted, attDeleted, msgUpdated}
		got := take(t, alice, len(wantAlice))
		assert.Equal(t, wantAlice, types(got), "alice sees every change but bob's read")
		none(t, alice, 50*time.Millisecond)

		wantBob := []messaging.EventType{msgCreated, attUpdated, msgUpdated, msgUpdated, read, attUpdated, msgUpdated,
			msgCreated, attCreated, attDeleted, msgDeleted, attDeleted, msgUpdated}
		gotBob := take(t, bob, len(wantBob))
		assert.Equal(t, wantBob, types(gotBob), "bob sees his read, not alice's unfiled upload")

		wantMal := []messaging.EventType{msgCreated, attCreated, attDeleted, msgUpdated}
		assert.Equal(t, wantMal, types(take(t, mal, len(wantMal))), "mallory sees none of private")
		none(t, mal, 50*time.Millisecond)
		assert.Equal(t, wantMal, types(take(t, general, len(wantMal))), "a subscription of one conversation")

		// Once each, in Seq order, with ids.
		ids := map[string]bool{}
		for i, ev := range got {
			assert.False(t, ids[ev.ID], "event %s twice", ev.ID)
			ids[ev.ID] = true
			if i > 0 {
				assert.Greater(t, ev.Seq, got[i-1].Seq)
			}
			assert.False(t, ev.Created.IsZero())
		}

		// The objects are the resources after each change.
		assert.Equal(t, unfiled.ID, got[0].Attachment.ID)
		assert.Equal(t, e.alice.ID, got[0].AudienceID)
		assert.Empty(t, got[0].ConversationID)
		require.NotNil(t, got[1].Message)
		assert.Equal(t, "hello", got[1].Message.Text)
		assert.Equal(t, "alice", got[1].Message.Contact.Username, "the sender, whole")
		require.Len(t, got[1].Message.Attachments, 1)
		assert.Equal(t, "private", got[2].Attachment.ConversationID, "linked: now in the conversation")
		assert.Equal(t, m.ID, got[2].Attachment.MessageID)
		assert.Equal(t, "hello, bob", got[3].Message.Text)
		assert.Equal(t, []messaging.Reaction{{Name: "wave", Reactors: []string{"bob"}, Count: 1}}, got[4].Message.Reactions, "reactions merged")
		assert.Equal(t, "minutes.txt", got[5].Attachment.Filename)
		assert.Empty(t, got[6].Message.Reactions)
		assert.Equal(t, filed.ID, got[9].DeletedID)
		assert.Equal(t, m.ID, got[10].DeletedID)
		assert.Equal(t, unfiled.ID, got[11].DeletedID, "the message's attachment goes with it")
		assert.False(t, got[12].Message.ReadAt.IsZero())

		r := gotBob[4]
		require.NotNil(t, r.Conversation)
		assert.Equal(t, e.bob.ID, r.AudienceID)
		assert.Equal(t, m.ID, r.Conversation.LastReadMessageID, "the conversation as bob sees it after the read")
		assert.Zero(t, r.Conversation.UnreadCount)

		// What each got is what CanSeeEvent allows.
		for _, ev := range got {
			ok, err := e.msgs.CanSeeEvent(ctx, e.alice, ev)
			require.NoError(t, err)
			assert.True(t, ok)
		}
		ok, err := e.msgs.CanSeeEvent(ctx, e.alice, r)
		require.NoError(t, err)
		assert.False(t, ok, "a read is its reader's")
	})
}

// TestResumeAfterLastEventGetsExactlyWhatWasMissed reads some events,
// stops, lets more happen, and resumes after the last one read.
func TestResumeAfterLastEventGetsExactlyWhatWasMissed(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storetest.Store) {
		e := newEnv(t, store, nil)
		s := e.subscribe(e.bob, events.SubscribeOptions{})
		var sent []string
		for i := range 3 {
			sent = append(sent, e.send(e.alice, "general", "before "+string(rune('a'+i))).ID)
		}
		got := take(t, s, 2)
		s.Close()
		for i := range 4 {
			sent = append(sent, e.send(e.alice, "general", "while away "+string(rune('a'+i))).ID)
		}
		_, err := s.Next(e.ctx)
		assert.ErrorIs(t, err, events.ErrClosed)

		r := e.subscribe(e.bob, events.SubscribeOptions{After: got[1].ID})
		missed := take(t, r, 5)
		for i, ev := range missed {
			assert.Equal(t, sent[2+i], ev.Message.ID, "every event after the last one read, in order")
		}
		none(t, r, 50*time.Millisecond)
		live := e.send(e.alice, "general", "live")
		assert.Equal(t, live.ID, next(t, r).Message.ID, "then live, none twice")
		none(t, r, 50*time.Millisecond)

		// Resuming in one conversation skips the others'.
		e.send(e.alice, "other", "elsewhere")
		in := e.send(e.alice, "general", "here")
		c := e.subscribe(e.bob, events.SubscribeOptions{After: got[1].ID, ConversationID: "general"})
		assert.Len(t, take(t, c, 6), 6, "the five missed and the live one")
		assert.Equal(t, in.ID, next(t, c).Message.ID)
	})
}

// TestResumeAfterPrunedEventIsLost resumes after an event older than the
// retention: the subscription starts with events.lost, then goes on live.
func TestResumeAfterPrunedEventIsLost(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storetest.Store) {
		e := newEnv(t, store, &events.Options{Retention: time.Hour, PruneInterval: 20 * time.Millisecond})
		clock := e.clock
		s := e.subscribe(e.bob, events.SubscribeOptions{})
		e.send(e.alice, "general", "old")
		old := next(t, s)
		clock.add(2 * time.Hour)
		kept := e.send(e.alice, "general", "kept") // made "now", not pruned
		require.Eventually(t, func() bool {
			_, err := store.GetEvent(e.ctx, old.ID)
			return errors.Is(err, messaging.ErrNotFound)
		}, 10*time.Second, 10*time.Millisecond, "the old event is pruned")
		_, err := store.GetEvent(e.ctx, next(t, s).ID)
		require.NoError(t, err, "the new one is kept")

		r := e.subscribe(e.bob, events.SubscribeOptions{After: old.ID})
		lost := next(t, r)
		assert.Equal(t, messaging.EventsLost, lost.Type)
		none(t, r, 50*time.Millisecond)
		live := e.send(e.alice, "general", "live")
		assert.Equal(t, live.ID, next(t, r).Message.ID, "then live")

		// Its id resumes after the newest event of when it was made.
		again := e.subscribe(e.bob, events.SubscribeOptions{After: lost.ID})
		assert.Equal(t, live.ID, next(t, again).Message.ID)
		_ = kept
	})
}

// TestSlowSubscriberIsCutOffFastOneKeepsUp fills a subscription nobody
// reads: it ends with ErrTooSlow, while writers and another subscription
// go on.
func TestSlowSubscriberIsCutOffFastOneKeepsUp(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storetest.Store) {
		e := newEnv(t, store, &events.Options{Buffer: 4})
		slow := e.subscribe(e.bob, events.SubscribeOptions{})
		fast := e.subscribe(e.bob, events.SubscribeOptions{})
		const n = 30
		var got []messaging.Event
		for i := range n {
			start := time.Now()
			e.send(e.alice, "general", "message "+string(rune('A'+i)))
			assert.Less(t, time.Since(start), 5*time.Second, "a write never waits for a reader")
			got = append(got, next(t, fast))
		}
		assert.Len(t, got, n, "the fast reader got every event")
		var err error
		for range n {
			if _, err = slow.Next(e.ctx); err != nil {
				break
			}
		}
		assert.ErrorIs(t, err, events.ErrTooSlow, "the slow reader is cut off")
		_, err = slow.Next(e.ctx)
		assert.ErrorIs(t, err, events.ErrTooSlow, "and stays so")
	})
}

// TestHeldDeliveryResumesAfterRestart holds delivery (eventstest.Hold), so
// that a committed event is not delivered, closes the Feed as a crash
// would stop it, and starts another: the event reaches a subscriber that
// resumes, and the handler.
func TestHeldDeliveryResumesAfterRestart(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storetest.Store) {
		e := newEnv(t, store, nil)
		var mu sync.Mutex
		var handled []string
		handler := func(_ context.Context, ev messaging.Event) error {
			mu.Lock()
			handled = append(handled, ev.ID)
			mu.Unlock()
			return nil
		}
		require.NoError(t, e.feed.Handle(e.ctx, "log", handler))
		s := e.subscribe(e.bob, events.SubscribeOptions{})
		e.send(e.alice, "general", "first")
		first := next(t, s)
		require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(handled) == 1 }, 10*time.Second, 5*time.Millisecond)
		require.NoError(t, e.feed.Close())

		held := e.newFeed(nil, eventstest.Hold)
		require.NoError(t, held.Handle(e.ctx, "log", handler))
		hs, err := held.Subscribe(e.ctx, e.bob, events.SubscribeOptions{})
		require.NoError(t, err)
		m := e.send(e.alice, "general", "committed, not delivered")
		none(t, hs, 200*time.Millisecond)
		require.NoError(t, held.Close())
		mu.Lock()
		assert.Len(t, handled, 1, "the held handler handled nothing")
		mu.Unlock()

		// As after a crash, which gives no claim up: the restart comes
		// after the stopped Feed's lease on the handler has run out.
		e.clock.add(time.Minute)
		e.feed = e.newFeed(nil)
		require.NoError(t, e.feed.Handle(e.ctx, "log", handler))
		r := e.subscribe(e.bob, events.SubscribeOptions{After: first.ID})
		got := next(t, r)
		assert.Equal(t, m.ID, got.Message.ID, "the subscriber resuming gets it")
		require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return slices.Contains(handled, got.ID) }, 10*time.Second, 5*time.Millisecond,
			"the handler resumes from its stored position")
		mu.Lock()
		// At least once: the first event again only if the first Feed
		// closed between handling it and saving its position.
		assert.LessOrEqual(t, len(handled), 3)
		assert.Equal(t, got.ID, handled[len(handled)-1])
		mu.Unlock()
	})
}

// TestHandlersRetryAndNeverFailWrites runs a handler that fails, one that
// always fails and one that panics: writes succeed, the first sees each
// event until it succeeds, in order, the others are skipped after their
// attempts.
func TestHandlersRetryAndNeverFailWrites(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storetest.Store) {
		e := newEnv(t, store, &events.Options{HandlerAttempts: 3, HandlerBackoff: time.Millisecond})
		var mu sync.Mutex
		calls := map[string]int{}
		var order []string
		require.NoError(t, e.feed.Handle(e.ctx, "flaky", func(_ context.Context, ev messaging.Event) error {
			mu.Lock()
			defer mu.Unlock()
			calls[ev.ID]++
			if calls[ev.ID] < 2 {
				return errors.New("try again")
			}
			order = append(order, ev.Message.Text)
			return nil
		}))
		var broken, panicky sync.Map
		require.NoError(t, e.feed.Handle(e.ctx, "broken", func(_ context.Context, ev messaging.Event) error {
			n, _ := broken.LoadOrStore(ev.ID, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			return errors.New("always")
		}))
		require.NoError(t, e.feed.Handle(e.ctx, "panicky", func(_ context.Context, ev messaging.Event) error {
			panicky.Store(ev.ID, true)
			panic("oops")
		}))
		assert.Error(t, e.feed.Handle(e.ctx, "flaky", func(context.Context, messaging.Event) error { return nil }), "names are unique")
		for _, text := range []string{"one", "two", "three"} {
			e.send(e.alice, "general", text)
		}
		require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == 3 }, 10*time.Second, 5*time.Millisecond)
		mu.Lock()
		assert.Equal(t, []string{"one", "two", "three"}, order, "in order, each once it succeeds")
		for id, n := range calls {
			assert.Equal(t, 2, n, "event %s: called until it succeeded", id)
		}
		mu.Unlock()
		require.Eventually(t, func() bool {
			n := 0
			broken.Range(func(_, v any) bool {
				if v.(*atomic.Int64).Load() == 3 {
					n++
				}
				return true
			})
			return n == 3
		}, 10*time.Second, 5*time.Millisecond, "a failing handler gets each event HandlerAttempts times")
	})
}

// TestSlowHandlerKeepsItsClaim runs one handler on two instances over one
// store, with a call that lasts three times HandlerLease: the instance
// that runs it keeps its claim meanwhile, so the other never calls the
// handler with the same event at the same time, nor again after.
func TestSlowHandlerKeepsItsClaim(t *testing.T) {
	store := memstore.New()
	o := events.Options{HandlerLease: 500 * time.Millisecond, PollInterval: 20 * time.Millisecond}
	a, b := newEnv(t, store.Driver(), &o), newEnv(t, store.Driver(), &o)
	var running, most, calls atomic.Int64
	handler := func(ctx context.Context, ev messaging.Event) error {
		n := running.Add(1)
		defer running.Add(-1)
		calls.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case <-time.After(3 * o.HandlerLease):
		case <-ctx.Done():
		}
		return nil
	}
	require.NoError(t, a.feed.Handle(a.ctx, "slow", handler))
	require.NoError(t, b.feed.Handle(b.ctx, "slow", handler))
	a.send(a.alice, "general", "slow to handle")
	require.Eventually(t, func() bool { return most.Load() > 1 || calls.Load() > 0 && running.Load() == 0 }, 10*time.Second, 5*time.Millisecond)
	assert.EqualValues(t, 1, most.Load(), "one call at a time among the instances")
	assert.EqualValues(t, 1, calls.Load(), "the event is handled once")
}

// TestListPollsPastEvents lists events newest first, in pages, filtered
// like subscriptions.
func TestListPollsPastEvents(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storetest.Store) {
		e := newEnv(t, store, nil)
		var sent []string
		for i := range 5 {
			sent = append(sent, e.send(e.alice, "general", "g"+string(rune('0'+i))).ID)
		}
		secret := e.send(e.alice, "private", "secret")
		_, err := e.msgs.MarkRead(e.ctx, e.bob, "private", secret.ID)
		require.NoError(t, err)
		e.upload(e.alice, "", "mine.txt")

		page, err := e.feed.Events(e.ctx, e.mal, "", messaging.ListOptions{Limit: 3})
		require.NoError(t, err)
		require.Len(t, page.Data, 3)
		assert.True(t, page.HasMore)
		for i, ev := range page.Data {
			assert.Equal(t, sent[4-i], ev.Message.ID, "newest first, without what mallory may not see")
		}
		next, err := e.feed.Events(e.ctx, e.mal, "", messaging.ListOptions{Limit: 3, StartingAfter: page.Data[2].ID})
		require.NoError(t, err)
		require.Len(t, next.Data, 2)
		assert.False(t, next.HasMore)
		assert.Equal(t, sent[0], next.Data[1].Message.ID)
		back, err := e.feed.Events(e.ctx, e.mal, "", messaging.ListOptions{Limit: 2, EndingBefore: next.Data[1].ID})
		require.NoError(t, err)
		assert.Equal(t, []string{sent[2], sent[1]}, []string{back.Data[0].Message.ID, back.Data[1].Message.ID}, "the events just newer, still newest first")
		assert.True(t, back.HasMore)

		all, err := e.feed.Events(e.ctx, e.bob, "", messaging.ListOptions{Limit: 100})
		require.NoError(t, err)
		assert.Equal(t, []messaging.EventType{messaging.EventConversationRead, messaging.EventMessageCreated}, types(all.Data[:2]),
			"bob sees his read; not alice's unfiled upload")
		mine, err := e.feed.Events(e.ctx, e.alice, "", messaging.ListOptions{Limit: 1})
		require.NoError(t, err)
		assert.Equal(t, messaging.EventAttachmentCreated, mine.Data[0].Type, "alice sees her unfiled upload")

		_, err = e.feed.Events(e.ctx, e.mal, "", messaging.ListOptions{StartingAfter: all.Data[0].ID})
		assert.Equal(t, messaging.ErrInvalid, messaging.KindOf(err), "a cursor mallory may not see is not in her list")
		priv, err := e.feed.Events(e.ctx, e.mal, "private", messaging.ListOptions{})
		require.NoError(t, err)
		assert.Empty(t, priv.Data)
	})
}

// TestSubscribeArguments checks the errors of Subscribe.
func TestSubscribeArguments(t *testing.T) {
	e := newEnv(t, memstore.New().Driver(), nil)
	for _, tc := range []struct {
		o     events.SubscribeOptions
		param string
	}{
		{events.SubscribeOptions{ConversationID: "no spaces"}, "conversation_id"},
		{events.SubscribeOptions{After: "msg_01jz8k3x4y5z6a7b8c9d0e1f2g"}, "last_event_id"},
		{events.SubscribeOptions{After: "evt_nope"}, "last_event_id"},
	} {
		_, err := e.feed.Subscribe(e.ctx, e.bob, tc.o)
		var me *messaging.Error
		require.ErrorAs(t, err, &me)
		assert.Equal(t, messaging.ErrInvalid, me.Kind)
		assert.Equal(t, tc.param, me.Param)
	}
	// A well-formed id that was never stored is lost.
	s := e.subscribe(e.bob, events.SubscribeOptions{After: "evt_01jz8k3x4y5z6a7b8c9d0e1f2g"})
	assert.Equal(t, messaging.EventsLost, next(t, s).Type)
}

// TestFeedCloseEndsSubscriptions closes a Feed under a waiting reader.
func TestFeedCloseEndsSubscriptions(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storetest.Store) {
		e := newEnv(t, store, nil)
		s := e.subscribe(e.bob, events.SubscribeOptions{})
		errc := make(chan error, 1)
		go func() {
			_, err := s.Next(context.Background())
			errc <- err
		}()
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, e.feed.Close())
		select {
		case err := <-errc:
			assert.ErrorIs(t, err, events.ErrClosed)
		case <-time.After(5 * time.Second):
			t.Fatal("Next did not return after Close")
		}
		_, err := e.feed.Subscribe(e.ctx, e.bob, events.SubscribeOptions{})
		assert.ErrorIs(t, err, events.ErrClosed)
		// Writes go on.
		e.send(e.alice, "general", "after close")
	})
}

// TestTypingAfterCloseStartsNothing: a typing indicator after Close is
// offered to no stream of the closed Feed, so nothing of the Feed runs
// after Close has returned: here, the Policy asked again in the
// background for a stream's expired "no" (which would be a goroutine
// the Feed started after its Close waited for them all).
func TestTypingAfterCloseStartsNothing(t *testing.T) {
	pol := &countingPolicy{privatePolicy: &privatePolicy{}}
	e := newEnvPolicy(t, memstore.New().Driver(), pol, &events.Options{PolicyTTL: time.Minute})
	pol.malloryID = e.mal.ID
	s := e.subscribe(e.mal, events.SubscribeOptions{ConversationID: "private-x"})
	_, err := e.msgs.Typing(e.ctx, e.alice, "private-x")
	require.NoError(t, err)
	none(t, s, 50*time.Millisecond) // the reader asks: no
	require.EqualValues(t, 1, pol.calls.Load())
	e.clock.add(2 * time.Minute) // the "no" has expired

	require.NoError(t, e.feed.Close())
	_, err = e.msgs.Typing(e.ctx, e.alice, "private-x")
	require.NoError(t, err)
	assert.Never(t, func() bool { return pol.calls.Load() > 1 }, 200*time.Millisecond, time.Millisecond,
		"the closed Feed asked the Policy")
	_, err = s.Next(e.ctx)
	assert.ErrorIs(t, err, events.ErrClosed)
}

// TestTypingDuringCloseStartsNothing types while the Feed closes, with
// an expired "no" to ask the Policy again for: run with -race, a
// goroutine started while Close waits for the Feed's is a data race
// (and a panic of the WaitGroup).
func TestTypingDuringCloseStartsNothing(t *testing.T) {
	for range 50 {
		pol := &countingPolicy{privatePolicy: &privatePolicy{}}
		e := newEnvPolicy(t, memstore.New().Driver(), pol, &events.Options{PolicyTTL: time.Minute})
		pol.malloryID = e.mal.ID
		s := e.subscribe(e.mal, events.SubscribeOptions{ConversationID: "private-x"})
		_, err := e.msgs.Typing(e.ctx, e.alice, "private-x")
		require.NoError(t, err)
		none(t, s, 5*time.Millisecond) // the reader asks: no
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 50 {
				e.clock.add(2 * time.Minute) // the "no" has expired
				_, _ = e.msgs.Typing(e.ctx, e.alice, "private-x")
			}
		}()
		require.NoError(t, e.feed.Close())
		<-done
	}
}

// countingStore counts the outbox reads of a Feed, and remembers the Seq
// of the last event LastEvent returned.
type countingStore struct {
	storetest.Store
	reads atomic.Int64
	last  atomic.Int64
	lasts atomic.Int64 // calls of LastEvent
}

func (s *countingStore) ReadEvents(ctx context.Context, q driver.EventQuery) ([]messaging.Event, error) {
	s.reads.Add(1)
	return s.Store.ReadEvents(ctx, q)
}

func (s *countingStore) LastEvent(ctx context.Context) (messaging.Event, error) {
	s.lasts.Add(1)
	e, err := s.Store.LastEvent(ctx)
	if err == nil {
		s.last.Store(e.Seq)
	}
	return e, err
}

// TestIdleFeedReadsNoEvents: a Feed that nothing takes events from (no
// subscription, no handler) reads no events, only the newest's position;
// a subscription that starts then gets the events from then on, none
// from before; and once one is open the Feed reads and offers every event.
func TestIdleFeedReadsNoEvents(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storetest.Store) {
		counted := &countingStore{Store: store}
		e := newEnv(t, counted, nil)
		for i := range 5 {
			e.send(e.alice, "general", fmt.Sprint("before ", i))
		}
		newest, err := store.LastEvent(e.ctx)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return counted.last.Load() == newest.Seq },
			10*time.Second, 5*time.Millisecond, "the idle Feed moves to the newest event")
		assert.Zero(t, counted.reads.Load(), "an idle Feed reads no events")

		sub := e.subscribe(e.bob, events.SubscribeOptions{})
		for i := range 3 {
			sent := e.send(e.alice, "general", fmt.Sprint("after ", i))
			got := next(t, sub)
			assert.Equal(t, sent.ID, got.Message.ID, "live from the subscription on, in order")
		}
		none(t, sub, 100*time.Millisecond)
		assert.NotZero(t, counted.reads.Load(), "with a subscription the Feed reads the events")
	})
}

// TestIdleFeedMovesLessOftenThanWrites: an idle Feed moves its cursor (and
// on PostgreSQL and MySQL numbers the events) at most every 250 ms, not at
// every write; a subscription that starts in between still starts at the
// newest event.
func TestIdleFeedMovesLessOftenThanWrites(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storetest.Store) {
		counted := &countingStore{Store: store}
		e := newEnv(t, counted, nil)
		e.send(e.alice, "general", "first")
		newest, err := store.LastEvent(e.ctx)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return counted.last.Load() == newest.Seq },
			10*time.Second, time.Millisecond, "the idle Feed moves to the newest event")
		before := counted.lasts.Load()
		start := time.Now()
		const writes = 30
		for i := range writes {
			e.send(e.alice, "general", fmt.Sprint("burst ", i))
			time.Sleep(5 * time.Millisecond) // each write wakes the Feed
		}
		took := time.Since(start)
		moves := counted.lasts.Load() - before
		assert.LessOrEqual(t, moves, int64(took/(250*time.Millisecond))+2,
			"%d writes in %v: the idle Feed moved %d times", writes, took, moves)

		sub := e.subscribe(e.bob, events.SubscribeOptions{})
		sent := e.send(e.alice, "general", "after")
		assert.Equal(t, sent.ID, next(t, sub).Message.ID, "nothing from before the subscription")
	})
}

// blockingStore holds LastEvent, once armed, after it read an event newer
// than floor: the idle Feed's skip is then between its read and its lock.
type blockingStore struct {
	storetest.Store
	floor   atomic.Int64
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (s *blockingStore) LastEvent(ctx context.Context) (messaging.Event, error) {
	e, err := s.Store.LastEvent(ctx)
	if err == nil && e.Seq > s.floor.Load() && s.armed.CompareAndSwap(true, false) {
		s.entered <- struct{}{}
		<-s.release
	}
	return e, err
}

// TestResumeDuringIdleSkip: a subscription resuming after an event
// registers while the idle Feed's skip is reading LastEvent, which has
// seen a newer event; that event still reaches it (skip looks again
// whether the Feed is idle before it moves the cursor).
func TestResumeDuringIdleSkip(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storetest.Store) {
		bs := &blockingStore{Store: store, entered: make(chan struct{}), release: make(chan struct{})}
		e := newEnv(t, bs, nil)
		e.send(e.alice, "general", "m0")
		ev0, err := store.LastEvent(e.ctx)
		require.NoError(t, err)
		bs.floor.Store(ev0.Seq)
		bs.armed.Store(true)
		m1 := e.send(e.alice, "general", "m1")
		select {
		case <-bs.entered:
		case <-time.After(10 * time.Second):
			t.Fatal("skip never read LastEvent")
		}
		sub := e.subscribe(e.bob, events.SubscribeOptions{After: ev0.ID})
		got := make(chan messaging.Event, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			ev, _ := sub.Next(ctx)
			got <- ev
		}()
		time.Sleep(200 * time.Millisecond) // the subscription registers (catchUp); if it has not yet, the test passes either way
		close(bs.release)
		ev := <-got
		require.NotNil(t, ev.Message, "the event after the resume point was lost")
		require.Equal(t, m1.ID, ev.Message.ID)
	})
}
