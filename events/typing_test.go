package events_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/memstore"
)

// TestTypingAcrossInstances: a caller's typing through one instance
// reaches the streams of the others who may see the conversation on both
// instances, at most once a second per caller and stream, not the
// caller's own; it is never stored (no event row, not replayed on
// resume), and a caller who may not see the conversation cannot type in
// it.
func TestTypingAcrossInstances(t *testing.T) {
	for name, stores := range sharedStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			a, b := joined(t, stores, nil, events.Options{PollInterval: time.Hour})
			b.pol.malloryID = a.mal.ID
			onA := a.subscribe(a.alice, events.SubscribeOptions{})
			onB := b.subscribe(b.alice, events.SubscribeOptions{ConversationID: "general"})
			malOnB := b.subscribe(b.mal, events.SubscribeOptions{})
			own := a.subscribe(a.bob, events.SubscribeOptions{})
			m := a.send(a.alice, "general", "before")
			for _, s := range []*events.Subscription{onA, onB, malOnB, own} {
				require.Equal(t, m.ID, next(t, s).Message.ID)
			}
			last, err := a.store.LastEvent(ctx)
			require.NoError(t, err)

			typed, err := a.msgs.Typing(ctx, a.bob, "general")
			require.NoError(t, err)
			assert.Equal(t, messaging.Typing{ConversationID: "general", Contact: a.bob, ExpiresAt: typed.ExpiresAt}, typed)
			assert.WithinDuration(t, a.clock.now().Add(5*time.Second), typed.ExpiresAt, time.Second)
			for _, s := range []*events.Subscription{onA, onB, malOnB} {
				ev := next(t, s)
				assert.Equal(t, messaging.EventConversationTyping, ev.Type)
				assert.Empty(t, ev.ID)
				assert.Equal(t, "general", ev.ConversationID)
				require.NotNil(t, ev.Typing)
				assert.Equal(t, a.bob.ID, ev.Typing.Contact.ID)
				assert.Equal(t, "bob", ev.Typing.Contact.Username)
				assert.True(t, typed.ExpiresAt.Equal(ev.Typing.ExpiresAt))
			}

			_, err = a.msgs.Typing(ctx, a.bob, "general") // within the second: dropped by every stream
			require.NoError(t, err)
			_, err = b.msgs.Typing(ctx, b.alice, "private-x") // mallory may not see it
			require.NoError(t, err)
			_, err = b.msgs.Typing(ctx, b.mal, "private-x")
			require.ErrorIs(t, err, messaging.ErrNotFound)
			m2 := b.send(b.alice, "general", "after")
			assert.Equal(t, m2.ID, next(t, onA).Message.ID, "bob's second typing within the second is dropped, and alice's own is not echoed")
			assert.Equal(t, m2.ID, next(t, malOnB).Message.ID, "alice's typing in private-x is not mallory's")
			// (Typing and the wake-up of the send may come through the
			// pub/sub in either order.)
			var got []string
			for _, ev := range take(t, own, 2) {
				got = append(got, string(ev.Type)+" "+ev.ConversationID)
			}
			assert.ElementsMatch(t, []string{"conversation.typing private-x", "message.created general"}, got,
				"bob's own typing is not echoed to him; alice's reaches him")

			evs, err := a.store.ReadEvents(ctx, driver.EventQuery{Scope: driver.Scope{All: true}, Unfiled: true, After: last.Seq, Limit: 100})
			require.NoError(t, err)
			require.Len(t, evs, 1, "typing is never stored")
			assert.Equal(t, messaging.EventMessageCreated, evs[0].Type)

			r2 := a.subscribe(a.alice, events.SubscribeOptions{After: last.ID})
			assert.Equal(t, m2.ID, next(t, r2).Message.ID, "a resumed stream does not replay typing")
		})
	}
}

// TestTypingBurstDoesNotCutStreams: a caller typing many times within a
// second is one indicator in the others' queues, so that a stream whose
// reader is busy meanwhile keeps room for the events that follow, and is
// not cut off.
func TestTypingBurstDoesNotCutStreams(t *testing.T) {
	e := newEnv(t, memstore.New().Driver(), &events.Options{Buffer: 4})
	var cut atomic.Bool
	s := e.subscribe(e.bob, events.SubscribeOptions{ConversationID: "general", OnTooSlow: func() { cut.Store(true) }})
	for range 20 {
		_, err := e.msgs.Typing(e.ctx, e.alice, "general")
		require.NoError(t, err)
	}
	m := e.send(e.alice, "general", "after the burst")
	require.Eventually(t, func() bool { return cut.Load() || events.Queued(s) == 2 }, 10*time.Second, time.Millisecond)
	require.False(t, cut.Load(), "the burst cut the stream off")
	assert.Equal(t, messaging.EventConversationTyping, next(t, s).Type)
	assert.Equal(t, m.ID, next(t, s).Message.ID)
}

// TestTypingTakesAtMostHalfTheQueue: the indicators of many callers fill
// at most half of a stream's queue, the rest is left for the events.
func TestTypingTakesAtMostHalfTheQueue(t *testing.T) {
	e := newEnv(t, memstore.New().Driver(), &events.Options{Buffer: 4})
	var cut atomic.Bool
	s := e.subscribe(e.bob, events.SubscribeOptions{ConversationID: "general", OnTooSlow: func() { cut.Store(true) }})
	for _, name := range []string{"carol", "dave", "erin"} {
		c, err := e.msgs.SaveContact(e.ctx, messaging.Contact{Username: name})
		require.NoError(t, err)
		_, err = e.msgs.Typing(e.ctx, c, "general")
		require.NoError(t, err)
	}
	e.send(e.alice, "general", "one")
	e.send(e.alice, "general", "two")
	require.Eventually(t, func() bool { return cut.Load() || events.Queued(s) == 4 }, 10*time.Second, time.Millisecond)
	require.False(t, cut.Load(), "the indicators cut the stream off")
	assert.Equal(t, []messaging.EventType{messaging.EventConversationTyping, messaging.EventConversationTyping,
		messaging.EventMessageCreated, messaging.EventMessageCreated}, types(take(t, s, 4)))
}
