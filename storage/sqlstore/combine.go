package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// maxBatch bounds the sends (sends.go) or changes of a message (combiner)
// that one batch makes, of those that wait in order.
const maxBatch = 64

// A call is a send or change that waits in a queue for a batch.
type call interface {
	comparable
	waiter() (context.Context, chan error) // its caller's context; its outcome, buffered
}

// outcome is err, a call's outcome, for its caller: the call's own panic
// (*panicked) is the caller's, as alone.
func outcome(err error) error {
	if pn, ok := err.(*panicked); ok {
		panic(pn.value)
	}
	return err
}

// left is the outcome of c, whose caller's context ended while it waited:
// c's, if it was made meanwhile; else the context's error, c taken out of
// its queue (unqueue, under mu).
func left[C call](c C, mu *sync.Mutex, unqueue func()) error {
	mu.Lock()
	unqueue()
	mu.Unlock()
	ctx, out := c.waiter()
	select {
	case err := <-out:
		return outcome(err)
	default:
		return ctx.Err()
	}
}

// waiting returns the calls of batch whose callers wait, having answered
// the others with their context's error: their calls are not made.
func waiting[C call](batch []C) []C {
	return slices.DeleteFunc(slices.Clone(batch), func(c C) bool {
		ctx, out := c.waiter()
		err := ctx.Err()
		if err != nil {
			out <- err
		}
		return err != nil
	})
}

// caught is do(batch) on a goroutine where a panic would end the program:
// a panic gives the callers not yet answered errCombinedPanic.
func caught[C call](s *store, batch []C, do func([]C), logArgs ...any) {
	defer func() {
		if p := recover(); p != nil {
			s.opts.Logger.Error("sqlstore: a batch of combined writes panicked", append(logArgs, "panic", p, "stack", string(debug.Stack()))...)
			for _, c := range batch {
				_, out := c.waiter()
				select {
				case out <- fmt.Errorf("%w: %v", errCombinedPanic, p):
				default: // answered
				}
			}
		}
	}()
	do(batch)
}

// errCombinedPanic is the outcome of a call whose batch panicked (caught).
var errCombinedPanic = errors.New("sqlstore: the transaction of combined changes panicked")

// panicked is the outcome of a call that panicked: its caller's panic.
type panicked struct{ value any }

func (p *panicked) Error() string { return fmt.Sprintf("sqlstore: the change panicked: %v", p.value) }

// catching returns f(), or its panic as a *panicked error.
func catching(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicked{value: v}
		}
	}()
	return f()
}

// whileWaited returns a context with the values of the first waiter's
// that ends once every waiter's context has ended, or once stop is called.
func whileWaited[C call](waiters []C) (ctx context.Context, stop func()) {
	first, _ := waiters[0].waiter()
	ctx, cancel := context.WithCancel(context.WithoutCancel(first))
	var ended atomic.Int64
	stops := make([]func() bool, len(waiters))
	for i, w := range waiters {
		wctx, _ := w.waiter()
		stops[i] = context.AfterFunc(wctx, func() {
			if ended.Add(1) == int64(len(waiters)) {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// A combiner makes together the changes to one message that arrive while
// a transaction on it runs, each as alone, in one transaction on a
// goroutine of its own (DESIGN.md §4.5).
type combiner struct {
	running sync.WaitGroup // the goroutines that make batches (Store.Close waits)
	mu      sync.Mutex
	queues  map[string][]*combined // of each message being changed, the changes that wait
}

// combined is a change waiting to be made, and its outcome.
type combined struct {
	ctx context.Context
	ch  driver.MessageChange
	out chan error        // its outcome; buffered
	msg messaging.Message // the message after it, set before a nil outcome
}

func (c *combined) waiter() (context.Context, chan error) { return c.ctx, c.out }

// update makes ch on the message id, combined with the changes to it of
// other callers (see combiner).
func (s *store) update(ctx context.Context, id string, ch driver.MessageChange) (messaging.Message, error) {
	c := &combined{ctx: ctx, ch: ch, out: make(chan error, 1)}
	cb := &s.combine
	cb.mu.Lock()
	if cb.queues == nil {
		cb.queues = make(map[string][]*combined)
	}
	q, busy := cb.queues[id]
	if busy {
		q = append(q, c)
	}
	cb.queues[id] = q
	cb.mu.Unlock()
	if !busy {
		cb.running.Go(func() {
			for batch := []*combined{c}; len(batch) > 0; batch = s.next(id) {
				caught(s, batch, func(batch []*combined) { s.makeAll(id, batch) }, "message_id", id)
			}
		})
	}
	var err error
	select {
	case err = <-c.out:
		err = outcome(err)
	case <-ctx.Done():
		err = left(c, &cb.mu, func() {
			if q, ok := cb.queues[id]; ok {
				cb.queues[id] = slices.DeleteFunc(q, func(o *combined) bool { return o == c })
			}
		})
	}
	if err != nil {
		return messaging.Message{}, err
	}
	return c.msg, nil
}

// next takes the changes to the message id that wait (up to maxBatch),
// or ends the message's queue and returns none.
func (s *store) next(id string) []*combined {
	cb := &s.combine
	cb.mu.Lock()
	defer cb.mu.Unlock()
	q := cb.queues[id]
	if len(q) == 0 {
		delete(cb.queues, id)
		return nil
	}
	next := slices.Clone(q[:min(len(q), maxBatch)])
	cb.queues[id] = slices.Clone(q[len(next):])
	return next
}

// makeAll makes the changes of batch whose callers wait, in order, in as
// few transactions as their failures allow, and answers each caller.
func (s *store) makeAll(id string, batch []*combined) {
	todo := batch
	for {
		if todo = waiting(todo); len(todo) == 0 {
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
				c.out <- err
			}
			return
		case failed == 0: // made first, it fails as it would alone
			todo[0].out <- err
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

// makeTogether makes the changes of todo in one transaction and answers
// their callers when it commits; otherwise it returns the error and what
// failed: a change's index, failedAll or failedTogether.
func (s *store) makeTogether(id string, todo []*combined) (failed int, err error) {
	ctx, stop := whileWaited(todo)
	defer stop()
	outs := make([]messaging.Message, len(todo))
	ran := false // the transaction began
	// blame returns err, having set failed to who, or to failedAll when
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
			if outs[k], err = s.updateCaught(ctx, tx, id, c.ch, &row, made, &evs); err != nil {
				return blame(k, err)
			}
		}
		// Not committed when every caller has left (ctx ends soon after,
		// but may not have yet).
		if !slices.ContainsFunc(todo, func(c *combined) bool { return c.ctx.Err() == nil }) {
			return blame(failedAll, todo[0].ctx.Err())
		}
		if err := s.insertEvents(ctx, tx, evs); err != nil {
			return blame(failedTogether, err)
		}
		failed = failedAll // what fails from here (the commit) is the transaction's
		return nil
	})
	if err != nil {
		if !ran && s.txFailure(err) {
			failed = failedAll // it did not begin, for want of the database
		}
		return failed, err
	}
	for i, c := range todo {
		c.msg = outs[i]
		c.out <- nil
	}
	return failedAll, nil
}

// txFailure reports whether err, met by a transaction of combined
// changes, is the transaction's rather than one change's.
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

// updateCaught makes ch on the message id in tx, with its idempotency
// record, and returns the message as it leaves it; its events are added
// to evs. row and ahead are as updateMessage's. A panic of the change is
// its error (*panicked): the others are made again without it.
func (s *store) updateCaught(ctx context.Context, tx bun.Tx, id string, ch driver.MessageChange, row *messageRow, ahead *reactedOne, evs *[]messaging.Event) (out messaging.Message, err error) {
	err = catching(func() error {
		if out, err = s.updateMessage(ctx, tx, id, ch, row, ahead); err != nil {
			return err
		}
		if ch.Record != nil {
			after := out
			*evs = append(*evs, ch.Record(driver.Change{Message: &after})...)
		}
		if ch.Done != nil {
			return s.storeKey(ctx, tx, *ch.Done)
		}
		return nil
	})
	return out, err
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
		if ch := c.ch; ch.Reactions == nil || ch.Text != nil || ch.Read != nil || ch.NewAttachment != nil || len(ch.LinkAttachments) > 0 {
			return nil, nil
		}
		chs[k] = c.ch
	}
	if err := s.lockMessage(ctx, tx, id, row); err != nil {
		return nil, err
	}
	return s.reactPostgres(ctx, tx, id, chs)
}
