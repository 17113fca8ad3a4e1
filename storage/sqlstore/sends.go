package sqlstore

import (
	"context"
	"encoding/hex"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// A sendCombiner stores together the sends that arrive while a statement
// or transaction of sends is under way (up to maxSent), each failing or
// succeeding as it would alone (DESIGN.md §4.4).
type sendCombiner struct {
	running sync.WaitGroup // the goroutines that send queued sends (Store.Close waits)
	mu      sync.Mutex
	slots   []*time.Time   // the statements of sends under way, by their start
	queue   []*pendingSend // sends waiting for a statement, in order
}

// Bounds of combined sends: 64 sends a statement, one statement under way
// (a second to the same conversation would wait for the first's commit)
// but for a send alone beside statements that have run for stallAfter.
const (
	maxSent    = 64
	stallAfter = 100 * time.Millisecond
)

// pendingSend is a send alone, and its outcome.
type pendingSend struct {
	ctx  context.Context
	m    messaging.Message
	evs  []messaging.Event         // the events of the send
	done *driver.IdempotencyRecord // the record of its key, or nil
	out  chan error                // its outcome; buffered
	// write makes the send in a write transaction (sendsInTx).
	write func(ctx context.Context, tx bun.Tx) error

	queued bool // it waits in sendCombiner.queue; guarded by its mu
}

// send stores p, alone or combined with other sends (see sendCombiner).
func (s *store) send(ctx context.Context, p *pendingSend) error {
	sc := &s.sending
	sc.mu.Lock()
	if slot := sc.slot(); slot != nil {
		sc.mu.Unlock()
		defer s.sendNext(slot)
		return s.sendAlone(ctx, p)
	}
	p.ctx, p.out, p.queued = ctx, make(chan error, 1), true
	sc.queue = append(sc.queue, p)
	sc.mu.Unlock()
	stalled := time.NewTimer(stallAfter)
	defer stalled.Stop()
	for {
		select {
		case err := <-p.out:
			return outcome(err)
		case <-stalled.C:
			// The statements under way may wait for a lock: made alone
			// beside them, unless they moved on.
			sc.mu.Lock()
			if p.queued {
				if slot := sc.slot(); slot != nil {
					sc.unqueue(p)
					sc.mu.Unlock()
					defer s.sendNext(slot)
					return s.sendAlone(ctx, p)
				}
			}
			sc.mu.Unlock()
			stalled.Reset(stallAfter)
		case <-ctx.Done():
			sc.mu.Lock()
			if p.queued {
				sc.unqueue(p)
			}
			sc.mu.Unlock()
			select {
			case err := <-p.out: // made (or failed) meanwhile
				return outcome(err)
			default:
				return ctx.Err()
			}
		}
	}
}

// outcome is err, the outcome of a queued send or combined change, for its
// caller: its own panic (*panicked) is the caller's, as alone.
func outcome(err error) error {
	if pn, ok := err.(*panicked); ok {
		panic(pn.value)
	}
	return err
}

// unqueue takes p, which waits, out of the queue. The caller holds sc.mu.
func (sc *sendCombiner) unqueue(p *pendingSend) {
	sc.queue = slices.DeleteFunc(sc.queue, func(o *pendingSend) bool { return o == p })
	p.queued = false
}

// slot takes a statement slot and returns it when none is taken or every
// statement under way has run for stallAfter, or returns nil. The caller
// holds sc.mu.
func (sc *sendCombiner) slot() *time.Time {
	now := time.Now()
	if slices.ContainsFunc(sc.slots, func(since *time.Time) bool { return now.Sub(*since) < stallAfter }) {
		return nil
	}
	sc.slots = append(sc.slots, &now)
	return &now
}

// sendAlone stores p in a statement or transaction of its own.
func (s *store) sendAlone(ctx context.Context, p *pendingSend) error {
	if p.write != nil {
		return s.write(ctx, p.write)
	}
	return s.retry(ctx, func(ctx context.Context) error { return s.insertSent(ctx, s.w, p) })
}

// sendNext hands slot, whose statement ended, to the sends that wait, on
// a goroutine of its own, or frees it.
func (s *store) sendNext(slot *time.Time) {
	batch := s.takeSends(slot)
	if batch == nil {
		return
	}
	s.sending.running.Go(func() {
		for batch != nil {
			s.sendAllCaught(batch)
			batch = s.takeSends(slot)
		}
	})
}

// sendAllCaught is sendAll, on a goroutine where a panic would end the
// program: a panic gives the callers not yet answered errCombinedPanic.
func (s *store) sendAllCaught(batch []*pendingSend) {
	defer func() {
		if p := recover(); p != nil {
			s.opts.Logger.Error("sqlstore: a statement of combined sends panicked", "panic", p, "stack", string(debug.Stack()))
			for _, ps := range batch {
				select {
				case ps.out <- fmt.Errorf("%w: %v", errCombinedPanic, p):
				default: // answered
				}
			}
		}
	}()
	s.sendAll(batch)
}

// takeSends takes the sends that wait (up to maxSent) for slot's next
// statement, or frees slot and returns none.
func (s *store) takeSends(slot *time.Time) []*pendingSend {
	sc := &s.sending
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if len(sc.queue) == 0 {
		sc.slots = slices.DeleteFunc(sc.slots, func(o *time.Time) bool { return o == slot })
		return nil
	}
	*slot = time.Now()
	n := min(len(sc.queue), maxSent)
	batch := slices.Clone(sc.queue[:n])
	sc.queue = slices.Delete(sc.queue, 0, n)
	for _, p := range batch {
		p.queued = false
	}
	return batch
}

// sendAll stores the sends of batch whose callers still wait in one
// statement, or, when the server answers it with an error, again as
// sendCombiner says; and gives each caller its outcome.
func (s *store) sendAll(batch []*pendingSend) {
	batch = slices.DeleteFunc(slices.Clone(batch), func(p *pendingSend) bool {
		if err := p.ctx.Err(); err != nil {
			p.out <- err
			return true
		}
		return false
	})
	switch len(batch) {
	case 0:
		return
	case 1:
		s.eachAlone(batch)
		return
	}
	ctx, stop := whileWaited(batch, func(p *pendingSend) context.Context { return p.ctx })
	defer stop()
	if batch[0].write != nil {
		s.sendInTx(ctx, batch)
		return
	}
	q, args, err := sentSQL(batch)
	if err != nil { // an event's payload: its send's own failure
		s.eachAlone(batch)
		return
	}
	_, err = s.execWrite(ctx, s.w, q, args...)
	switch {
	case err == nil:
		for _, p := range batch {
			p.out <- nil
		}
	case !serverAnswered(ctx, err): // stored or not, no one send's
		if connLost(err) && s.allStored(ctx, batch) {
			err = nil // the answer was lost, not the statement
		}
		for _, p := range batch {
			p.out <- err
		}
	default:
		keyed := slices.DeleteFunc(slices.Clone(batch), func(p *pendingSend) bool { return p.done == nil })
		if len(keyed) == 0 || len(keyed) == len(batch) {
			s.eachAlone(batch)
			return
		}
		var wg sync.WaitGroup
		defer wg.Wait() // also when the others panic: the keyed are made, and answered, all the same
		wg.Go(func() { s.eachAlone(keyed) })
		s.sendAll(slices.DeleteFunc(batch, func(p *pendingSend) bool { return p.done != nil }))
	}
}

// sendInTx makes the sends of batch in one write transaction, each in a
// savepoint of its own: a send that fails is rolled back to it, alone, and
// the others commit. A send whose caller has left by its turn is not made.
// When the transaction fails (its BEGIN or COMMIT, a savepoint's
// statement, the database's own rollback of it), each send is made alone.
func (s *store) sendInTx(ctx context.Context, batch []*pendingSend) {
	outs := make([]error, len(batch))
	err := s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		for i, p := range batch {
			if outs[i] = p.ctx.Err(); outs[i] != nil {
				continue
			}
			if _, err := s.execWrite(ctx, tx, "SAVEPOINT send"); err != nil {
				return err
			}
			if outs[i] = sendCaught(ctx, tx, p); outs[i] != nil {
				if s.retryable(outs[i]) {
					return outs[i] // the transaction's: made again (write)
				}
				if _, err := s.execWrite(ctx, tx, "ROLLBACK TO send"); err != nil {
					return err
				}
			}
			if _, err := s.execWrite(ctx, tx, "RELEASE send"); err != nil {
				return err
			}
		}
		return nil
	})
	switch {
	case err == nil:
		for i, p := range batch {
			p.out <- outs[i]
		}
	case ctx.Err() != nil: // every caller has left
		for _, p := range batch {
			p.out <- err
		}
	default:
		s.eachAlone(batch)
	}
}

// sendCaught is p.write in tx, a panic of it p's (*panicked).
func sendCaught(ctx context.Context, tx bun.Tx, p *pendingSend) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicked{value: v}
		}
	}()
	return p.write(ctx, tx)
}

// allStored reports whether the messages of batch are stored: the
// statement that stored them all or none of them committed. No when it
// cannot tell.
func (s *store) allStored(ctx context.Context, batch []*pendingSend) bool {
	col := make(pgArrays, 1)
	for _, p := range batch {
		col.add(0, p.m.ID)
	}
	ids := col.args(nil)
	for range 3 { // the pool may hold other connections lost with it
		var n int
		err := s.w.NewRaw("SELECT count(*) FROM messages WHERE id = ANY(?::text[])", ids...).Scan(ctx, &n)
		if err == nil || !connLost(err) {
			return err == nil && n == len(batch)
		}
	}
	return false
}

// eachAlone stores each send of batch in a statement of its own, at once,
// and gives each caller its outcome. A panic is its caller's, as alone
// (send panics with it).
func (s *store) eachAlone(batch []*pendingSend) {
	var wg sync.WaitGroup
	for _, p := range batch {
		wg.Go(func() {
			defer func() {
				if v := recover(); v != nil {
					p.out <- &panicked{value: v}
				}
			}()
			p.out <- s.sendAlone(p.ctx, p)
		})
	}
	wg.Wait()
}

// serverAnswered reports whether err, the error of a statement of sends
// run with ctx, is the server's answer to the statement, which then
// stored nothing: not a connection lost under it or the database
// unavailable (its outcome unknown), and not the cancellation of a
// statement whose callers have all left.
func serverAnswered(ctx context.Context, err error) bool {
	c := pgCode(err)
	if c == "" || connLost(err) || unavailable(err) {
		return false
	}
	// query_canceled: by a statement_timeout, or for ctx (the driver may
	// cancel a statement whose context ends).
	return c != "57014" || ctx.Err() == nil
}

// whileWaited returns a context with the values of the first of
// waiters' contexts (ctxOf) that ends once every one has ended, or once
// stop is called.
func whileWaited[W any](waiters []W, ctxOf func(W) context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctxOf(waiters[0])))
	var waiting sync.WaitGroup
	waiting.Add(len(waiters))
	stops := make([]func() bool, len(waiters))
	for i, w := range waiters {
		stops[i] = context.AfterFunc(ctxOf(w), waiting.Done)
	}
	go func() {
		waiting.Wait()
		cancel()
	}()
	return ctx, func() {
		for _, stop := range stops {
			if stop() {
				waiting.Done()
			}
		}
		cancel()
	}
}

// insertSentManySQL stores sends alone (insertSent), given as arrays, a
// column each (sentSQL), in one statement: the function parley_send_many
// of the schema (migrations/postgres, DESIGN.md §4.2, §4.4).
const insertSentManySQL = `SELECT parley_send_many(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::timestamptz[], ?::text[],
	?::text[], ?::text[], ?::text[], ?::bytea[], ?::timestamptz[], ?::timestamptz[],
	?::text[], ?::text[], ?::text[], ?::timestamptz[], ?::text[], ?::text[])`

// insertSentSQL is insertSentManySQL for one send, from its columns:
// parley_send, without what combines a batch (DESIGN.md §4.4).
const insertSentSQL = `SELECT parley_send(?::text, ?::text, ?::text, ?::text, ?::text, ?::text, ?::timestamptz, ?::text,
	?::text[], ?::text[], ?::text[], ?::bytea[], ?::timestamptz[], ?::timestamptz[],
	?::text[], ?::text[], ?::text[], ?::timestamptz[], ?::text[], ?::text[])`

// sentColumns returns the columns of m's row as sentSQL
// passes them: id, conversation, contact, text, search words, read_at,
// created_at and updated_at ("" when zero).
func sentColumns(m messaging.Message) [8]string {
	readAt, updatedAt := "", ""
	if !m.ReadAt.IsZero() {
		readAt = driverTime(m.ReadAt)
	}
	if !m.UpdatedAt.IsZero() {
		updatedAt = driverTime(m.UpdatedAt)
	}
	return [8]string{m.ID, m.ConversationID, m.Contact.ID, m.Text, searchWordsOf("", m.Text), readAt, driverTime(m.CreatedAt), updatedAt}
}

// sentSQL returns the statement that stores batch (insertSentSQL for a
// send alone, insertSentManySQL for more) and its arguments: the
// messages' columns (sentColumns), then their key records and events, a
// column each.
func sentSQL(batch []*pendingSend) (string, []any, error) {
	q, args := insertSentManySQL, make([]any, 0, 20)
	if len(batch) == 1 {
		q = insertSentSQL
		for _, v := range sentColumns(batch[0].m) {
			args = append(args, v)
		}
	} else {
		msgs := make(pgArrays, 8)
		for _, p := range batch {
			for c, v := range sentColumns(p.m) {
				msgs.add(c, v)
			}
		}
		args = msgs.args(args)
	}
	keys := make(pgArrays, 6)
	var evs []messaging.Event
	for _, p := range batch {
		if d := p.done; d != nil {
			for c, v := range [6]string{d.Scope, d.Key, d.Fingerprint, `\x` + hex.EncodeToString(d.Result), driverTime(d.CreatedAt), driverTime(d.ExpiresAt)} {
				keys.add(c, v)
			}
		}
		evs = append(evs, p.evs...)
	}
	evArgs, err := eventsArrays(evs)
	if err != nil {
		return "", nil, err
	}
	return q, append(keys.args(args), evArgs...), nil
}
