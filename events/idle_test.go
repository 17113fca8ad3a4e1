package events_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/storetest"
)

type holdKey struct{}

// holdingStore holds LastEvent for a ctx carrying holdKey until release.
type holdingStore struct {
	storetest.Store
	entered chan struct{}
	release chan struct{}
	last    atomic.Int64
}

func (s *holdingStore) LastEvent(ctx context.Context) (messaging.Event, error) {
	if ctx.Value(holdKey{}) != nil {
		s.entered <- struct{}{}
		<-s.release
	}
	e, err := s.Store.LastEvent(ctx)
	if err == nil {
		s.last.Store(e.Seq)
	}
	return e, err
}

// TestConcurrentLiveSubscriptionsOfAnIdleFeed: two live subscriptions
// start while an idle Feed is behind. The second is held while it moves
// the cursor; the first registers, and an event is written: the first
// gets it (the cursor is moved only while the Feed is idle). (From a
// review of the idle Feed, as its test.)
func TestConcurrentLiveSubscriptionsOfAnIdleFeed(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storetest.Store) {
		hs := &holdingStore{Store: store, entered: make(chan struct{}), release: make(chan struct{})}
		var gateClosed atomic.Bool
		gateOpen := make(chan struct{})
		gate := func(ctx context.Context) error {
			if gateClosed.Load() {
				select {
				case <-gateOpen:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		}
		e := newEnv(t, hs, &events.Options{PollInterval: time.Minute}, gate)
		e.send(e.alice, "general", "m0")
		m0, err := store.LastEvent(e.ctx)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return hs.last.Load() == m0.Seq }, 5*time.Second, time.Millisecond)
		e.send(e.alice, "general", "m1") // within 250 ms of the skip: throttled, behind
		time.Sleep(30 * time.Millisecond)

		// S2 starts first and is held in current()'s LastEvent.
		s2done := make(chan *events.Subscription, 1)
		go func() {
			s, err := e.feed.Subscribe(context.WithValue(e.ctx, holdKey{}, 1), e.bob, events.SubscribeOptions{})
			if err != nil {
				t.Error(err)
			}
			s2done <- s
		}()
		<-hs.entered

		s1 := e.subscribe(e.bob, events.SubscribeOptions{}) // registers: the Feed is no longer idle
		gateClosed.Store(true)                              // the next delivery waits
		m2 := e.send(e.alice, "general", "m2")              // written after s1 started
		close(hs.release)                                   // s2's current moves the cursor past m2
		s2 := <-s2done
		if s2 != nil {
			t.Cleanup(s2.Close)
		}
		close(gateOpen)

		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		ev, err := s1.Next(ctx)
		require.NoError(t, err, "s1, live before m2 was written, never gets m2")
		require.Equal(t, m2.ID, ev.Message.ID)
	})
}

// TestResumeOnAnIdleFeedCatchesUpAtOnce: an idle Feed lets a write pass
// without moving its cursor (within idleSkipEvery of its last move); a
// subscription that then resumes after the cursor goes live there, and
// gets the write at once, not at the next poll.
func TestResumeOnAnIdleFeedCatchesUpAtOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, store storetest.Store) {
		hs := &holdingStore{Store: store}
		e := newEnv(t, hs, &events.Options{PollInterval: time.Hour})
		e.send(e.alice, "general", "m0")
		m0, err := store.LastEvent(e.ctx)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return hs.last.Load() == m0.Seq }, 5*time.Second, time.Millisecond, "the idle Feed moves its cursor")
		m1 := e.send(e.alice, "general", "m1") // within 250 ms of the move: the cursor stays
		time.Sleep(30 * time.Millisecond)      // for the dispatcher's round

		s := e.subscribe(e.bob, events.SubscribeOptions{After: m0.ID})
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		ev, err := s.Next(ctx)
		require.NoError(t, err, "the resumed subscription waits for the next poll")
		require.Equal(t, m1.ID, ev.Message.ID)
	})
}
