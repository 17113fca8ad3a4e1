package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gocloud.dev/pubsub/mempubsub"

	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/sqlstore"
	"github.com/parleychat/parley/storage/storetest"
)

// sharedStores returns, per backend, two stores over the same data, as
// two instances of a deployment open them: one memstore twice, or two
// connection pools of one SQL database.
func sharedStores(t *testing.T) map[string]func(t *testing.T) (storetest.Store, storetest.Store) {
	out := map[string]func(t *testing.T) (storetest.Store, storetest.Store){
		"memstore": func(*testing.T) (storetest.Store, storetest.Store) {
			s := memstore.New()
			return s.Driver(), s.Driver()
		},
	}
	for _, engine := range backendtest.SQL(t) {
		out[engine.Name] = func(t *testing.T) (storetest.Store, storetest.Store) {
			dsn := engine.DSN(t)
			open := func() storetest.Store {
				s, err := sqlstore.Open(t.Context(), dsn, &sqlstore.Options{Logger: quiet})
				require.NoError(t, err)
				t.Cleanup(func() { _ = s.Close() })
				require.NoError(t, s.Migrate(t.Context()))
				return s.Driver()
			}
			return open(), open()
		}
	}
	return out
}

// joined returns two instances (services and a Feed each) over stores,
// joined by an in-memory topic, under policy (the env's privatePolicy when
// nil) and opts, whose Topic and Subscription it sets.
func joined(t *testing.T, stores func(*testing.T) (storetest.Store, storetest.Store), policy messaging.Policy, opts events.Options) (a, b *env) {
	t.Helper()
	ctx := context.Background()
	topic := mempubsub.NewTopic()
	t.Cleanup(func() { _ = topic.Shutdown(ctx) })
	instance := func(store storetest.Store) *env {
		sub := mempubsub.NewSubscription(topic, time.Minute)
		t.Cleanup(func() { _ = sub.Shutdown(ctx) })
		o := opts
		o.Topic, o.Subscription = topic, sub
		return newEnvPolicy(t, store, policy, &o)
	}
	sa, sb := stores(t)
	return instance(sa), instance(sb)
}

// TestInstancesFanOutThroughPubSub runs two instances (services and a
// Feed each) over one database, joined by an in-memory topic: an event
// written through one reaches a subscriber of the other at once, long
// before either polls.
func TestInstancesFanOutThroughPubSub(t *testing.T) {
	for name, stores := range sharedStores(t) {
		t.Run(name, func(t *testing.T) {
			a, b := joined(t, stores, nil, events.Options{PollInterval: time.Hour})
			onB := b.subscribe(b.bob, events.SubscribeOptions{})
			onA := a.subscribe(a.bob, events.SubscribeOptions{})
			for i := range 5 {
				start := time.Now()
				m := a.send(a.alice, "general", "through A "+string(rune('0'+i)))
				got := next(t, onB)
				assert.Equal(t, m.ID, got.Message.ID, "a message posted through A reaches B's subscriber")
				assert.Less(t, time.Since(start), 5*time.Second, "woken by pub/sub, not by polling (every hour)")
				assert.Equal(t, m.ID, next(t, onA).Message.ID)
			}
			m := b.send(b.alice, "general", "through B")
			assert.Equal(t, m.ID, next(t, onA).Message.ID, "and the other way")
		})
	}
}

// TestMissedWakeUpIsCaughtUpByPolling runs two instances with no topic: B
// learns of A's events by polling the outbox, the source of truth.
func TestMissedWakeUpIsCaughtUpByPolling(t *testing.T) {
	for name, stores := range sharedStores(t) {
		t.Run(name, func(t *testing.T) {
			sa, sb := stores(t)
			a := newEnv(t, sa, &events.Options{PollInterval: time.Hour})
			b := newEnv(t, sb, &events.Options{PollInterval: 50 * time.Millisecond})
			onB := b.subscribe(b.bob, events.SubscribeOptions{})
			m := a.send(a.alice, "general", "no wake-up")
			assert.Equal(t, m.ID, next(t, onB).Message.ID)
		})
	}
}
