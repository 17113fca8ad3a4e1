package events_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/eventstest"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

// privatePolicy hides the conversations "private…" from mallory.
type privatePolicy struct{ malloryID string }

func (p *privatePolicy) CanView(_ context.Context, contactID, conv string) (bool, error) {
	return contactID != p.malloryID || !strings.HasPrefix(conv, "private"), nil
}

func (p *privatePolicy) Scope(_ context.Context, contactID string) (messaging.Scope, error) {
	if contactID != p.malloryID {
		return messaging.Scope{All: true}, nil
	}
	return messaging.Scope{ConversationIDs: []string{"general"}}, nil
}

var quiet = slog.New(slog.DiscardHandler)

// env is the services and a Feed over one store, with three callers.
type env struct {
	t     testing.TB
	ctx   context.Context
	store storetest.Store
	msgs  *messaging.Service
	files *attachments.Service
	feed  *events.Feed
	alice messaging.Contact
	bob   messaging.Contact
	mal   messaging.Contact // mallory, who may not see "private…"
	clock *fakeClock        // of the services and the Feeds
	pol   *privatePolicy
	blobs attachments.BlobStore
	// policy, when set, is the services' Policy instead of pol.
	policy messaging.Policy
}

// fakeClock is a clock that runs with time.Now, moved forward by add.
type fakeClock struct {
	mu   sync.Mutex
	skew time.Duration
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.skew)
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.skew += d
	c.mu.Unlock()
}

// newEnv builds the services and their Feed over store; opts may be nil,
// and gate, when given, holds the Feed's delivery (see newFeed).
func newEnv(t testing.TB, store storetest.Store, opts *events.Options, gate ...func(context.Context) error) *env {
	t.Helper()
	return newEnvPolicy(t, store, nil, opts, gate...)
}

// newEnvPolicy is newEnv under policy (the env's privatePolicy when nil).
func newEnvPolicy(t testing.TB, store storetest.Store, policy messaging.Policy, opts *events.Options, gate ...func(context.Context) error) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), store: store, clock: &fakeClock{}, pol: &privatePolicy{}, blobs: memstore.NewBlobStore(), policy: policy}
	e.feed = e.newFeed(opts, gate...)
	var err error
	for _, u := range []struct {
		c    *messaging.Contact
		name string
	}{{&e.alice, "alice"}, {&e.bob, "bob"}, {&e.mal, "mallory"}} {
		*u.c, err = e.msgs.SaveContact(e.ctx, messaging.Contact{Username: u.name})
		require.NoError(t, err)
	}
	e.pol.malloryID = e.mal.ID
	return e
}

// newFeed starts the services over the env's store anew, as a restart
// does, and returns their Feed, whose delivery waits for gate when not nil
// (eventstest.WithGate); the services and the Feed are closed when the
// test ends.
func (e *env) newFeed(opts *events.Options, gate ...func(context.Context) error) *events.Feed {
	e.t.Helper()
	var o events.Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = quiet
	}
	if o.Now == nil {
		o.Now = e.clock.now
	}
	ctx := e.ctx
	if len(gate) > 0 {
		ctx = eventstest.WithGate(ctx, gate[0])
	}
	var policy messaging.Policy = e.pol
	if e.policy != nil {
		policy = e.policy
	}
	e.msgs = svctest.NewContext(e.t, ctx, storetest.Storage(e.store), e.blobs, &messaging.Options{Policy: policy, Logger: quiet, Now: e.clock.now,
		Files: &attachments.Options{Logger: quiet, Now: e.clock.now}, Events: &o})
	e.files = e.msgs.Files()
	return e.msgs.Events()
}

// eachBackend runs f on memstore, SQLite, and PostgreSQL and MySQL when
// their DSNs are set.
func eachBackend(t *testing.T, f func(t *testing.T, store storetest.Store)) {
	for _, b := range backendtest.All(t) {
		t.Run(b.Name, func(t *testing.T) { f(t, b.New(t)) })
	}
}

// subscribe starts a subscription, closed when the test ends.
func (e *env) subscribe(who messaging.Contact, o events.SubscribeOptions) *events.Subscription {
	e.t.Helper()
	s, err := e.feed.Subscribe(e.ctx, who, o)
	require.NoError(e.t, err)
	e.t.Cleanup(s.Close)
	return s
}

// next returns the subscription's next event, failing after 10 s.
func next(t testing.TB, s *events.Subscription) messaging.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev, err := s.Next(ctx)
	require.NoError(t, err, "waiting for an event")
	return ev
}

// none checks that the subscription has no event within d.
func none(t testing.TB, s *events.Subscription, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	ev, err := s.Next(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "unexpected event %s %s", ev.Type, ev.ID)
}

// passes checks that the subscription returns no event up to seq: it
// reads until it has considered the event seq (passed it over), unlike
// none, which cannot tell an event passed over from one not yet read.
func passes(t testing.TB, s *events.Subscription, seq int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for events.Floor(s) < seq {
		require.True(t, time.Now().Before(deadline), "the subscription did not reach event %d", seq)
		none(t, s, 10*time.Millisecond)
	}
}

// take returns the subscription's next n events.
func take(t testing.TB, s *events.Subscription, n int) []messaging.Event {
	t.Helper()
	out := make([]messaging.Event, n)
	for i := range out {
		out[i] = next(t, s)
	}
	return out
}

func types(evs []messaging.Event) []messaging.EventType {
	out := make([]messaging.EventType, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func (e *env) send(who messaging.Contact, conv, text string, atts ...string) messaging.Message {
	e.t.Helper()
	m, err := e.msgs.Create(e.ctx, who, messaging.NewMessage{ConversationID: conv, Text: text, Attachments: atts})
	require.NoError(e.t, err)
	return m
}

func (e *env) upload(who messaging.Contact, conv, name string) messaging.Attachment {
	e.t.Helper()
	a, err := e.files.Upload(e.ctx, who, attachments.Upload{Filename: name, ConversationID: conv, Body: strings.NewReader("bytes of " + name)})
	require.NoError(e.t, err)
	return a
}
