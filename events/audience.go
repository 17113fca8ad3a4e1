package events

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/parleychat/parley/messaging/driver"
)

// The Feed hands an event only to the subscriptions that may see it. It
// keeps the live subscriptions by audience: those narrowed to a
// conversation under that conversation, the others under their caller (a
// viewer). A viewer holds the Policy's answers for the conversations its
// caller has met, shared by all of the caller's subscriptions: a caller
// that may not see a conversation is not offered its events again while
// the answer holds (Options.PolicyTTL), so a stream that sees nothing
// costs nothing per event, and a thousand streams of one caller ask the
// Policy once. Membership changes made through the Service drop the
// answers they change at once, here and, through the pub/sub, in the
// other instances (forget).

// viewer is a caller with subscriptions to the Feed. Its fields are
// guarded by the Feed's mu.
type viewer struct {
	id   string
	n    int                        // its subscriptions, live or not
	live map[*Subscription]struct{} // its live subscriptions, narrowed or not
	wide int                        // how many of live are not narrowed
	sees map[string]*answer         // the Policy's answers, by conversation
}

// answer is the Policy's answer for one caller and conversation: asked
// once by one reader, awaited by the others (ready), kept until its
// expiry, which a renewal of a "yes" moves on (renew).
type answer struct {
	ready      chan struct{} // closed when ok and err are set
	done       bool          // ready is closed; set under the Feed's mu
	ok         bool
	err        error
	until      atomic.Int64 // when it expires, in Unix nanoseconds (expiry)
	refreshing bool         // an expired "no" being asked again (refresh)
	renewing   atomic.Bool  // a "yes" being asked again before it expires (renew)
	// stale is set (under the Feed's mu) when the answer is dropped
	// before its time (forget): a subscription that kept it (see
	// Subscription.visible) asks again.
	stale atomic.Bool
}

// expiry returns when the answer expires.
func (a *answer) expiry() time.Time { return time.Unix(0, a.until.Load()) }

// expire sets when the answer expires.
func (a *answer) expire(t time.Time) { a.until.Store(t.UnixNano()) }

// maxAnswers bounds a viewer's answers; past it they are all dropped.
const maxAnswers = 1024

// join adds s to its caller's viewer; the caller holds f.mu.
func (f *Feed) join(s *Subscription) {
	v := f.viewers[s.caller.ID]
	if v == nil {
		v = &viewer{id: s.caller.ID, live: make(map[*Subscription]struct{}), sees: make(map[string]*answer)}
		f.viewers[v.id] = v
	}
	v.n++
	s.viewer = v
}

// goLive registers s with the dispatcher, and wakes it when an idle Feed
// let writes pass (behind): s, live from the cursor, gets them at once,
// not at the next poll. The caller holds f.mu.
func (f *Feed) goLive(s *Subscription) {
	if f.behind {
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
	s.live = true
	s.viewer.live[s] = struct{}{}
	f.live++
	if s.conv == "" {
		if s.viewer.wide == 0 {
			f.wide[s.viewer] = struct{}{}
			f.wideGen++
		}
		s.viewer.wide++
		return
	}
	subs := f.narrow[s.conv]
	if subs == nil {
		subs = make(map[*Subscription]struct{})
		f.narrow[s.conv] = subs
	}
	subs[s] = struct{}{}
}

// drop unregisters s from the dispatcher, if it is registered; the caller
// holds f.mu.
func (f *Feed) drop(s *Subscription) {
	v := s.viewer
	if _, ok := v.live[s]; !ok {
		return
	}
	delete(v.live, s)
	f.live--
	if s.conv == "" {
		if v.wide--; v.wide == 0 {
			delete(f.wide, v)
			f.wideGen++
		}
		return
	}
	if subs := f.narrow[s.conv]; len(subs) == 1 {
		delete(f.narrow, s.conv)
	} else {
		delete(subs, s)
	}
}

// leave drops s, and its viewer with the last of its subscriptions; the
// caller holds f.mu.
func (f *Feed) leave(s *Subscription) {
	f.drop(s)
	if s.viewer.n--; s.viewer.n == 0 {
		delete(f.viewers, s.viewer.id)
	}
}

// route offers e to the live subscriptions that may see it: its
// audience's, or those narrowed to its conversation and the viewers' that
// are not known to be kept from it. The caller holds f.mu.
func (f *Feed) route(e *driver.Event, now time.Time) {
	if e.AudienceID != "" {
		if v := f.viewers[e.AudienceID]; v != nil {
			for s := range v.live {
				s.offer(e)
			}
		}
		return
	}
	if e.ConversationID == "" {
		return
	}
	for s := range f.narrow[e.ConversationID] {
		if f.admits(s.viewer, e.ConversationID, now) {
			s.offer(e)
		}
	}
	for _, v := range f.admitted(e.ConversationID, now) {
		for s := range v.live {
			if s.conv == "" {
				s.offer(e)
			}
		}
	}
}

// audience is the viewers with live subscriptions to every conversation
// that are offered the events of one conversation: a list made once, and
// again when a viewer comes or goes (gen), when an answer for the
// conversation changes (then it is dropped), or when a "no" left out
// expires (until).
type audience struct {
	gen     uint64
	viewers []*viewer
	until   time.Time
}

// maxAudiences bounds the lists kept; past it they are all dropped.
const maxAudiences = 4096

// admitted returns the wide viewers admitted to the conversation's
// events; the caller holds f.mu.
func (f *Feed) admitted(conv string, now time.Time) []*viewer {
	au := f.audiences[conv]
	if au != nil && au.gen == f.wideGen && now.Before(au.until) {
		return au.viewers
	}
	if au == nil {
		if len(f.audiences) >= maxAudiences {
			clear(f.audiences)
		}
		au = &audience{}
		f.audiences[conv] = au
	}
	au.gen, au.viewers, au.until = f.wideGen, au.viewers[:0], now.Add(f.opts.PolicyTTL)
	for v := range f.wide {
		if f.admits(v, conv, now) {
			au.viewers = append(au.viewers, v)
		} else if until := v.sees[conv].expiry(); until.After(now) {
			if until.Before(au.until) {
				au.until = until
			}
		} else {
			au.until = now // being asked again: look again at the next event
		}
	}
	return au.viewers
}

// admits reports whether the viewer's streams are offered the events of
// the conversation: unless the Policy said no. An expired "no" is asked
// again in the background (refresh), and holds meanwhile, so that the
// streams of a caller who sees nothing are never woken to ask. The
// caller holds f.mu.
func (f *Feed) admits(v *viewer, conv string, now time.Time) bool {
	a := v.sees[conv]
	switch {
	case a == nil || !a.done || a.err != nil || a.ok:
		return true // the reader asks, if it must (answer)
	case !now.Before(a.expiry()) && !a.refreshing:
		a.refreshing = true
		f.wg.Go(func() { f.refresh(v, conv, a) })
	}
	return false
}

// refresh asks the Policy again for the expired answer a.
func (f *Feed) refresh(v *viewer, conv string, a *answer) {
	ok, err := f.m.CanView(f.ctx, v.id, conv)
	f.mu.Lock()
	defer f.mu.Unlock()
	if v.sees[conv] != a {
		return // forgotten meanwhile
	}
	delete(f.audiences, conv)
	if err != nil {
		delete(v.sees, conv) // the next reader asks
		return
	}
	fresh := &answer{ready: make(chan struct{}), done: true, ok: ok}
	fresh.expire(f.opts.Now().Add(f.opts.PolicyTTL))
	close(fresh.ready)
	v.sees[conv] = fresh
}

// renewal is how much of a "yes" answer's time must be left for a reader
// that relies on it not to have it renewed: the Policy is asked again
// when less is left (renew), so that the answer of a conversation with
// traffic does not expire, and none of its streams waits for the Policy
// between two events. A busy conversation's "yes" is asked again once
// every PolicyTTL/2, a quiet one's only when it has an event again.
func (f *Feed) renewal() time.Duration { return f.opts.PolicyTTL / 2 }

// renew asks the Policy again, in the background, for the "yes" answer a
// of viewer v, which expires soon: a reader's call (visible), once per
// answer. A "yes" again moves its expiry on, where every reader that
// kept it sees it; a "no" replaces it, and the readers that kept it,
// finding it stale, take the new one (answer). A failure leaves it to
// expire: the readers then ask, as they do without a renewal.
func (f *Feed) renew(v *viewer, conv string, a *answer) {
	f.mu.Lock()
	if f.closed || v.sees[conv] != a {
		f.mu.Unlock()
		return
	}
	if a.expiry().Sub(f.opts.Now()) >= f.renewal() {
		// Renewed meanwhile: this reader saw the old expiry, and took the
		// flag once the renewal had put it down.
		a.renewing.Store(false)
		f.mu.Unlock()
		return
	}
	f.wg.Go(func() {
		asked := f.opts.Now()
		ok, err := f.m.CanView(f.ctx, v.id, conv)
		f.mu.Lock()
		defer f.mu.Unlock()
		switch {
		case v.sees[conv] != a || err != nil:
			// Forgotten meanwhile, or failed: the readers ask when it
			// expires.
		case ok:
			a.expire(asked.Add(f.opts.PolicyTTL))
			a.renewing.Store(false)
		default:
			no := &answer{ready: make(chan struct{}), done: true}
			no.expire(asked.Add(f.opts.PolicyTTL))
			close(no.ready)
			a.stale.Store(true)
			v.sees[conv] = no
			delete(f.audiences, conv)
		}
	})
	f.mu.Unlock()
}

// answer returns the Policy's answer for whether the viewer may see the
// conversation, asked by one of the viewer's subscriptions at a time and
// kept for Options.PolicyTTL; its fields may be read once it is returned
// without error.
func (f *Feed) answer(ctx context.Context, v *viewer, conv string) (*answer, error) {
	for {
		a, again, err := f.shared(ctx, v, conv)
		if !again {
			return a, err
		}
	}
}

// shared is answer; again means that the answer it waited for failed
// with the context of the reader that asked, which went away: the
// caller's reader asks itself.
func (f *Feed) shared(ctx context.Context, v *viewer, conv string) (_ *answer, again bool, _ error) {
	now := f.opts.Now()
	f.mu.Lock()
	a := v.sees[conv]
	if a != nil && a.done && (a.err != nil || !now.Before(a.expiry())) {
		a = nil // failed or expired: ask again
	}
	if a != nil {
		f.mu.Unlock()
		select {
		case <-a.ready:
			switch {
			case a.err == nil:
				return a, false, nil
			case ctx.Err() == nil && (errors.Is(a.err, context.Canceled) || errors.Is(a.err, context.DeadlineExceeded)):
				return nil, true, nil
			}
			return nil, false, a.err
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
	if len(v.sees) >= maxAnswers {
		for _, a := range v.sees {
			a.stale.Store(true)
		}
		clear(v.sees)
		clear(f.audiences)
	}
	a = &answer{ready: make(chan struct{})}
	if len(f.changing) > 0 && f.changing[v.id+" "+conv] > 0 {
		// A membership change under way: this answer may be from before
		// its commit, so it serves only the event at hand (the reader
		// asks again for the next one).
		a.stale.Store(true)
	} else {
		v.sees[conv] = a
	}
	f.mu.Unlock()

	ok, err := f.m.CanView(ctx, v.id, conv)

	f.mu.Lock()
	a.ok, a.err, a.done = ok, err, true
	a.expire(now.Add(f.opts.PolicyTTL))
	if err != nil && v.sees[conv] == a {
		delete(v.sees, conv)
	}
	delete(f.audiences, conv)
	close(a.ready)
	f.mu.Unlock()
	if err != nil {
		return nil, false, err
	}
	return a, false, nil
}

// forget drops the answer for contact and conversation: its membership
// changed. The next event of the conversation asks the Policy again.
func (f *Feed) forget(contactID, conversationID string) {
	f.mu.Lock()
	f.forgetLocked(contactID, conversationID)
	f.mu.Unlock()
}

// forgetLocked is forget; the caller holds f.mu.
func (f *Feed) forgetLocked(contactID, conversationID string) {
	if v := f.viewers[contactID]; v != nil {
		if a := v.sees[conversationID]; a != nil {
			a.stale.Store(true)
		}
		delete(v.sees, conversationID)
		delete(f.audiences, conversationID)
	}
}
