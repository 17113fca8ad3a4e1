package sqlstore

import (
	"context"
	"encoding/hex"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/parleychat/parley/messaging"
)

// A send alone on PostgreSQL (no attachments: insertSent) is one
// statement, committed on its own, whose fixed costs (a round trip, the
// executor's start, a commit and its flush of the WAL) are most of what
// it costs the server. When many callers send at once, the sends that
// arrive while maxSending statements of sends are under way wait in a
// queue, and the next statement stores all of them (up to maxSent): one
// statement, of one shape (prepared) for any number, that inserts their
// messages, tallies, events and key records from arrays, a column each
// (insertSentManySQL).
//
// The statement is atomic: it stores every send of it or none. When it
// fails with an error that the server answered (a message id or a key's
// record in the way, a deadlock), each of its sends is made again alone,
// so that each fails or succeeds as it would have alone; when its outcome
// is unknown or the database cannot be reached, the error is each
// caller's, as it would have been alone.
//
// A caller whose context ends while its send waits returns the context's
// error at once, and the send is not made; one that a statement has
// taken may be, as a send whose context ends while its statement runs
// may be. A statement goes on while one of its callers waits.
type sendCombiner struct {
	running sync.WaitGroup // the goroutines that send queued sends (Store.Close waits)
	mu      sync.Mutex
	busy    int            // statements of sends under way
	queue   []*pendingSend // sends waiting for a statement, in order
}

// Bounds of combined sends: the statements of sends under way at once, and
// the sends of one statement. With two statements under way (one sent or
// committed while the other runs), 32 callers creating messages reached
// 0.93–0.96× the rate of the floor of the stack on two cores, as with
// one; with four or eight, 0.82×, more sends going alone (BENCHMARKS.md).
const (
	maxSending = 2
	maxSent    = 64
)

// pendingSend is a send alone, and its outcome.
type pendingSend struct {
	ctx  context.Context
	m    messaging.Message
	evs  []messaging.Event            // the events of the send
	done *messaging.IdempotencyRecord // the record of its key, or nil
	out  chan error                   // its outcome; buffered
}

// send stores p, alone or combined with other sends (see sendCombiner).
func (s *Store) send(ctx context.Context, p *pendingSend) error {
	alone := func(ctx context.Context) error {
		return s.retry(ctx, func(ctx context.Context) error { return s.insertSent(ctx, s.w, p.m, p.evs, p.done) })
	}
	if !s.numberedEvents() {
		return alone(ctx)
	}
	sc := &s.sending
	sc.mu.Lock()
	if sc.busy < maxSending {
		sc.busy++
		sc.mu.Unlock()
		defer s.sendNext()
		return alone(ctx)
	}
	p.ctx, p.out = ctx, make(chan error, 1)
	sc.queue = append(sc.queue, p)
	sc.mu.Unlock()
	select {
	case err := <-p.out:
		return err
	case <-ctx.Done():
		sc.mu.Lock()
		sc.queue = slices.DeleteFunc(sc.queue, func(o *pendingSend) bool { return o == p })
		sc.mu.Unlock()
		return ctx.Err()
	}
}

// sendNext hands the statement slot of a send that ended to the sends
// that wait, on a goroutine of their own, or frees it.
func (s *Store) sendNext() {
	batch := s.takeSends()
	if batch == nil {
		return
	}
	s.sending.running.Go(func() {
		for batch != nil {
			s.sendAllCaught(batch)
			batch = s.takeSends()
		}
	})
}

// sendAllCaught is sendAll, on a goroutine where a panic would end the
// program: a panic gives the callers not yet answered errCombinedPanic.
func (s *Store) sendAllCaught(batch []*pendingSend) {
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

// takeSends takes the sends that wait (up to maxSent), or frees a
// statement slot and returns none.
func (s *Store) takeSends() []*pendingSend {
	sc := &s.sending
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if len(sc.queue) == 0 {
		sc.busy--
		return nil
	}
	n := min(len(sc.queue), maxSent)
	batch := slices.Clone(sc.queue[:n])
	sc.queue = slices.Delete(sc.queue, 0, n)
	return batch
}

// sendAll stores the sends of batch whose callers still wait, in one
// statement, or each alone when that fails with an error that no send of
// them can be blamed for (see sendCombiner), and gives each caller its
// outcome.
func (s *Store) sendAll(batch []*pendingSend) {
	batch = slices.DeleteFunc(batch, func(p *pendingSend) bool {
		if err := p.ctx.Err(); err != nil {
			p.out <- err
			return true
		}
		return false
	})
	if len(batch) == 0 {
		return
	}
	eachAlone := func() {
		var wg sync.WaitGroup
		for _, p := range batch {
			wg.Go(func() {
				p.out <- s.retry(p.ctx, func(ctx context.Context) error { return s.insertSent(ctx, s.w, p.m, p.evs, p.done) })
			})
		}
		wg.Wait()
	}
	if len(batch) == 1 {
		eachAlone()
		return
	}
	ctxs := make([]context.Context, len(batch))
	for i, p := range batch {
		ctxs[i] = p.ctx
	}
	ctx, stop := whileWaited(ctxs)
	defer stop()
	args, err := sentArrays(batch)
	if err == nil {
		_, err = s.execWrite(ctx, s.w, insertSentManySQL, args...)
	}
	switch {
	case err == nil:
		for _, p := range batch {
			p.out <- nil
		}
	case s.retryable(err) || !s.txFailure(err):
		eachAlone()
	default:
		for _, p := range batch {
			p.out <- err
		}
	}
}

// whileWaited returns a context with the values of ctxs[0] that ends once
// every one of ctxs has ended, or once stop is called.
func whileWaited(ctxs []context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctxs[0]))
	var waiting sync.WaitGroup
	waiting.Add(len(ctxs))
	stops := make([]func() bool, len(ctxs))
	for i, c := range ctxs {
		stops[i] = context.AfterFunc(c, waiting.Done)
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

// insertSentManySQL stores sends alone (insertSent) given as arrays, a
// column each (sentArrays): their messages, the rows of their
// conversations and memberships that are missing, their key records, their
// events and their tallies, in one statement.
const insertSentManySQL = `WITH sent AS MATERIALIZED (
		SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::timestamptz[], ?::text[])
		WITH ORDINALITY AS u(id, conv, contact, text, read_at, created_at, updated_at, ord)),
	c AS (INSERT INTO conversations (id, created_at, updated_at)
		SELECT DISTINCT ON (sent.conv) sent.conv, sent.created_at, sent.created_at FROM sent
		WHERE NOT EXISTS (SELECT 1 FROM conversations WHERE id = sent.conv)
		ORDER BY sent.conv, sent.ord
		ON CONFLICT (id) DO NOTHING),
	r AS (INSERT INTO conversation_members (conversation_id, contact_id)
		SELECT DISTINCT sent.conv, sent.contact FROM sent
		WHERE NOT EXISTS (SELECT 1 FROM conversation_members WHERE conversation_id = sent.conv AND contact_id = sent.contact)
		ON CONFLICT (conversation_id, contact_id) DO NOTHING),
	k AS (INSERT INTO idempotency_keys (scope, client_key, fingerprint, lock_token, result, created_at, expires_at)
		SELECT k.scope, k.key, k.fp, '', k.result, k.at, k.exp
		FROM unnest(?::text[], ?::text[], ?::text[], ?::bytea[], ?::timestamptz[], ?::timestamptz[]) AS k(scope, key, fp, result, at, exp)),
	ev AS (` + insertEventsArraysSQL + `),
	t AS (INSERT INTO message_tallies (message_id, conversation_id, contact_id, created_at)
		SELECT sent.id, sent.conv, sent.contact, sent.created_at FROM sent)
	INSERT INTO messages (id, conversation_id, contact_id, text, read_at, created_at, updated_at, attachment_count)
	SELECT sent.id, sent.conv, sent.contact, sent.text, NULLIF(sent.read_at, '')::timestamptz, sent.created_at,
		NULLIF(sent.updated_at, '')::timestamptz, 0
	FROM sent ORDER BY sent.ord`

// sentArrays returns the arguments of insertSentManySQL for batch.
func sentArrays(batch []*pendingSend) ([]any, error) {
	const layout = "2006-01-02 15:04:05.999999-07:00"
	var msgs [7][]string
	var keys [6][]string
	var evs []messaging.Event
	for _, p := range batch {
		m := p.m
		readAt, updatedAt := "", ""
		if !m.ReadAt.IsZero() {
			readAt = m.ReadAt.UTC().Format(layout)
		}
		if !m.UpdatedAt.IsZero() {
			updatedAt = m.UpdatedAt.UTC().Format(layout)
		}
		for c, v := range [7]string{m.ID, m.ConversationID, m.Contact.ID, m.Text, readAt, m.CreatedAt.UTC().Format(layout), updatedAt} {
			msgs[c] = append(msgs[c], v)
		}
		if d := p.done; d != nil {
			result := d.Result
			if result == nil {
				result = []byte("null") // storeKey's JSON of no result
			}
			for c, v := range [6]string{d.Scope, d.Key, d.Fingerprint, `\x` + hex.EncodeToString(result), d.CreatedAt.UTC().Format(layout), d.ExpiresAt.UTC().Format(layout)} {
				keys[c] = append(keys[c], v)
			}
		}
		evs = append(evs, p.evs...)
	}
	args := make([]any, 0, 18)
	for _, col := range msgs {
		args = append(args, pgArray(col))
	}
	for _, col := range keys {
		args = append(args, pgArray(col))
	}
	if len(evs) == 0 {
		return append(args, "{}", "{}", "{}", "{}", "{}"), nil
	}
	evArgs, err := eventsArrays(evs)
	if err != nil {
		return nil, err
	}
	return append(args, evArgs...), nil
}

// pgArray is vs as a PostgreSQL array literal.
func pgArray(vs []string) string {
	b := []byte{'{'}
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendArrayElem(b, v)
	}
	return string(append(b, '}'))
}
