package events

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleychat/parley/internal/check"
	"github.com/parleychat/parley/internal/domain"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging/driver"
)

// SubscribeOptions select the events of a subscription.
type SubscribeOptions struct {
	// ConversationID, when set, narrows the subscription to one
	// conversation.
	ConversationID string
	// After, when set, is the id of the last event the subscriber has:
	// the subscription starts with every later event it may see, in
	// order, then goes on live. When that event is no longer kept (older
	// than Options.Retention), the subscription starts with an event of
	// type driver.EventsLost instead. When "", the subscription starts
	// live, with the events committed from about now on.
	After string
	// OnTooSlow, when set, is called once if the Feed cuts the
	// subscription off because its reader fell behind (Next returns
	// ErrTooSlow from then on, perhaps after some events still queued): a
	// server can then end a write to the client that is stuck, rather
	// than wait for it. It is called by the Feed's dispatcher, and must
	// not block or call the Feed.
	OnTooSlow func()
}

// Subscription is a caller's stream of events: every event the caller may
// see (messaging.Service.CanSeeEvent), once each, in Seq order, which is
// commit order. Read it with Next from one goroutine; Close it (from any
// goroutine) when done.
type Subscription struct {
	feed   *Feed
	caller driver.Contact
	conv   string
	onCut  func()
	viewer *viewer // the caller's, set once by join

	// Read by the dispatcher under feed.mu.
	ch      chan *driver.Event // live events, bounded
	cutOnce sync.Once

	// end is closed when the reader fell behind, or by Close or the
	// Feed's Close (then closed is set first): one channel, so that the
	// reader's wait selects on fewer cases for each event.
	end       chan struct{}
	endOnce   sync.Once
	closed    atomic.Bool
	closeOnce sync.Once

	// The reader's own state.
	floor    int64                // every event up to it has been considered
	mark     int64                // a kept event's seq, the floor, which the next read checks is still kept (0: none)
	pending  []driver.Event       // read from the outbox, not yet returned
	live     bool                 // registered with the dispatcher (under feed.mu)
	lost     *driver.Event        // to return first
	lostAt   int64                // the newest seq when lost was made: its id is the caller's newest up to it
	typed    map[string]time.Time // when each caller's typing was last returned
	ended    error                // ErrTooSlow or ErrClosed, once the subscription is over
	seen     *answer              // the Policy's answer for seenConv (visible)
	seenConv string
	recv     *driver.Event // taken off ch, not yet considered
	ready    *driver.Event // the event Next returns next
}

// Subscribe starts a subscription of caller's events. Errors: ErrInvalid
// for a malformed conversation id (Param "conversation_id") or event id
// (Param "last_event_id"), ErrUnavailable when the outbox cannot be read.
// A conversation the caller may not see gives a subscription that gets
// none of its events (until the Policy lets the caller see it).
func (f *Feed) Subscribe(ctx context.Context, caller driver.Contact, o SubscribeOptions) (*Subscription, error) {
	s, err := f.subscribe(ctx, caller, o)
	return s, domain.Wrap("events.Subscribe", err)
}

func (f *Feed) subscribe(ctx context.Context, caller driver.Contact, o SubscribeOptions) (*Subscription, error) {
	if o.ConversationID != "" {
		if err := check.ConversationID("conversation_id", o.ConversationID); err != nil {
			return nil, err
		}
	}
	if o.After != "" && !ids.Valid(ids.Event, o.After) {
		return nil, check.BadParam("last_event_id", "last_event_id is not an event id")
	}
	s := &Subscription{
		feed:   f,
		caller: caller,
		conv:   o.ConversationID,
		onCut:  o.OnTooSlow,
		ch:     make(chan *driver.Event, f.opts.Buffer),
		end:    make(chan struct{}),
	}
	if o.After == "" {
		f.current(ctx)
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.closed {
			return nil, ErrClosed
		}
		s.floor = f.cursor
		f.join(s)
		f.goLive(s)
		return s, nil
	}
	e, err := f.store.GetEvent(ctx, o.After)
	switch {
	case err == nil:
		s.floor, s.mark = e.Seq, e.Seq
	case errors.Is(err, driver.ErrNotFound):
		// Pruned (or never stored): say so, and go on from the newest. The
		// id it carries, to resume after, is that of the caller's own
		// newest event (none when it has none): the installation's newest
		// would tell when others' conversations last changed.
		if err := s.lose(ctx, 0); err != nil {
			return nil, err
		}
	default:
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, ErrClosed
	}
	f.join(s)
	return s, nil
}

// offer queues e for the subscription, or cuts it off when its queue is
// full; the caller holds feed.mu. It never blocks.
func (s *Subscription) offer(e *driver.Event) {
	if s.conv != "" && e.ConversationID != s.conv {
		return
	}
	if e.Typing != nil {
		s.offerTyping(e)
		return
	}
	select {
	case s.ch <- e:
	default:
		s.cutOnce.Do(func() {
			s.endOnce.Do(func() { close(s.end) })
			if s.onCut != nil {
				s.onCut()
			}
		})
		s.feed.drop(s)
	}
}

// offerTyping queues a typing indicator of another caller, or drops it
// when the queue is half full: typing never takes the room of the events
// that follow, nor cuts a stream off. The caller holds feed.mu.
func (s *Subscription) offerTyping(e *driver.Event) {
	if e.Typing.Contact.ID == s.caller.ID || len(s.ch) >= cap(s.ch)/2 {
		return
	}
	select {
	case s.ch <- e:
	default:
	}
}

// typedAgain reports whether the reader returned a typing indicator of
// the same caller less than a second before e's.
func (s *Subscription) typedAgain(e *driver.Event) bool {
	who := e.Typing.Contact.ID
	if last, ok := s.typed[who]; ok && e.Created.Sub(last) < time.Second {
		return true
	}
	if s.typed == nil || len(s.typed) >= 256 {
		s.typed = make(map[string]time.Time)
	}
	s.typed[who] = e.Created
	return false
}

// Next returns the next event the caller may see, waiting for one until
// ctx is done. The objects an event carries are shared with other
// subscriptions: read them, do not change them. Errors: ErrTooSlow when
// the reader fell behind, ErrClosed when the Feed was closed, ctx's error,
// ErrUnavailable when the outbox or the Policy cannot be read (Next may be
// called again). After ErrTooSlow or ErrClosed the subscription is over:
// subscribe again with After set to the last event's ID.
func (s *Subscription) Next(ctx context.Context) (driver.Event, error) {
	if err := s.await(ctx); err != nil {
		return driver.Event{}, wrapRead("events.Next", ctx, err)
	}
	e := s.ready
	s.ready = nil
	return *e, nil
}

// Wait waits until Next has an event to return at once, or until ctx is
// done, and returns the error that Next would return instead of an event
// (nil when one is ready). A server that holds many streams waits with
// Wait and then calls Next: a goroutine parked in a select keeps a stack
// as deep as where it parked (the runtime halves a stack only when under a
// quarter of it is in use), and Wait parks in two small frames, where Next
// would park below the frames that take the event and write it.
func (s *Subscription) Wait(ctx context.Context) error {
	return wrapRead("events.Wait", ctx, s.await(ctx))
}

// wrapRead wraps an error of the outbox or the Policy; those that end the
// subscription, and ctx's, are returned as they are.
func wrapRead(op string, ctx context.Context, err error) error {
	if err != nil && !errors.Is(err, ErrTooSlow) && !errors.Is(err, ErrClosed) && ctx.Err() == nil {
		return domain.Wrap(op, err)
	}
	return err
}

// await waits until an event is ready (s.ready) or the subscription has
// ended (its error).
func (s *Subscription) await(ctx context.Context) error {
	for {
		if ok, err := s.prepare(ctx); ok || err != nil {
			return err
		}
		select {
		case e := <-s.ch:
			s.recv = e
		case <-s.end:
			s.ended = ErrTooSlow
			if s.closed.Load() {
				s.ended = ErrClosed
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// prepare sets s.ready to the next event to return, from what the reader
// has without waiting for the dispatcher, and reports whether it did or
// the subscription has ended (then with its error); false means: wait.
func (s *Subscription) prepare(ctx context.Context) (bool, error) {
	if s.closed.Load() {
		s.ended = ErrClosed
	}
	if s.ended != nil {
		return true, s.ended
	}
	if s.ready != nil {
		return true, nil
	}
	if s.lost != nil {
		e := *s.lost
		if s.lostAt > 0 {
			id, err := s.newestVisible(ctx, s.lostAt)
			if err != nil {
				return false, err // e stays first
			}
			e.ID = id
		}
		s.lost, s.ready = nil, &e
		return true, nil
	}
	for {
		for len(s.pending) > 0 {
			e := &s.pending[0]
			ok, err := s.visible(ctx, e)
			if err != nil {
				return false, err // e stays pending
			}
			s.pending = s.pending[1:]
			s.floor = max(s.floor, e.Seq)
			if ok && (e.Typing == nil || !s.typedAgain(e)) {
				s.ready = e
				return true, nil
			}
		}
		if e := s.recv; e != nil {
			// Live, nothing is pending: the event is returned (or
			// passed over) as it came, without a copy into pending.
			if e.Seq <= s.floor && e.Typing == nil { // typing is never stored
				s.recv = nil
				continue
			}
			ok, err := s.visible(ctx, e)
			if err != nil {
				return false, err // e stays next
			}
			s.recv = nil
			s.floor = max(s.floor, e.Seq)
			if ok && (e.Typing == nil || !s.typedAgain(e)) {
				s.ready = e
				return true, nil
			}
			continue
		}
		if s.live {
			return false, nil
		}
		if err := s.catchUp(ctx); err != nil {
			return false, err
		}
		if s.lost != nil {
			return s.prepare(ctx)
		}
	}
}

// catchUp reads the events after the floor from the outbox, up to what
// the dispatcher has offered, and registers the subscription with the
// dispatcher once it has read that far: from then on it gets every later
// event live, and drops those at or below its floor.
func (s *Subscription) catchUp(ctx context.Context) error {
	f := s.feed
	f.mu.Lock()
	upTo := f.cursor
	if upTo <= s.floor {
		if s.closed.Load() || f.closed {
			f.mu.Unlock()
			return ErrClosed
		}
		f.goLive(s)
		f.mu.Unlock()
		return nil
	}
	f.mu.Unlock()
	// Only what the caller may see is read: the store filters by its
	// scope, as the lists do, so that a resume costs the caller's events,
	// not the installation's.
	q, err := s.query(ctx)
	if err != nil {
		return err
	}
	q.After, q.Before, q.Limit, q.Redact = s.floor, upTo+1, readBatch, true
	evs, err := f.store.ReadEvents(ctx, q)
	if err != nil {
		return err
	}
	// Pruning removes the oldest events first: if the event the read
	// went on from is still kept, none after it was pruned before the
	// read. Otherwise the read may have passed over some (pruned since the
	// subscription found the event it resumes after, or read the batch
	// before): the caller is told, as when that event is no longer kept.
	if kept, err := s.kept(ctx, s.mark); err != nil || !kept {
		if err == nil {
			err = s.lose(ctx, upTo)
		}
		return err
	}
	s.pending = evs
	if len(evs) < readBatch {
		s.floor, s.mark = upTo, 0 // read everything up to it
	} else {
		s.mark = evs[len(evs)-1].Seq // the next read's floor
	}
	return nil
}

// kept reports whether the event seq is still kept (seq 0: yes).
func (s *Subscription) kept(ctx context.Context, seq int64) (bool, error) {
	if seq <= 0 {
		return true, nil
	}
	evs, err := s.feed.store.ReadEvents(ctx, driver.EventQuery{Scope: driver.Scope{All: true}, Unfiled: true, After: seq - 1, Before: seq + 1, Limit: 1})
	return len(evs) > 0, err
}

// lose makes the subscription go on from the newest event (at least
// upTo), after an events.lost.
func (s *Subscription) lose(ctx context.Context, upTo int64) error {
	f := s.feed
	lost := driver.Event{Type: driver.EventsLost, ConversationID: s.conv, Created: f.opts.Now().UTC()}
	last, err := f.store.LastEvent(ctx)
	switch {
	case err == nil:
		s.floor, s.lostAt = max(s.floor, upTo, last.Seq), last.Seq
	case !errors.Is(err, driver.ErrNotFound):
		return err
	default:
		s.floor = max(s.floor, upTo)
	}
	s.pending, s.lost, s.mark = nil, &lost, 0
	return nil
}

// newestVisible returns the id of the newest event up to seq upTo that
// the subscription's caller may see, or "" when there is none.
func (s *Subscription) newestVisible(ctx context.Context, upTo int64) (string, error) {
	q, err := s.query(ctx)
	if err != nil {
		return "", err
	}
	q.Before, q.Newest, q.Limit = upTo+1, true, 1
	evs, err := s.feed.store.ReadEvents(ctx, q)
	if err != nil || len(evs) == 0 {
		return "", err
	}
	if ok, err := s.visible(ctx, &evs[0]); !ok || err != nil {
		return "", err
	}
	return evs[0].ID, nil
}

// query returns the query of the events the subscription's caller may
// see: those of its conversation, or of every conversation the caller may
// see and of its files in none.
func (s *Subscription) query(ctx context.Context) (driver.EventQuery, error) {
	q := driver.EventQuery{Scope: driver.Scope{ConversationIDs: []string{s.conv}}, ViewerID: s.caller.ID}
	if s.conv == "" {
		all, member, convs, err := s.feed.m.Scope(ctx, s.caller.ID)
		if err != nil {
			return driver.EventQuery{}, err
		}
		q.Scope, q.Unfiled = driver.Scope{All: all, MemberID: member, ConversationIDs: convs}, true
	}
	return q, nil
}

// visible reports whether the caller may see e: the rule of
// messaging.Service.CanSeeEvent, with the Policy's answers shared by the
// caller's subscriptions (Feed.answer).
func (s *Subscription) visible(ctx context.Context, e *driver.Event) (bool, error) {
	if s.conv != "" && e.ConversationID != s.conv {
		return false, nil
	}
	if e.AudienceID != "" && e.AudienceID != s.caller.ID {
		return false, nil
	}
	if e.ConversationID == "" {
		return e.AudienceID != "", nil
	}
	// The answer of the conversation last asked is kept by the reader, so
	// that a stream of one busy conversation does not take the Feed's
	// lock (which its dispatcher holds while it offers an event to every
	// stream) for each event; a membership change marks it stale.
	// A "yes" that expires soon is renewed in the background (Feed.renew),
	// so that a stream of a conversation with traffic never waits for the
	// Policy.
	if a := s.seen; a != nil && s.seenConv == e.ConversationID && !a.stale.Load() {
		now, until := s.feed.opts.Now(), a.expiry()
		if now.Before(until) {
			if a.ok && until.Sub(now) < s.feed.renewal() && a.renewing.CompareAndSwap(false, true) {
				s.feed.renew(s.viewer, e.ConversationID, a)
			}
			return a.ok, nil
		}
	}
	a, err := s.feed.answer(ctx, s.viewer, e.ConversationID)
	if err != nil {
		return false, err
	}
	s.seen, s.seenConv = a, e.ConversationID
	return a.ok, nil
}

// Close ends the subscription; Next then returns ErrClosed.
func (s *Subscription) Close() {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.endOnce.Do(func() { close(s.end) })
		s.feed.mu.Lock()
		s.feed.leave(s)
		s.feed.mu.Unlock()
	})
}
