package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math/bits"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/internal/pgtx"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
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
// idempotency record, the message as the one before left it), and
// commits them together. The transactions of a message run on a goroutine
// of their own, one after the other, while the callers wait for their
// outcomes.
//
// Failures are the failing change's own: a change that fails (its Check,
// a row it does not find, a conflict, a panic of its Check or Record)
// makes the others run again without it, so that it commits nothing and
// they commit all they would have alone; a failure of the round trip of
// several changes (reactMany) makes the transaction run again with one
// statement a change; a failure that no one change can be blamed for (the
// events' insert, a transaction that did not begin for another reason)
// makes each run alone; a failure of the transaction itself (the database
// unreachable or too busy, a lock or statement timeout, a commit that
// failed) is every caller's.
//
// A caller whose context ends returns the context's error at once. A
// change still waiting is then not made; one that a transaction has taken
// may be, as a change whose context ends during its commit may be. A
// transaction goes on while one of its callers waits, and is rolled back
// (or not committed) once none does.
//
// A transaction holds one of the pool's connections; combining makes
// changes to one message take one connection, not one each. Store.Close
// waits for the transactions under way (running).
type combiner struct {
	running sync.WaitGroup // the goroutines of run
	mu      sync.Mutex
	// queues holds, for each message a transaction is changing, the
	// changes that arrived since, in order. A message is there (with an
	// empty queue) from the moment a transaction starts on it until the
	// last has found its queue empty.
	queues map[string][]*combined
	// conns holds what reactMany knows of each connection, by the pid of
	// its server process.
	conns map[int]*connState
}

// connState is what reactMany knows of a connection.
type connState struct {
	statements map[string]bool // the names of reactMany's statements it has prepared
	table      bool            // it has the table parley_reacted (created by a transaction that committed)
	offUntil   time.Time       // reactMany failed there: not tried again before then
}

// reactManyOff is how long reactMany is not tried again on a connection
// where it failed otherwise than by a lost statement or table.
const reactManyOff = time.Minute

// maxConns bounds combiner.conns: past it, it starts again empty (the
// next reactMany of each connection asks the server).
const maxConns = 1024

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
	if p, ok := c.err.(*panicked); ok {
		panic(p.value)
	}
	return c.out, c.err
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

// makeCaught is makeAll, on run's goroutine, where a panic would end the
// program: a panic outside the changes (a change's own is its failure,
// updateCaught) gives the callers not yet answered errCombinedPanic.
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
	todo, many := batch, true
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
		failed, err := s.makeTogether(id, todo, many)
		switch {
		case err == nil:
			return
		case failed == failedMany: // again, one statement a change
			many = false
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
	failedMany     = -3 // reactMany's round trip: made again, one statement a change
)

// makeTogether makes the changes of todo in one transaction, and gives
// each caller its outcome when it commits. Otherwise it returns the error
// and what failed: the index of the change that failed, failedAll,
// failedTogether or failedMany; and gives no outcome. With many,
// consecutive quick reactions go in one round trip (reactMany).
func (s *store) makeTogether(id string, todo []*combined, many bool) (failed int, err error) {
	// The transaction runs while one of its callers waits for it.
	ctxs := make([]context.Context, len(todo))
	for i, c := range todo {
		ctxs[i] = c.ctx
	}
	ctx, stop := whileWaited(ctxs)
	defer stop()

	outs := make([]messaging.Message, len(todo))
	ran := false       // the transaction began
	backend := 0       // the connection's server process, when the lock read it
	tableMade := false // reactMany created the table parley_reacted
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
		ran, backend, tableMade = true, 0, false
		failed = failedTogether
		var row messageRow // locked by the first change, and left by each as the next finds it
		var evs []messaging.Event
		if len(todo) > 1 && s.quickMany(todo[0].ch) && s.quickMany(todo[1].ch) {
			// Locked first, so that the first changes go in one round trip;
			// a message not found is every change's.
			var err error
			if backend, err = s.lockMessageBackend(ctx, tx, id, &row); err != nil {
				failed = failedAll
				return err
			}
		}
		for i := 0; i < len(todo); {
			// Once the row is locked, the quick reactions that follow each
			// other are sent together (reactMany).
			j := i
			for many && row.ID != "" && s.reactManyOn(backend) && j < len(todo) && j-i < maxReactMany && s.quickMany(todo[j].ch) {
				j++
			}
			var made []reactedOne
			if j-i >= 2 {
				var err error
				var created bool
				if made, created, err = s.reactMany(ctx, tx, id, todo[i:j], i, backend); err != nil {
					return blame(failedMany, err)
				}
				tableMade = tableMade || created
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
					return blame(k, err)
				}
				outs[k] = out
			}
			i = j
		}
		// Not committed when every caller has left (ctx ends soon after,
		// but may not have yet).
		if !slices.ContainsFunc(todo, func(c *combined) bool { return c.ctx.Err() == nil }) {
			failed = failedAll
			return todo[0].ctx.Err()
		}
		// The events of all, in the order of the changes: on PostgreSQL in
		// one statement, which commits the transaction too where the
		// connections allow (internal/pgtx: a round trip saved), elsewhere
		// in as few statements of as few shapes (prepared) as powers of
		// two allow.
		if s.flavor == flavorPostgres && s.numberedEvents() && (len(evs) > 1 || len(evs) == 1 && s.foldsTx) {
			args, err := eventsArrays(evs)
			if err == nil && s.foldsTx {
				// An error that the server answered committed nothing (a
				// failed statement aborts the transaction; a failed COMMIT
				// rolls it back): the changes can be made again. Any other
				// matches pgtx.ErrCommitUnknown, the transaction's failure
				// (txFailure): they may have been made.
				_, err = tx.ExecContext(ctx, insertEventsArraysSQL+pgtx.CommitSuffix, args...)
			} else if err == nil {
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
	if tableMade {
		s.reactManyCommitted(backend)
	}
	for i, c := range todo {
		c.finish(outs[i], nil)
	}
	return failedAll, nil
}

// txFailure reports whether err, met by a transaction of combined
// changes, is the transaction's rather than one change's: the database
// unreachable or too busy, a lock or statement timeout, the transaction's
// context ended, a COMMIT whose outcome is unknown.
func (s *store) txFailure(err error) bool {
	if unavailable(err) || s.retryable(err) || errors.Is(err, context.Canceled) || errors.Is(err, pgtx.ErrCommitUnknown) {
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

// updateCaught is updateRecorded, with a panic of the change returned as a
// *panicked error: the transaction, which may hold the changes of other
// callers, rolls back, and they are made again without it.
func (s *store) updateCaught(ctx context.Context, tx bun.Tx, id string, ch driver.MessageChange, row *messageRow, made *reactedOne, evs *[]messaging.Event) (out messaging.Message, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &panicked{value: p}
		}
	}()
	return s.updateRecorded(ctx, tx, id, ch, row, made, evs)
}

// maxReactMany bounds the changes of one reactMany.
const maxReactMany = 32

// quickMany reports whether reactMany makes ch: a quickReaction change
// (PostgreSQL).
func (s *store) quickMany(ch driver.MessageChange) bool {
	return s.quickReaction(ch)
}

// reactManyRow is a row of reactMany: a row of reactOne's statement for
// the change i.
type reactManyRow struct {
	I int `bun:"i"`
	reactOneRow
	Seq sql.NullInt64 `bun:"seq"`
}

// reactMany makes the quick reactions (quickMany) of cs, the changes
// base, base+1, … of a transaction, on the message id, which tx has
// locked, in order, each by reactOne's statement, all in one round trip:
// one query of several statements, each of which sees what those before
// it did. The round trips, not the statements, set the pace of a popular
// message's changes: each waits for the server's process and then the
// caller's to be scheduled, 0.3 to 7 ms under load on two cores
// (BENCHMARKS.md). Such a query returns the rows of one statement: each
// change's statement leaves its rows in a temporary table of the
// connection, parley_reacted (emptied by each commit), and the last
// statement reads them.
//
// The statements are SQL prepared statements of the connection (EXECUTE),
// which a first statement, a DO block, prepares when the connection has
// not (prepareReactMany): parsing and planning each change's statement
// anew cost more than its round trip. backend, when not 0, is the pid of
// the connection's server process (lockMessageBackend): the block is left
// out when combiner.conns says that the connection has what it needs (it
// costs the server about as much as two changes), and prepares only what
// it lacks otherwise. It reports whether the block created the table,
// which the connection keeps once the transaction commits
// (reactManyCommitted). Should the connection have lost them (a reset, a
// pid reused), the query fails and the connection is forgotten; should it
// fail otherwise (no right to create temporary tables, a table of that
// name already there), reactMany is not tried there for reactManyOff, and
// the failure is logged. Either way the transaction is made again, one
// statement a change (failedMany).
func (s *store) reactMany(ctx context.Context, tx bun.Tx, id string, cs []*combined, base, backend int) (made []reactedOne, createdTable bool, err error) {
	var b strings.Builder
	var args []any
	shapes := map[string]string{} // prepared statement's name -> its statement
	for i, c := range cs {
		q, a := reactOneSQL(id, c.ch, base+i)
		q, _, ok := expandArgs(q, a, true)
		if !ok {
			return nil, false, errors.New("sqlstore: reactMany: a statement's placeholders do not match its arguments")
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
	// Rows of the transaction's earlier reactMany are there too: i tells.
	b.WriteString("SELECT * FROM pg_temp.parley_reacted WHERE i >= " + strconv.Itoa(base) + " ORDER BY i, seq")
	query := b.String()
	cb := &s.combine
	cb.mu.Lock()
	table := false
	if st := cb.conns[backend]; backend != 0 && st != nil {
		table = st.table
		for name := range shapes {
			if st.statements[name] {
				delete(shapes, name)
			}
		}
	}
	cb.mu.Unlock()
	if !table || len(shapes) > 0 {
		query = prepareReactMany(shapes) + ";\n" + query
	}
	var rows []reactManyRow
	err = tx.NewRaw(query, bunArgs(args)...).Scan(ctx, &rows)
	if backend != 0 {
		s.reactManyDone(ctx, backend, shapes, err)
	}
	if err != nil {
		return nil, false, err
	}
	out := make([]reactedOne, len(cs))
	for i, c := range cs {
		var own []reactOneRow
		for len(rows) > 0 && rows[0].I == base+i {
			own, rows = append(own, rows[0].reactOneRow), rows[1:]
		}
		if out[i], err = reactedOf(id, c.ch, own); err != nil {
			return nil, false, err
		}
	}
	return out, !table, nil
}

// reactManyOn reports whether reactMany may be tried on the connection of
// the server process backend (0: not known).
func (s *store) reactManyOn(backend int) bool {
	cb := &s.combine
	cb.mu.Lock()
	defer cb.mu.Unlock()
	st := cb.conns[backend]
	return st == nil || time.Now().After(st.offUntil)
}

// reactManyDone records what reactMany's query, which ended with err, left
// on the connection of backend: the statements of shapes, prepared; or,
// when it failed, that the connection lost what it had (forgotten) or
// cannot run it (off for reactManyOff).
func (s *store) reactManyDone(ctx context.Context, backend int, shapes map[string]string, err error) {
	cb := &s.combine
	cb.mu.Lock()
	defer cb.mu.Unlock()
	// room empties conns when it is full (maxConns).
	room := func() {
		if cb.conns == nil || len(cb.conns) >= maxConns {
			cb.conns = make(map[int]*connState)
		}
	}
	switch {
	case err == nil:
		room()
		st := cb.conns[backend]
		if st == nil {
			st = &connState{statements: map[string]bool{}}
			cb.conns[backend] = st
		}
		for name := range shapes {
			st.statements[name] = true
		}
	case pgCode(err) == "26000" || pgCode(err) == "42P01" || s.txFailure(err):
		// A statement or the table gone (invalid_sql_statement_name,
		// undefined_table), or not the connection's failure.
		delete(cb.conns, backend)
	default:
		room()
		cb.conns[backend] = &connState{statements: map[string]bool{}, offUntil: time.Now().Add(reactManyOff)}
		s.opts.Logger.WarnContext(ctx, "sqlstore: combined reactions cannot be sent in one round trip on this connection; sent one statement each for a while",
			"backend_pid", backend, "for", reactManyOff, "err", err)
	}
}

// reactManyCommitted records that the connection of backend keeps the
// table parley_reacted that its committed transaction created.
func (s *store) reactManyCommitted(backend int) {
	cb := &s.combine
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if st := cb.conns[backend]; backend != 0 && st != nil {
		st.table = true
	}
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
			text text, read_at timestamptz, updated_at timestamptz, name text, reactor_count bigint, embedded text, seq bigint)
			ON COMMIT DELETE ROWS;
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
