package events

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"gocloud.dev/pubsub"

	"github.com/parleychat/parley/internal/domain"
	"github.com/parleychat/parley/internal/eventstest"
	"github.com/parleychat/parley/messaging/driver"
)

// Options configure a Feed. A nil *Options means all defaults.
type Options struct {
	// Retention is how long events are kept, so that subscribers can
	// resume after them; older ones are pruned. Default: 24 hours.
	Retention time.Duration
	// PruneInterval is how often the Feed prunes. Default: Retention/24,
	// between a second and an hour.
	PruneInterval time.Duration
	// PollInterval is how often the Feed reads the outbox when nothing
	// woke it: the longest delay of an event written through another
	// instance whose wake-up did not arrive (no Topic, or a message lost).
	// Default: 1 second.
	PollInterval time.Duration
	// Buffer is the most events waiting for a subscription's reader; a
	// subscription that falls further behind ends with ErrTooSlow, so that
	// a slow reader never holds up the Feed, writers or other readers.
	// Typing indicators take at most half of it; more are dropped.
	// Default: 256.
	Buffer int
	// PolicyTTL is how long the Feed relies on the Policy's answer for a
	// caller and a conversation before it asks again: a host Policy's
	// changes reach open streams within that time, and so do membership
	// changes made through another instance whose wake-up (Topic and
	// Subscription) did not arrive. Memberships changed through the
	// messaging Service (AddMember, RemoveMember) take effect at once in
	// its instance, and in the others when its wake-up arrives. A "yes"
	// that a stream relies on is asked again in the background once less
	// than half of PolicyTTL is left, so that a stream of a conversation
	// with traffic does not wait for the Policy. Default: 1 second.
	PolicyTTL time.Duration

	// Topic, when set, is sent a wake-up (not the event) after each write
	// through this process that recorded events, so that the Feeds of
	// other instances over the same database read the outbox at once.
	// Open it with pubsub.OpenTopic and a driver the host imports
	// (gocloud.dev/pubsub/natspubsub for "nats://subject",
	// gocloud.dev/pubsub/mempubsub for "mem://topic"); shut it down after
	// Close. Default: none, and other instances learn of this one's events
	// by polling.
	Topic *pubsub.Topic
	// Subscription, when set, receives the wake-ups of the other
	// instances. Each instance needs its own subscription to every message
	// of Topic (for NATS, a subject without a queue group). Shut it down
	// after Close. Default: none.
	Subscription *pubsub.Subscription

	// HandlerAttempts is how many times a handler is called with one event
	// before the event is skipped for it (and logged). Default: 8.
	HandlerAttempts int
	// HandlerBackoff is the wait after a handler's first failure, doubled
	// after each further one, at most a minute. Default: 100 ms.
	HandlerBackoff time.Duration
	// HandlerLease is how long this instance keeps the claim of a
	// handler's position without renewing it; another instance takes over
	// a handler whose claim has expired. Default: 30 seconds.
	HandlerLease time.Duration

	// Now returns the current time. Default: time.Now.
	Now func() time.Time
	// Logger receives failures that no caller sees: of reads, pruning,
	// pub/sub and handlers. Default: slog.Default().
	Logger *slog.Logger
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Retention <= 0 {
		c.Retention = 24 * time.Hour
	}
	if c.PruneInterval <= 0 {
		c.PruneInterval = min(max(c.Retention/24, time.Second), time.Hour)
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.Buffer <= 0 {
		c.Buffer = 256
	}
	if c.PolicyTTL <= 0 {
		c.PolicyTTL = time.Second
	}
	if c.HandlerAttempts <= 0 {
		c.HandlerAttempts = 8
	}
	if c.HandlerBackoff <= 0 {
		c.HandlerBackoff = 100 * time.Millisecond
	}
	if c.HandlerLease <= 0 {
		c.HandlerLease = 30 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Errors of subscriptions. They are not *messaging.Error: they end a
// subscription, and are no fault of the request that made it.
var (
	// ErrTooSlow ends a subscription whose reader fell more than
	// Options.Buffer events behind. Subscribe again after the last event
	// read: nothing is lost.
	ErrTooSlow = errors.New("events: subscription too slow: resume after the last event read")
	// ErrClosed ends the subscriptions of a Feed that was closed.
	ErrClosed = errors.New("events: feed closed")
)

// readBatch is the most events one read of the outbox returns.
const readBatch = 256

// Feed delivers the events of the outbox, after their commit, to
// subscriptions (Subscribe) and to the host's handlers (Handle), lists them
// (List), prunes them, and wakes the Feeds of other instances. Build one
// per messaging Service, and Close it at shutdown. It is safe for
// concurrent use.
type Feed struct {
	store    driver.EventStore
	m        domain.Messaging                // the messaging Service's rules
	gate     func(ctx context.Context) error // eventstest.Gate of New's ctx
	opts     Options
	instance string // this Feed's id, in its pub/sub wake-ups

	ctx     context.Context // canceled by Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	wake    chan struct{} // the dispatcher's
	publish chan struct{} // the publisher's

	mu        sync.Mutex
	cursor    int64                                 // every event up to it has been offered to subscriptions
	viewers   map[string]*viewer                    // callers with subscriptions, by id
	narrow    map[string]map[*Subscription]struct{} // live subscriptions narrowed to a conversation
	wide      map[*viewer]struct{}                  // viewers with live subscriptions to all
	wideGen   uint64                                // changes with wide
	audiences map[string]*audience                  // wide viewers admitted, by conversation
	live      int                                   // live subscriptions
	handlers  map[string]*handler
	// changing counts the membership changes under way, by "contact
	// conversation": while one is, no answer of the Policy for them is
	// kept (answer).
	changing map[string]int
	closed   bool
	// typed is when each "conversation contact" typing indicator was
	// last delivered (deliverTyping).
	typed   map[string]time.Time
	skipped time.Time // when an idle Feed last moved its cursor (skip)
	behind  bool      // an idle Feed let writes pass without moving its cursor

	// changed are the memberships changed through this instance that the
	// other instances have not been told of: "contact conversation" each.
	changedMu sync.Mutex
	changed   []string
	typings   []driver.Typing // typing indicators for the other instances

	logMu   sync.Mutex
	lastLog map[string]time.Time // what failed, and when it was last logged
}

// New returns a Feed of the events in store, the outbox of the storage
// that the messaging Service (and the attachments Service built with it)
// write to. It is for messaging.New, which builds the Feed with the
// messaging Service (see messaging.Service.Events) and calls the hooks
// that New returns: Committed after each write that recorded events, to
// wake the Feed, and MemberChanged after each membership change, which
// the Feed tells the other instances of. A Feed delivers the events recorded from now on live;
// subscribers and handlers resume from older ones. New reads the outbox
// once, and fails if it cannot.
func New(ctx context.Context, m domain.Messaging, store driver.EventStore, opts *Options) (*Feed, domain.FeedHooks, error) {
	if store == nil || m.CanSeeEvent == nil {
		return nil, domain.FeedHooks{}, errors.New("events: New needs a driver.EventStore and the messaging Service's rules")
	}
	f := &Feed{
		store:     store,
		m:         m,
		gate:      eventstest.Gate(ctx),
		opts:      opts.withDefaults(),
		instance:  newInstanceID(),
		wake:      make(chan struct{}, 1),
		publish:   make(chan struct{}, 1),
		viewers:   make(map[string]*viewer),
		narrow:    make(map[string]map[*Subscription]struct{}),
		wide:      make(map[*viewer]struct{}),
		audiences: make(map[string]*audience),
		handlers:  make(map[string]*handler),
		changing:  make(map[string]int),
		lastLog:   make(map[string]time.Time),
	}
	last, err := store.LastEvent(ctx)
	switch {
	case err == nil:
		f.cursor = last.Seq
	case !errors.Is(err, driver.ErrNotFound):
		return nil, domain.FeedHooks{}, domain.Wrap("events.New", err)
	}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.wg.Go(f.dispatch)
	f.wg.Go(f.prune)
	if f.opts.Topic != nil {
		f.wg.Go(f.publishWakeUps)
	}
	if f.opts.Subscription != nil {
		f.wg.Go(f.receiveWakeUps)
	}
	return f, domain.FeedHooks{Committed: f.committed, MemberChanged: f.memberChanged, Typing: f.typing}, nil
}

func newInstanceID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Close stops delivery: subscriptions end with ErrClosed, handlers stop
// (each after the call under way), and the Feed no longer reads, prunes or
// wakes anyone. Writes go on recording events, which the Feed of the next
// start (or of another instance) delivers. Close returns when every
// goroutine of the Feed has ended; it does not shut down Options.Topic and
// Subscription.
func (f *Feed) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	// A live subscription's reader waits on its end channel, not also on
	// the Feed's context: one case fewer in every wait for an event. The
	// subscriptions are dropped, so that nothing (a typing indicator) is
	// offered to them after Close, which could start a goroutine (admits)
	// while or after Close waits for them all.
	for _, v := range f.viewers {
		for s := range v.live {
			s.closed.Store(true)
			s.endOnce.Do(func() { close(s.end) })
			f.drop(s)
		}
	}
	f.mu.Unlock()
	f.cancel()
	f.wg.Wait()
	return nil
}

// committed is called by the services after each write that recorded
// events.
func (f *Feed) committed() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
	select {
	case f.publish <- struct{}{}:
	default:
	}
}

// memberChanged is called by the messaging Service before a membership
// change, and what it returns once the change's write has returned. An
// answer of the Policy kept from before the change would let an event
// committed just after it reach a removed member (or pass over an added
// one) until the change was told: so none is kept meanwhile, and each
// event of the conversation is judged by an answer asked after its commit
// (answer). Then the Feed asks the Policy again for that contact and
// conversation, and so do the other instances once told (publishWakeUps).
func (f *Feed) memberChanged(contactID, conversationID string) func(committed bool) {
	key := contactID + " " + conversationID
	f.mu.Lock()
	f.changing[key]++
	f.forgetLocked(contactID, conversationID)
	f.mu.Unlock()
	return func(committed bool) {
		f.mu.Lock()
		if f.changing[key]--; f.changing[key] <= 0 {
			delete(f.changing, key)
		}
		f.forgetLocked(contactID, conversationID)
		f.mu.Unlock()
		if committed {
			f.tellChanged(key)
		}
	}
}

// tellChanged tells the other instances of the membership change key
// ("contact conversation").
func (f *Feed) tellChanged(key string) {
	if f.opts.Topic == nil || f.ctx.Err() != nil {
		return // no one to tell, or closed: nothing sends wake-ups
	}
	f.changedMu.Lock()
	f.changed = append(f.changed, key)
	f.changedMu.Unlock()
	select {
	case f.publish <- struct{}{}:
	default:
	}
}

// typing delivers a typing indicator to the streams of this instance that
// may see it, and sends it to the other instances (publishWakeUps), unless
// the caller typed in the conversation less than a second before.
func (f *Feed) typing(t driver.Typing) {
	if !f.deliverTyping(t) || f.opts.Topic == nil || f.ctx.Err() != nil {
		return // typed again, no one to tell, or closed: nothing sends wake-ups
	}
	f.changedMu.Lock()
	f.typings = append(f.typings, t)
	f.changedMu.Unlock()
	select {
	case f.publish <- struct{}{}:
	default:
	}
}

// deliverTyping offers a typing indicator to the streams of this
// instance, and reports whether it did: one of a caller in a
// conversation less than a second after the last is dropped, so that a
// burst of them takes one place in the streams' queues.
func (f *Feed) deliverTyping(t driver.Typing) bool {
	now := f.opts.Now()
	key := t.ConversationID + " " + t.Contact.ID
	f.mu.Lock()
	defer f.mu.Unlock()
	if last, ok := f.typed[key]; ok && now.Sub(last) < time.Second && !now.Before(last) {
		return false
	}
	if f.typed == nil || len(f.typed) >= maxTyped {
		f.typed = make(map[string]time.Time)
	}
	f.typed[key] = now
	e := &driver.Event{Type: driver.EventConversationTyping, ConversationID: t.ConversationID, Created: now.UTC(), Typing: &t}
	f.route(e, now)
	return true
}

// maxTyped bounds the callers whose last typing the Feed keeps; past it
// they are all dropped.
const maxTyped = 4096

// open waits for the gate of the tests (eventstest.WithGate), if any;
// false means skip this round.
func (f *Feed) open() bool {
	if f.gate == nil {
		return f.ctx.Err() == nil
	}
	return f.gate(f.ctx) == nil && f.ctx.Err() == nil
}

// dispatch reads the outbox when woken or every PollInterval, and offers
// what is new to the subscriptions, in Seq order.
func (f *Feed) dispatch() {
	poll := time.NewTicker(f.opts.PollInterval)
	defer poll.Stop()
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-f.wake:
		case <-poll.C:
		}
		if f.open() {
			f.deliver()
		}
	}
}

// deliver offers every event after the cursor to the subscriptions, and
// wakes the handlers.
func (f *Feed) deliver() {
	for {
		f.mu.Lock()
		after, idle := f.cursor, f.idle()
		// An idle Feed moves its cursor at most every idleSkipEvery: each
		// move numbers the events committed since (on PostgreSQL and
		// MySQL), which costs less in one batch than a write at a time. A
		// subscription that starts meanwhile moves it first (current).
		later := idle && time.Since(f.skipped) < min(f.opts.PollInterval, idleSkipEvery)
		f.behind = f.behind || later
		f.mu.Unlock()
		if later {
			return
		}
		if idle && f.skip(f.ctx) {
			return
		}
		evs, err := f.store.ReadEvents(f.ctx, driver.EventQuery{Scope: driver.Scope{All: true}, Unfiled: true, After: after, Limit: readBatch})
		if err != nil {
			if f.ctx.Err() == nil {
				f.logOnce("read", "events: cannot read the outbox; will retry", err)
			}
			return
		}
		if len(evs) == 0 {
			return
		}
		now := f.opts.Now()
		f.mu.Lock()
		for i := range evs {
			f.route(&evs[i], now)
		}
		f.cursor = evs[len(evs)-1].Seq
		for _, h := range f.handlers {
			h.poke()
		}
		if len(evs) < readBatch {
			f.behind = false // read up to the newest: goLive need not wake
		}
		f.mu.Unlock()
		if len(evs) < readBatch {
			return
		}
	}
}

// idle reports whether nothing takes events from the Feed: no
// subscription and no handler. The caller holds f.mu.
func (f *Feed) idle() bool { return f.live == 0 && len(f.handlers) == 0 }

// skip moves the cursor of an idle Feed to the newest event, reading that
// one event rather than every event since, and reports whether it did: a
// subscription that starts later starts from there, as it would have had
// the events been read. Those that resume read what they missed from the
// outbox themselves (Subscription.catchUp). If a subscription or a handler
// came meanwhile, it reports false, and deliver reads the events as usual.
// If the outbox cannot be read, the cursor stays where it is (and a
// subscription that starts gets the events since).
func (f *Feed) skip(ctx context.Context) bool {
	last, err := f.store.LastEvent(ctx)
	if err != nil && !errors.Is(err, driver.ErrNotFound) {
		if ctx.Err() == nil {
			f.logOnce("read", "events: cannot read the outbox; will retry", err)
		}
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.idle() {
		return false
	}
	if err == nil {
		f.cursor = max(f.cursor, last.Seq)
	}
	f.skipped, f.behind = time.Now(), false
	return true
}

// idleSkipEvery is the least time between two moves of an idle Feed's
// cursor (or PollInterval, when shorter).
const idleSkipEvery = 250 * time.Millisecond

// current moves the cursor of an idle Feed that let writes pass to the
// newest event (skip), so that a subscription that starts now starts
// there.
func (f *Feed) current(ctx context.Context) {
	f.mu.Lock()
	behind := f.behind && f.idle()
	f.mu.Unlock()
	if behind {
		f.skip(ctx)
	}
}

// prune removes the events older than the retention, now and every
// PruneInterval.
func (f *Feed) prune() {
	t := time.NewTicker(f.opts.PruneInterval)
	defer t.Stop()
	for {
		if _, err := f.store.PruneEvents(f.ctx, f.opts.Now().Add(-f.opts.Retention)); err != nil && f.ctx.Err() == nil {
			f.logOnce("prune", "events: cannot prune the outbox; will retry", err)
		}
		select {
		case <-f.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// publishWakeUps sends a wake-up to Topic after writes, one at a time:
// the writes that commit while one is sent share the next. A wake-up
// carries the memberships changed since the last one (metadata
// "members": "contact conversation" lines) and the typing indicators
// (metadata "typing", JSON). A lost one delays the change
// in the other instances by at most Options.PolicyTTL.
func (f *Feed) publishWakeUps() {
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-f.publish:
		}
		md := map[string]string{"instance": f.instance}
		f.changedMu.Lock()
		if len(f.changed) > 0 {
			md["members"] = strings.Join(f.changed, "\n")
			f.changed = nil
		}
		if len(f.typings) > 0 {
			if b, err := json.Marshal(f.typings); err == nil {
				md["typing"] = string(b)
			}
			f.typings = nil
		}
		f.changedMu.Unlock()
		err := f.opts.Topic.Send(f.ctx, &pubsub.Message{Body: []byte(f.instance), Metadata: md})
		if err != nil && f.ctx.Err() == nil {
			f.logOnce("publish", "events: cannot send a wake-up; other instances will poll", err)
		}
	}
}

// receiveWakeUps wakes the dispatcher when another instance has written.
func (f *Feed) receiveWakeUps() {
	backoff := 100 * time.Millisecond
	for {
		m, err := f.opts.Subscription.Receive(f.ctx)
		if err != nil {
			if f.ctx.Err() != nil {
				return
			}
			f.logOnce("receive", "events: cannot receive wake-ups; polling meanwhile", err)
			select {
			case <-f.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 10*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		m.Ack()
		if m.Metadata["instance"] != f.instance {
			for line := range strings.Lines(m.Metadata["members"]) {
				if contact, conv, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " "); ok {
					f.forget(contact, conv)
				}
			}
			if b := m.Metadata["typing"]; b != "" {
				var ts []driver.Typing
				if err := json.Unmarshal([]byte(b), &ts); err != nil {
					f.logOnce("receive", "events: a wake-up's typing indicators cannot be read", err)
				}
				for _, t := range ts {
					f.deliverTyping(t)
				}
			}
			select {
			case f.wake <- struct{}{}:
			default:
			}
		}
	}
}

// logOnce logs a failure of kind what at most once every ten seconds.
func (f *Feed) logOnce(what, msg string, err error) {
	now := time.Now()
	f.logMu.Lock()
	last, ok := f.lastLog[what]
	if !ok || now.Sub(last) >= 10*time.Second {
		f.lastLog[what] = now
		f.logMu.Unlock()
		f.opts.Logger.Warn(msg, "err", err)
		return
	}
	f.logMu.Unlock()
}
