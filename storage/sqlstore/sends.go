package sqlstore

import (
	"context"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// A sendCombiner stores together the sends that arrive while a statement
// or transaction of sends is under way, each failing or succeeding as it
// would alone (DESIGN.md §4.4).
type sendCombiner struct {
	running sync.WaitGroup // the goroutines that make batches (Store.Close waits)
	mu      sync.Mutex
	slots   []*time.Time   // the statements of sends under way, by their start
	queue   []*pendingSend // sends waiting for a statement, in order
}

// stallAfter: one statement of sends is under way (a second to the same
// conversation would wait for the first's commit), but a send goes alone
// beside statements that have run this long.
const stallAfter = 100 * time.Millisecond

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

func (p *pendingSend) waiter() (context.Context, chan error) { return p.ctx, p.out }

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
	unqueue := func() {
		if p.queued {
			sc.queue = slices.DeleteFunc(sc.queue, func(o *pendingSend) bool { return o == p })
			p.queued = false
		}
	}
	stalled := time.NewTicker(stallAfter)
	defer stalled.Stop()
	for {
		select {
		case err := <-p.out:
			return outcome(err)
		case <-stalled.C: // the statements under way may wait for a lock: made alone beside them
			sc.mu.Lock()
			if p.queued { // not a scan of the queue at every tick
				if slot := sc.slot(); slot != nil {
					unqueue()
					sc.mu.Unlock()
					defer s.sendNext(slot)
					return s.sendAlone(ctx, p)
				}
			}
			sc.mu.Unlock()
		case <-ctx.Done():
			return left(p, &sc.mu, unqueue)
		}
	}
}

// slot takes and returns a statement slot if every statement under way
// has run for stallAfter, or nil. The caller holds sc.mu.
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
		for ; batch != nil; batch = s.takeSends(slot) {
			caught(s, batch, s.sendAll)
		}
	})
}

// takeSends takes the sends that wait (up to maxBatch) for slot's next
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
	batch := slices.Clone(sc.queue[:min(len(sc.queue), maxBatch)])
	sc.queue = slices.Delete(sc.queue, 0, len(batch))
	for _, p := range batch {
		p.queued = false
	}
	return batch
}

// sendAll stores the sends of batch whose callers still wait in one
// statement or transaction, or again as DESIGN.md §4.4 says when it
// fails; and gives each caller its outcome.
func (s *store) sendAll(batch []*pendingSend) {
	switch batch = waiting(batch); len(batch) {
	case 0:
		return
	case 1:
		s.eachAlone(batch)
		return
	}
	ctx, stop := whileWaited(batch)
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
// savepoint of its own, rolled back to it alone when it fails. A send
// whose caller has left by its turn is not made. When the transaction
// fails, each send is made alone.
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
			if outs[i] = catching(func() error { return p.write(ctx, tx) }); outs[i] != nil {
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

// allStored reports whether the statement that stored the messages of
// batch, all or none, committed. No when it cannot tell.
func (s *store) allStored(ctx context.Context, batch []*pendingSend) bool {
	col := make(pgArrays, 1)
	for _, p := range batch {
		col.add(0, p.m.ID)
	}
	for range 3 { // the pool may hold other connections lost with it
		var n int
		err := s.w.NewRaw("SELECT count(*) FROM messages WHERE id = ANY(?::text[])", col.args(nil)...).Scan(ctx, &n)
		if err == nil || !connLost(err) {
			return err == nil && n == len(batch)
		}
	}
	return false
}

// eachAlone stores each send of batch in a statement of its own, at once,
// and gives each caller its outcome (a panic is its caller's, as alone).
func (s *store) eachAlone(batch []*pendingSend) {
	var wg sync.WaitGroup
	for _, p := range batch {
		wg.Go(func() { p.out <- catching(func() error { return s.sendAlone(p.ctx, p) }) })
	}
	wg.Wait()
}

// serverAnswered reports whether err, the error of a statement of sends
// run with ctx, is the server's answer, which stored nothing: not a lost
// connection, the database unavailable or all callers gone.
func serverAnswered(ctx context.Context, err error) bool {
	c := pgCode(err)
	if c == "" || connLost(err) || unavailable(err) {
		return false
	}
	// query_canceled: by a statement_timeout, or for ctx.
	return c != "57014" || ctx.Err() == nil
}

// sentArrays is the end of the arguments of parley_send and
// parley_send_many (migrations/postgres, DESIGN.md §4.4): the sends' key
// records and events, a column each (sentSQL).
const sentArrays = `?::text[], ?::text[], ?::text[], ?::bytea[], ?::timestamptz[], ?::timestamptz[],
	?::text[], ?::text[], ?::text[], ?::timestamptz[], ?::text[], ?::text[])`

// insertSentManySQL stores sends alone, their messages' columns as
// arrays; insertSentSQL one send, from its columns.
const (
	insertSentManySQL = `SELECT parley_send_many(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::timestamptz[], ?::text[],
	` + sentArrays
	insertSentSQL = `SELECT parley_send(?::text, ?::text, ?::text, ?::text, ?::text, ?::text, ?::timestamptz, ?::text,
	` + sentArrays
)

// sentColumns returns the columns of m's row as sentSQL passes them (""
// for a zero time).
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
// send alone, insertSentManySQL for more) and its arguments.
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
