package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math/bits"
	"slices"
	"strings"
	"sync"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging"
)

// Changes to one message wait for each other: each locks the message's
// row (PostgreSQL, MySQL) or the database (SQLite) from its first
// statement to its commit. When many callers change one message at once
// (a popular message's reactions), each would wait for the commit of the
// one before it, and the message would take one change per commit.
//
// UpdateMessage therefore combines the changes to one message that arrive
// while a transaction on it runs: they wait in a queue, and the next
// transaction makes all of them (up to maxCombined), in the order they
// arrived, each as it would be made alone (its own checks, events and
// idempotency record, the message as it left it), and commits them
// together. A change that fails makes the others run again without it,
// so that it commits nothing and they commit all they would have alone.
// A caller whose context ends while its change waits leaves the queue; a
// transaction already running goes on as long as one of its callers
// waits for it.
//
// A transaction holds one of the pool's connections; combining makes
// changes to one message take one connection, not one each.
type combiner struct {
	mu sync.Mutex
	// queues holds, for each message a transaction is changing, the
	// changes that arrived since, in order. A message is there (with an
	// empty queue) from the moment a transaction starts on it until the
	// last has found its queue empty.
	queues map[string][]*combined
}

// maxCombined bounds the changes one transaction makes.
const maxCombined = 64

// combined is a change waiting to be made, and its outcome.
type combined struct {
	ctx  context.Context
	ch   messaging.MessageChange
	lead chan []*combined // receives the changes this caller's goroutine makes next, itself first
	done chan struct{}    // closed once out and err are set
	out  messaging.Message
	err  error
}

// update makes ch on the message id, combined with the changes to it of
// other callers (see combiner).
func (s *Store) update(ctx context.Context, id string, ch messaging.MessageChange) (messaging.Message, error) {
	c := &combined{ctx: ctx, ch: ch, lead: make(chan []*combined, 1), done: make(chan struct{})}
	cb := &s.combine
	cb.mu.Lock()
	if cb.queues == nil {
		cb.queues = make(map[string][]*combined)
	}
	q, busy := cb.queues[id]
	if !busy {
		cb.queues[id] = nil
		cb.mu.Unlock()
		s.makeCombined(id, []*combined{c})
		<-c.done
		if p, ok := c.err.(*panicked); ok {
			panic(p.value)
		}
		return c.out, c.err
	}
	cb.queues[id] = append(q, c)
	cb.mu.Unlock()

	select {
	case batch := <-c.lead:
		s.makeCombined(id, batch)
	case <-c.done:
	case <-ctx.Done():
		cb.mu.Lock()
		if q := cb.queues[id]; slices.Contains(q, c) {
			cb.queues[id] = slices.DeleteFunc(q, func(o *combined) bool { return o == c })
			cb.mu.Unlock()
			return messaging.Message{}, ctx.Err()
		}
		cb.mu.Unlock()
		// Taken by a transaction, or handed the next one to run: the
		// others wait for it.
		select {
		case batch := <-c.lead:
			s.makeCombined(id, batch)
		case <-c.done:
		}
	}
	<-c.done
	if p, ok := c.err.(*panicked); ok {
		panic(p.value)
	}
	return c.out, c.err
}

// makeCombined makes batch's changes, then hands the changes that arrived
// meanwhile to the first of them, or ends the message's queue. A change
// that panics (its Check or its Record) fails, and its caller panics with
// the same value (makeTogether, update); should the transaction panic
// elsewhere, the callers of batch not yet answered get errCombinedPanic,
// the queue goes on, and the panic goes on in this goroutine.
func (s *Store) makeCombined(id string, batch []*combined) {
	defer s.handOff(id)
	defer func() {
		if p := recover(); p != nil {
			for _, c := range batch {
				select {
				case <-c.done:
				default:
					c.finish(messaging.Message{}, errCombinedPanic)
				}
			}
			panic(p)
		}
	}()
	s.makeAll(id, batch)
}

// errCombinedPanic is the error of a change whose transaction panicked
// on another change (makeCombined).
var errCombinedPanic = errors.New("sqlstore: a change made in the same transaction panicked")

// handOff hands the changes to the message id that wait to the first of
// them, or ends the message's queue.
func (s *Store) handOff(id string) {
	cb := &s.combine
	cb.mu.Lock()
	q := cb.queues[id]
	if len(q) == 0 {
		delete(cb.queues, id)
		cb.mu.Unlock()
		return
	}
	next := slices.Clone(q[:min(len(q), maxCombined)])
	cb.queues[id] = slices.Clone(q[len(next):])
	cb.mu.Unlock()
	next[0].lead <- next
}

// makeAll makes the changes of batch whose callers still wait, in order,
// in as few transactions as their failures allow, and gives each caller
// its outcome.
func (s *Store) makeAll(id string, batch []*combined) {
	todo, together := batch, true
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
		failed, err := s.makeTogether(id, todo, together)
		switch {
		case err == nil:
			return
		case failed == failedTogether: // again, one statement a change
			together = false
		case failed < 0: // the transaction's own failure: none was made
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

// makeTogether makes the changes of todo in one transaction, and gives
// each caller its outcome when it commits. Otherwise it returns the error
// and the index of the change that failed, or -1 when the transaction
// itself failed, and gives no outcome.
//
// With together, it sends consecutive quick reactions in one round trip
// (reactMany); when that fails, it returns failedTogether, and the caller
// makes them again one statement each, so that the error is the one
// change's that made it.
func (s *Store) makeTogether(id string, todo []*combined, together bool) (failed int, err error) {
	// The transaction runs while one of its callers waits for it.
	ctx, cancel := context.WithCancel(context.WithoutCancel(todo[0].ctx))
	defer cancel()
	var waiting sync.WaitGroup
	waiting.Add(len(todo))
	for _, c := range todo {
		stop := context.AfterFunc(c.ctx, waiting.Done)
		defer func() {
			if stop() {
				waiting.Done()
			}
		}()
	}
	go func() {
		waiting.Wait()
		cancel()
	}()

	outs := make([]messaging.Message, len(todo))
	err = s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		failed = -1
		var row messageRow // locked by the first change, and left by each as the next finds it
		var evs []messaging.Event
		for i := 0; i < len(todo); {
			// After the first, the quick reactions that follow each other
			// are sent together (reactMany).
			j := i
			for row.ID != "" && together && j < len(todo) && j-i < maxReactMany && s.quickMany(todo[j].ch) {
				j++
			}
			var made []reactedOne
			if j-i >= 2 {
				if made, err = s.reactMany(ctx, tx, id, todo[i:j]); err != nil {
					failed = failedTogether
					return err
				}
			} else {
				j = i + 1
			}
			for k := i; k < j; k++ {
				var m *reactedOne
				if made != nil {
					m = &made[k-i]
				}
				out, err := s.updateCaught(ctx, tx, id, todo[k].ch, &row, m, &evs)
				if err != nil {
					failed = k
					return err
				}
				outs[k] = out
			}
			i = j
		}
		failed = -1
		// The events of all, in the order of the changes, in as few
		// statements of as few shapes (prepared) as powers of two allow.
		for len(evs) > 0 {
			n := 1 << (bits.Len(uint(len(evs))) - 1)
			if err := s.insertEvents(ctx, tx, evs[:n]); err != nil {
				return err
			}
			evs = evs[n:]
		}
		// Not committed when every caller has left (ctx ends soon after,
		// but may not have yet).
		for _, c := range todo {
			if c.ctx.Err() == nil {
				return nil
			}
		}
		return todo[0].ctx.Err()
	})
	if err != nil {
		return failed, err
	}
	for i, c := range todo {
		c.finish(outs[i], nil)
	}
	return -1, nil
}

// panicked is the error of a change that panicked: its caller panics with
// value.
type panicked struct{ value any }

func (p *panicked) Error() string { return fmt.Sprintf("sqlstore: the change panicked: %v", p.value) }

// updateCaught is updateRecorded, with a panic of the change returned as a
// *panicked error: the transaction, which may hold the changes of other
// callers, rolls back, and they are made again without it.
func (s *Store) updateCaught(ctx context.Context, tx bun.Tx, id string, ch messaging.MessageChange, row *messageRow, made *reactedOne, evs *[]messaging.Event) (out messaging.Message, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &panicked{value: p}
		}
	}()
	return s.updateRecorded(ctx, tx, id, ch, row, made, evs)
}

// failedTogether is makeTogether's failed when reactMany failed.
const failedTogether = -2

// maxReactMany bounds the changes of one reactMany.
const maxReactMany = 32

// quickMany reports whether reactMany makes ch: a quickReaction change
// (PostgreSQL).
func (s *Store) quickMany(ch messaging.MessageChange) bool {
	_, _, ok := s.quickReaction(ch)
	return ok
}

// reactManyRow is a row of reactMany: a row of reactOne's statement for
// the change i.
type reactManyRow struct {
	I int `bun:"i"`
	reactOneRow
	Seq sql.NullInt64 `bun:"seq"`
}

// reactMany makes the quick reactions (quickMany) of cs on the message id,
// which tx has locked, in order, each by reactOne's statement, all in one
// round trip: one query of several statements, each of which sees what
// those before it did. The round trips, not the statements, set the pace
// of a popular message's changes: each waits for the server's process and
// then the caller's to be scheduled, 0.3 to 7 ms under load on two cores
// (BENCHMARKS.md). Such a query returns the rows of one statement: each
// change's statement leaves its rows in a temporary table of the
// connection, parley_reacted, and the last statement takes them all back.
// The statements are SQL prepared statements of the connection (EXECUTE),
// which a first statement, a DO block, prepares when the connection has
// not (prepareReactMany): parsing and planning each change's statement
// anew cost more than its round trip.
func (s *Store) reactMany(ctx context.Context, tx bun.Tx, id string, cs []*combined) ([]reactedOne, error) {
	var b strings.Builder
	var args []any
	shapes := map[string]string{} // prepared statement's name -> its statement
	for i, c := range cs {
		reactor, names, _ := s.quickReaction(c.ch)
		q, a := reactOneSQL(id, reactor, names, c.ch, i)
		q, _, ok := expandArgs(q, a, true)
		if !ok {
			return nil, errors.New("sqlstore: reactMany: a statement's placeholders do not match its arguments")
		}
		name := reactManyName(q)
		shapes[name] = q
		b.WriteString("EXECUTE " + name + "(")
		for k, v := range a {
			if k > 0 {
				b.WriteString(", ")
			}
			b.WriteString("?")
			args = append(args, v)
		}
		b.WriteString(");\n")
	}
	b.WriteString("WITH x AS (DELETE FROM pg_temp.parley_reacted RETURNING *) SELECT * FROM x ORDER BY i, seq")
	query := prepareReactMany(shapes) + ";\n" + b.String()
	var rows []reactManyRow
	if err := tx.NewRaw(query, bunArgs(args)...).Scan(ctx, &rows); err != nil {
		return nil, err
	}
	out := make([]reactedOne, len(cs))
	for i, c := range cs {
		var own []reactOneRow
		for len(rows) > 0 && rows[0].I == i {
			own, rows = append(own, rows[0].reactOneRow), rows[1:]
		}
		var err error
		if out[i], err = reactedOf(id, c.ch, own); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// reactManyName names the prepared statement of q, a statement of
// reactMany: by a hash of its text, so that another text (another version
// of this package, another shape) has another name.
func reactManyName(q string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(q))
	return fmt.Sprintf("parley_react_%016x", h.Sum64())
}

// prepareReactMany returns a DO block that creates the connection's table
// parley_reacted and prepares the statements of shapes (name -> text),
// each unless the connection has it. A prepared statement outlives the
// transaction, rolled back or not, and lasts as long as the connection.
func prepareReactMany(shapes map[string]string) string {
	var b strings.Builder
	b.WriteString(`DO $parley$ BEGIN
	IF to_regclass('pg_temp.parley_reacted') IS NULL THEN
		CREATE TEMP TABLE parley_reacted (i int, own bigint, names bigint, reactors bigint, updated bigint,
			text text, read_at timestamptz, updated_at timestamptz, name text, reactor_count bigint, embedded text, seq bigint);
	END IF;
`)
	for _, name := range slices.Sorted(maps.Keys(shapes)) {
		b.WriteString("\tIF NOT EXISTS (SELECT 1 FROM pg_prepared_statements WHERE name = '" + name + "') THEN\n\t\tEXECUTE $q$PREPARE " +
			name + " AS " + shapes[name] + "$q$;\n\tEND IF;\n")
	}
	b.WriteString("END $parley$")
	return b.String()
}

// finish gives c's caller its outcome.
func (c *combined) finish(out messaging.Message, err error) {
	c.out, c.err = out, err
	close(c.done)
}
