package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// A combiner makes together the changes to one message that arrive while
// a transaction on it runs (up to maxCombined), in order, each as alone,
// in one transaction on a goroutine of its own (DESIGN.md §4.5).
type combiner struct {
	running sync.WaitGroup // the goroutines of run
	mu      sync.Mutex
	// queues holds, for each message a transaction is changing, the
	// changes that arrived since, in order (an empty queue: none yet).
	queues map[string][]*combined
}

// maxCombined bounds the changes one transaction makes.
const maxCombined = 64

// combined is a change waiting to be made, and its outcome.
type combined struct {
	ctx  context.Context
	ch   driver.MessageChange
	done chan struct{} // closed once out and err are set
	out  messaging.Message
	err  error
}

// update makes ch on the message id, combined with the changes to it of
// other callers (see combiner).
func (s *store) update(ctx context.Context, id string, ch driver.MessageChange) (messaging.Message, error) {
	c := &combined{ctx: ctx, ch: ch, done: make(chan struct{})}
	cb := &s.combine
	cb.mu.Lock()
	if cb.queues == nil {
		cb.queues = make(map[string][]*combined)
	}
	q, busy := cb.queues[id]
	if busy {
		cb.queues[id] = append(q, c)
	} else {
		cb.queues[id] = nil
	}
	cb.mu.Unlock()
	if !busy {
		cb.running.Go(func() { s.run(id, []*combined{c}) })
	}

	select {
	case <-c.done:
	case <-ctx.Done():
		select {
		case <-c.done: // made meanwhile: its outcome
		default:
			cb.mu.Lock()
			if q, ok := cb.queues[id]; ok {
				cb.queues[id] = slices.DeleteFunc(q, func(o *combined) bool { return o == c })
			}
			cb.mu.Unlock()
			return messaging.Message{}, ctx.Err()
		}
	}
	return c.out, outcome(c.err)
}

// run makes the changes of batch, then those that arrived meanwhile, until
// the message's queue is empty.
func (s *store) run(id string, batch []*combined) {
	for len(batch) > 0 {
		s.makeCaught(id, batch)
		batch = s.next(id)
	}
}

// next takes the changes to the message id that wait (up to
// maxCombined), or ends the message's queue and returns none.
func (s *store) next(id string) []*combined {
	cb := &s.combine
	cb.mu.Lock()
	defer cb.mu.Unlock()
	q := cb.queues[id]
	if len(q) == 0 {
		delete(cb.queues, id)
		return nil
	}
	next := slices.Clone(q[:min(len(q), maxCombined)])
	cb.queues[id] = slices.Clone(q[len(next):])
	return next
}

// makeCaught is makeAll, with a panic outside the changes given to the
// callers not yet answered as errCombinedPanic.
func (s *store) makeCaught(id string, batch []*combined) {
	defer func() {
		if p := recover(); p != nil {
			s.opts.Logger.Error("sqlstore: a transaction of combined changes panicked", "message_id", id, "panic", p, "stack", string(debug.Stack()))
			for _, c := range batch {
				select {
				case <-c.done:
				default:
					c.finish(messaging.Message{}, fmt.Errorf("%w: %v", errCombinedPanic, p))
				}
			}
		}
	}()
	s.makeAll(id, batch)
}

// errCombinedPanic is the error of a change whose transaction panicked
// outside any change (makeCaught), or of a send whose statement panicked
// (sendAllCaught).
var errCombinedPanic = errors.New("sqlstore: the transaction of combined changes panicked")

// makeAll makes the changes of batch whose callers still wait, in order,
// in as few transactions as their failures allow, and gives each caller
// its outcome.
func (s *store) makeAll(id string, batch []*combined) {
	todo := batch
	for {
		// Changes whose callers have left are not made.
		waiting := make([]*combined, 0, len(todo))
		for _, c := range todo {
			if err := c.ctx.Err(); err != nil {
				c.finish(messaging.Message{}, err)
			} else {
				waiting = append(waiting, c)
			}
		}
		todo = waiting
		if len(todo) == 0 {
			return
		}
		failed, err := s.makeTogether(id, todo)
		switch {
		case err == nil:
			return
		case failed == failedTogether && len(todo) > 1: // each alone
			for _, c := range todo {
				s.makeAll(id, []*combined{c})
			}
			return
		case failed < 0: // every caller's
			for _, c := range todo {
				c.finish(messaging.Message{}, err)
			}
			return
		case failed == 0: // made first, it fails as it would alone
			todo[0].finish(messaging.Message{}, err)
			todo = todo[1:]
		default: // those before it again, then it first
			s.makeAll(id, todo[:failed])
			todo = todo[failed:]
		}
	}
}

// Values of makeTogether's failed, besides a change's index.
const (
	failedAll      = -1 // the transaction's own failure: every caller's
	failedTogether = -2 // no one change's: each is made again alone
)

// makeTogether makes the changes of todo in one transaction and gives each
// caller its outcome when it commits; otherwise it returns the error and
// what failed: a change's index, failedAll or failedTogether.
func (s *store) makeTogether(id string, todo []*combined) (failed int, err error) {
	// The transaction runs while one of its callers waits for it.
	ctx, stop := whileWaited(todo, func(c *combined) context.Context { return c.ctx })
	defer stop()

	outs := make([]messaging.Message, len(todo))
	ran := false // the transaction began
	// blame returns err, having set failed to who: failedAll instead when
	// err is the transaction's (txFailure).
	blame := func(who int, err error) error {
		failed = who
		if s.txFailure(err) {
			failed = failedAll
		}
		return err
	}
	err = s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		ran = true
		failed = failedTogether
		var row messageRow // locked by the first change, and left by each as the next finds it
		var evs []messaging.Event
		ahead, err := s.reactAhead(ctx, tx, id, todo, &row)
		if err != nil && row.ID == "" { // the lock's: the first change's, as in updateMessage
			return blame(0, err)
		} else if err != nil {
			return blame(failedTogether, err)
		}
		for k, c := range todo {
			var made *reactedOne
			if ahead != nil {
				made = &ahead[k]
			}
			out, err := s.updateCaught(ctx, tx, id, c.ch, &row, made, &evs)
			if err != nil {
				return blame(k, err)
			}
			outs[k] = out
		}
		// Not committed when every caller has left (ctx ends soon after,
		// but may not have yet).
		if !slices.ContainsFunc(todo, func(c *combined) bool { return c.ctx.Err() == nil }) {
			failed = failedAll
			return todo[0].ctx.Err()
		}
		// The events of all, in order: on PostgreSQL in one statement,
		// elsewhere in statements of powers of two (few shapes to prepare).
		if s.sql.arrays && len(evs) > 1 {
			args, err := eventsArrays(evs)
			if err == nil {
				_, err = s.execWrite(ctx, tx, insertEventsArraysSQL, args...)
			}
			if err != nil {
				return blame(failedTogether, err)
			}
			evs = nil
		}
		for len(evs) > 0 {
			n := 1 << (bits.Len(uint(len(evs))) - 1)
			if err := s.insertEvents(ctx, tx, evs[:n]); err != nil {
				return blame(failedTogether, err)
			}
			evs = evs[n:]
		}
		// What fails from here (the commit) is the transaction's.
		failed = failedAll
		return nil
	})
	if err != nil {
		if !ran && s.txFailure(err) {
			failed = failedAll // it did not begin, for want of the database
		}
		return failed, err
	}
	for i, c := range todo {
		c.finish(outs[i], nil)
	}
	return failedAll, nil
}

// txFailure reports whether err, met by a transaction of combined
// changes, is the transaction's rather than one change's: the database
// unreachable or too busy, a lock or statement timeout, the transaction's
// context ended.
func (s *store) txFailure(err error) bool {
	if unavailable(err) || s.retryable(err) || errors.Is(err, context.Canceled) {
		return true
	}
	switch pgCode(err) {
	case "55P03", "57014": // lock_not_available (lock_timeout), query_canceled (statement_timeout)
		return true
	}
	return mysqlCode(err) == 3024 // ER_QUERY_TIMEOUT (max_execution_time)
}

// panicked is the error of a change that panicked: its caller panics with
// value.
type panicked struct{ value any }

func (p *panicked) Error() string { return fmt.Sprintf("sqlstore: the change panicked: %v", p.value) }

// updateCaught makes ch on the message id in tx, with its idempotency
// record, and returns the message as it leaves it; its events are added
// to evs, which the caller stores. row and ahead are as updateMessage's.
// A panic of the change is returned as a *panicked error: the
// transaction, which may hold the changes of other callers, rolls back,
// and they are made again without it.
func (s *store) updateCaught(ctx context.Context, tx bun.Tx, id string, ch driver.MessageChange, row *messageRow, ahead *reactedOne, evs *[]messaging.Event) (out messaging.Message, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &panicked{value: p}
		}
	}()
	if out, err = s.updateMessage(ctx, tx, id, ch, row, ahead); err != nil {
		return messaging.Message{}, err
	}
	if ch.Record != nil {
		after := out
		*evs = append(*evs, ch.Record(driver.Change{Message: &after})...)
	}
	if ch.Done != nil {
		if err := s.storeKey(ctx, tx, *ch.Done); err != nil {
			return messaging.Message{}, err
		}
	}
	return out, nil
}

// reactAhead makes the reactions of todo on PostgreSQL in one call
// (reactPostgres), having locked the message into row, when every change
// is of reactions alone, and returns what each made; otherwise nil.
func (s *store) reactAhead(ctx context.Context, tx bun.Tx, id string, todo []*combined, row *messageRow) ([]reactedOne, error) {
	if !s.sql.arrays || len(todo) < 2 {
		return nil, nil
	}
	chs := make([]driver.MessageChange, len(todo))
	for k, c := range todo {
		ch := c.ch
		if ch.Reactions == nil || ch.Text != nil || ch.Read != nil || ch.NewAttachment != nil || len(ch.LinkAttachments) > 0 {
			return nil, nil
		}
		chs[k] = ch
	}
	if err := s.lockMessage(ctx, tx, id, row); err != nil {
		return nil, err
	}
	return s.reactPostgres(ctx, tx, id, chs)
}

// finish gives c's caller its outcome.
func (c *combined) finish(out messaging.Message, err error) {
	c.out, c.err = out, err
	close(c.done)
}
