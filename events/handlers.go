package events

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/parleychat/parley/messaging/driver"
)

// Handler reacts to an event on the host's side: a notification, a search
// index, a webhook. An error (or a panic) has it called again with the same
// event, after a backoff, up to Options.HandlerAttempts times. It never
// fails the write that made the event, which has committed before.
type Handler func(ctx context.Context, e driver.Event) error

// handler is a registered Handler and its wake-up.
type handler struct {
	name string
	fn   Handler
	wake chan struct{}
}

// poke wakes the handler's loop; it never blocks.
func (h *handler) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Handle registers fn under name. It is called with every event recorded
// from its first registration on (in every conversation, whatever the
// audience), at least once each, one at a time, in Seq order, after the
// event's write has committed. Its position is stored with the events, so
// that it resumes where it stopped after a crash or a restart (an event it
// was handling then is handled again), and among the instances that share
// a database, one at a time runs the handler of a name (the one holding
// its claim, renewed every Options.HandlerLease/3; another takes over when
// that one stops). An event that fails Options.HandlerAttempts times is
// logged and skipped. Errors: ErrInvalid for an empty or repeated name,
// ErrClosed after Close, ErrUnavailable when the outbox cannot be read.
func (f *Feed) Handle(ctx context.Context, name string, fn Handler) error {
	if name == "" || fn == nil {
		return &driver.Error{Kind: driver.ErrInvalid, Op: "events.Handle", Message: "a handler needs a name and a function"}
	}
	// A new handler starts after the newest event.
	var start int64
	last, err := f.store.LastEvent(ctx)
	switch {
	case err == nil:
		start = last.Seq
	case !errors.Is(err, driver.ErrNotFound):
		return &driver.Error{Kind: driver.KindOf(err), Op: "events.Handle", Message: "cannot read the outbox", Err: err}
	}
	h := &handler{name: name, fn: fn, wake: make(chan struct{}, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	if _, ok := f.handlers[name]; ok {
		return &driver.Error{Kind: driver.ErrInvalid, Op: "events.Handle", Message: "a handler named " + name + " is registered already"}
	}
	f.handlers[name] = h
	f.wg.Go(func() { f.runHandler(h, start) })
	return nil
}

// runHandler claims the handler's position and handles the events after
// it, until the Feed closes.
func (f *Feed) runHandler(h *handler, start int64) {
	lease := f.opts.HandlerLease
	poll := time.NewTicker(min(f.opts.PollInterval, lease/3))
	defer poll.Stop()
	wait := func() bool {
		select {
		case <-f.ctx.Done():
			return false
		case <-h.wake:
		case <-poll.C:
		}
		return true
	}
	var pos int64 = -1 // the position as this instance last claimed or saved it
	defer func() {
		if pos >= 0 {
			// Give the claim up, so that the next start (or another
			// instance) takes over at once; a claim lost meanwhile is
			// left alone.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = f.store.SaveCursor(ctx, h.name, f.instance, pos, time.Unix(0, 0))
		}
	}()
	for {
		if !f.open() {
			if !wait() {
				return
			}
			continue
		}
		now := f.opts.Now()
		seq, ok, err := f.store.ClaimCursor(f.ctx, h.name, f.instance, start, now, now.Add(lease))
		if err != nil || !ok {
			if err != nil && f.ctx.Err() == nil {
				f.logOnce("claim "+h.name, "events: cannot claim a handler's position; will retry", err)
			}
			if !wait() {
				return
			}
			continue
		}
		pos = seq
		if !f.handleAfter(h, &pos) {
			if f.ctx.Err() != nil {
				return
			}
			continue // lost the claim, or a read failed: claim again
		}
		if !wait() {
			return
		}
	}
}

// handleAfter handles the events after *pos, saving the position (and
// *pos) as it goes, until none is left; false when it lost the claim or
// could not read or save.
func (f *Feed) handleAfter(h *handler, pos *int64) bool {
	lease := f.opts.HandlerLease
	saved := time.Now()
	seq := *pos
	save := func() bool {
		if !f.save(h, seq) {
			return false
		}
		*pos, saved = seq, time.Now()
		return true
	}
	for {
		evs, err := f.store.ReadEvents(f.ctx, driver.EventQuery{Scope: driver.Scope{All: true}, Unfiled: true, After: seq, Limit: readBatch})
		if err != nil {
			if f.ctx.Err() == nil {
				f.logOnce("read "+h.name, "events: a handler cannot read the outbox; will retry", err)
			}
			return false
		}
		for _, e := range evs {
			if !f.handleClaimed(h, e, seq) {
				return false // closing: the event is handled again on the next start
			}
			seq = e.Seq
			if time.Since(saved) > lease/3 && !save() {
				return false
			}
		}
		if len(evs) > 0 && !save() {
			return false
		}
		if len(evs) < readBatch {
			return true
		}
	}
}

// save stores the handler's position and renews its claim.
func (f *Feed) save(h *handler, seq int64) bool {
	err := f.store.SaveCursor(f.ctx, h.name, f.instance, seq, f.opts.Now().Add(f.opts.HandlerLease))
	if err != nil && f.ctx.Err() == nil {
		f.logOnce("save "+h.name, "events: cannot save a handler's position", err)
	}
	return err == nil
}

// handleClaimed is handleOne, renewing the handler's claim (and saving
// its position, seq) every HandlerLease/3 while it runs, so that no other
// instance takes over a call longer than the lease and calls the handler
// meanwhile. A renewal that fails is logged; the save after the call then
// fails too, and the handler claims its position again.
func (f *Feed) handleClaimed(h *handler, e driver.Event, seq int64) bool {
	every := f.opts.HandlerLease / 3
	var mu sync.Mutex // held by a renewal: none runs once the call is over
	stopped := false
	var renew *time.Timer
	mu.Lock()
	renew = time.AfterFunc(every, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			f.save(h, seq)
			renew.Reset(every)
		}
	})
	mu.Unlock()
	ok := f.handleOne(h, e)
	mu.Lock()
	stopped = true
	renew.Stop()
	mu.Unlock()
	return ok
}

// handleOne calls the handler with e until it succeeds or has failed
// HandlerAttempts times; false when the Feed is closing.
func (f *Feed) handleOne(h *handler, e driver.Event) bool {
	backoff := f.opts.HandlerBackoff
	for attempt := 1; ; attempt++ {
		err := call(f.ctx, h.fn, e)
		if err == nil {
			return true
		}
		if f.ctx.Err() != nil {
			return false
		}
		if attempt >= f.opts.HandlerAttempts {
			f.opts.Logger.Error("events: handler failed; event skipped", "handler", h.name, "event", e.ID, "type", string(e.Type), "attempts", attempt, "err", err)
			return true
		}
		f.opts.Logger.Warn("events: handler failed; will retry", "handler", h.name, "event", e.ID, "attempt", attempt, "err", err)
		select {
		case <-f.ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Minute)
	}
}

// call runs fn, turning a panic into an error.
func call(ctx context.Context, fn Handler, e driver.Event) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return fn(ctx, e)
}
