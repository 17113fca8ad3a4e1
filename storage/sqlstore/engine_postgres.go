package sqlstore

import (
	"context"
	"crypto/md5"
	"database/sql"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// postgresEngine is PostgreSQL through pgx (package postgres; DESIGN.md
// §4.6). It keeps the size of messages for oneConversation.
type postgresEngine struct {
	engineDefaults
	rows    atomic.Int64 // messages by the planner's statistics; 0 until read
	checked atomic.Int64 // when rows was last read (UnixNano)
}

var postgresSQL = withStandard(dialectSQL{
	schemas:         true,
	returning:       true,
	rowValues:       true,
	subqueryBounds:  true,
	arrays:          true,
	rangeOfOne:      true,
	snapshotOptions: &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
	forUpdate:       " FOR UPDATE",
	insertNewTail:   " ON CONFLICT DO NOTHING",
	listedAt:        "listed_at", // a send's update is HOT but once a second
	// EXISTS is the probe of the members' key that a list wants.
	memberOf:    "EXISTS (SELECT 1 FROM conversation_members AS cm WHERE cm.conversation_id = %[1]s AND cm.contact_id = ? AND cm.is_member = TRUE)",
	beforeSlash: "split_part(%[1]s, '/', 1)",
	lockMessage: "SELECT " + messageCols + " FROM " + messageFrom + " WHERE m.id = ? FOR UPDATE OF m",
	// A lookup of each username, not a join, which the planner makes a
	// hash of every contact (DESIGN.md §4.5).
	reactions: reactionsBySQL(`SELECT string_agg(COALESCE((SELECT c.username FROM contacts AS c WHERE c.id = r.contact_id), ''), chr(31) ORDER BY r.seq)
		FROM reactions AS r WHERE r.message_id = n.message_id AND r.name = n.name AND r.seq <= n.head_seq`),
	// The log's rows found by their copies: only what was copied.
	pruneEvents: `WITH b AS (SELECT CAST(? AS bigint) AS top),
		l AS (DELETE FROM event_log AS l USING events AS e, b WHERE e.seq > 0 AND e.seq <= b.top AND l.pos = e.pos)
		DELETE FROM events USING b WHERE events.seq > 0 AND events.seq <= b.top`,
	// An upload's claim commits without waiting for the WAL flush (DESIGN.md §4.8).
	claimKey: `INSERT INTO idempotency_keys (scope, client_key, fingerprint, lock_token, created_at, expires_at)
		SELECT ?, ?, ?, ?, ?::timestamptz, ?::timestamptz FROM (SELECT set_config('synchronous_commit', 'off', true)) AS async
		ON CONFLICT DO NOTHING`,
	overriding: "OVERRIDING SYSTEM VALUE ",
	resetSeq:   "SELECT setval(pg_get_serial_sequence('%[1]s', 'seq'), (SELECT MAX(seq) FROM %[1]s))",
})

// From hiddenRangeRows messages (pg_class.reltuples) a page reads its
// conversation as a range of two bounds no plan sees, below as an array of
// one (DESIGN.md §4.7).
const hiddenRangeRows, hiddenConversation = 80_000, "(SELECT CAST(? AS text))"

// oneConversation reads the statistics at most once a minute, by one caller.
func (e *postgresEngine) oneConversation(s *store, col string) (string, int) {
	if at := e.checked.Load(); time.Since(time.Unix(0, at)) >= time.Minute && e.checked.CompareAndSwap(at, time.Now().UnixNano()) {
		// A page's query is built without the caller's context. On
		// database/sql: no bun hook counts it as a page's.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		var rows int64
		err := s.r.DB.QueryRowContext(ctx, "SELECT COALESCE((SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass('messages')), -1)").Scan(&rows)
		cancel()
		if err == nil {
			e.rows.Store(rows)
		}
	}
	if e.rows.Load() >= hiddenRangeRows {
		return col + " >= " + hiddenConversation + " AND " + col + " <= " + hiddenConversation, 2
	}
	return col + " = ANY(ARRAY[" + hiddenConversation + "])", 1
}

// initMigrations does Migrator.Init's work in a transaction that holds the
// migration lock: two processes creating one table at once can fail.
func (e *postgresEngine) initMigrations(ctx context.Context, s *store, m *migrate.Migrator) error {
	return s.w.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := e.claimMigration(ctx, s, tx); err != nil {
			return err
		}
		if s.opts.Schema != "" { // a valid identifier (schemaName, checked by Open)
			if _, err := tx.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+s.opts.Schema); err != nil {
				return err
			}
		}
		_, err := tx.NewCreateTable().Model((*migrate.Migration)(nil)).ModelTableExpr(migrationsTable).IfNotExists().Exec(ctx)
		if err == nil {
			_, err = tx.NewCreateIndex().Unique().TableExpr(migrationsTable).Index(migrationsTable + "_name_unique").Column("name").IfNotExists().Exec(ctx)
		}
		if err == nil {
			_, err = tx.NewCreateTable().Model((*migrationLock)(nil)).ModelTableExpr(migrationsLocksTable).IfNotExists().Exec(ctx)
		}
		return err
	})
}

// claimMigration takes the lock of the schema (Options.Schema or the
// current one) until db's transaction ends, as PgBouncer needs.
func (*postgresEngine) claimMigration(ctx context.Context, s *store, db bun.IConn) error {
	_, err := db.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext('parley.migrate:' || current_database() || '.' || COALESCE(?, current_schema(), '')))",
		nullable(s.opts.Schema))
	return err
}

// sequence calls parley_sequence (DESIGN.md §4.3) while a call reads a full batch.
func (*postgresEngine) sequence(ctx context.Context, s *store) error {
	for {
		s.seqMu.Lock() // one sequencer of this process at a time; others wait, then find less to do
		var n int
		err := s.retry(ctx, func(ctx context.Context) error {
			return s.w.QueryRowContext(ctx, "SELECT parley_sequence(?)", maxSequence).Scan(&n)
		})
		s.seqMu.Unlock()
		if err != nil || n < maxSequence {
			return err
		}
	}
}

// reactRow is a row of parley_react's answer (migrations/postgres): one a
// name of the message after a step, in order, or one without a name.
type reactRow struct {
	Step      int       `bun:"r_step"`     // from 1
	Own       int       `bun:"r_own"`      // the reactor's names before a step that adds
	Names     int       `bun:"r_names"`    // the change in names
	Reactors  int       `bun:"r_reactors"` // the change in reactor rows
	Updated   int       `bun:"r_updated"`  // 1: the step wrote the message's row, which follows
	Text      string    `bun:"r_text"`
	ReadAt    time.Time `bun:"r_read_at"`
	UpdatedAt time.Time `bun:"r_updated_at"`
	// A name after the step, as reactionRow has it; Same: its embedded
	// reactors are the previous step's.
	Name     sql.NullString `bun:"r_name"`
	Count    sql.NullInt64  `bun:"r_count"`
	Embedded sql.NullString `bun:"r_embedded"`
	Same     bool           `bun:"r_same"`
}

// reactSQL calls parley_react: the message, the steps' contacts, first
// added name, number added, the added names, name taken back, time, updated_at.
const reactSQL = `SELECT * FROM parley_react(?::text, ?::text[], ?::integer[], ?::integer[], ?::text[], ?::text[], ?::timestamptz[], ?::text[])`

// reactPostgres makes the reaction changes of chs on the locked message id
// in one call of parley_react (DESIGN.md §4.5), and returns what each
// made; each change's Check runs after (updateMessage).
func (s *store) reactPostgres(ctx context.Context, tx bun.Tx, id string, chs []driver.MessageChange) ([]reactedOne, error) {
	steps, added := make(pgArrays, 6), make(pgArrays, 1)
	var stepOf []int // the change of each step
	names := 0
	for k, ch := range chs {
		rc := ch.Reactions
		updated := ""
		if !ch.UpdatedAt.IsZero() {
			updated = driverTime(ch.UpdatedAt)
		}
		step := func(first, n int, name string, at time.Time) {
			for c, v := range [...]string{rc.ContactID, strconv.Itoa(first), strconv.Itoa(n), name, driverTime(at), updated} {
				steps.add(c, v)
			}
			stepOf = append(stepOf, k)
		}
		var add []string
		for _, n := range rc.Add {
			if !slices.Contains(add, n) {
				add = append(add, n)
				added.add(0, n)
			}
		}
		if len(add) > 0 {
			at := rc.At
			if at.IsZero() {
				at = time.Now()
			}
			step(names+1, len(add), "", at)
			names += len(add)
		}
		for _, name := range rc.Remove {
			step(0, 0, name, time.Time{})
		}
	}
	out := make([]reactedOne, len(chs))
	if len(stepOf) == 0 {
		return out, nil
	}
	var rows []reactRow
	args := steps[3:].args(added.args(steps[:3].args([]any{id})))
	if err := s.txRead(ctx, tx, &rows, reactSQL, args...); err != nil {
		return nil, err
	}
	embedded := make(map[string]sql.NullString) // each name's, as the last step read them
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].Step == rows[i].Step {
			j++
		}
		step := rows[i].Step - 1
		if step < 0 || step >= len(stepOf) {
			return nil, fmt.Errorf("sqlstore: parley_react returned step %d of %d", step+1, len(stepOf))
		}
		k := stepOf[step]
		o, r := &out[k], rows[i]
		o.rc.names += r.Names
		if len(chs[k].Reactions.Add) > 0 {
			if step == 0 || stepOf[step-1] != k { // the change's first step, its adds: as react counts them
				o.rc.reactorBefore, o.rc.reactorAfter = r.Own, r.Own+r.Reactors
			} else {
				o.rc.reactorAfter += r.Reactors
			}
		}
		if r.Updated != 0 {
			o.stored = &updatedRow{Text: r.Text, ReadAt: r.ReadAt, UpdatedAt: r.UpdatedAt}
		}
		o.reactions = make([]reactionRow, 0, j-i)
		for _, row := range rows[i:j] {
			if !row.Name.Valid {
				continue
			}
			e := row.Embedded
			if row.Same {
				e = embedded[row.Name.String]
			} else {
				embedded[row.Name.String] = e
			}
			o.reactions = append(o.reactions, reactionRow{MessageID: id, Name: row.Name.String, Count: int(row.Count.Int64), Reactors: e})
		}
		i = j
	}
	return out, nil
}

// reactedOne is what reactPostgres made of a change: the counts, the
// message's row as it left it (nil if unwritten) and its reactions.
type reactedOne struct {
	rc        reacted
	stored    *updatedRow
	reactions []reactionRow
}

// pgSearchVector and pgConversationVector are the expressions of the
// indexes messages_search (m's words) and messages_search_conversation
// (qualified by m's conversation, pgQualified).
const (
	pgSearchVector       = "array_to_tsvector(string_to_array(m.search_words, ' '))"
	pgConversationVector = "array_to_tsvector(string_to_array(regexp_replace(m.search_words, '[^ ]+', " +
		"left(md5(split_part(m.conversation_id, '/', 1)), 8) || '\\&', 'g'), ' '))"
)

// pgQualified returns word's lexeme in conv in messages_search_conversation:
// the first 8 hex digits of conv's md5, then word.
func pgQualified(conv, word string) string {
	h := md5.Sum([]byte(conv))
	return hex.EncodeToString(h[:4]) + word
}

// tsLexeme returns the tsquery of the one lexeme s, quoted.
func tsLexeme(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", "''") + "'"
}

// pgSearchMatch returns the condition on m that its words match q, with its
// arguments; of convs too, if any, by lexemes qualified by them, so that GIN
// reads their entries alone (DESIGN.md §4.10). The rows' conversations are
// tested too: two conversations' hashes may meet.
func pgSearchMatch(q driver.SearchQuery, convs []string) (string, []any) {
	var terms []string
	term := func(word, suffix string) {
		if len(convs) == 0 {
			terms = append(terms, tsLexeme(word)+suffix)
			return
		}
		alts := make([]string, len(convs))
		for i, c := range convs {
			alts[i] = tsLexeme(pgQualified(c, word)) + suffix
		}
		terms = append(terms, "("+strings.Join(alts, " | ")+")")
	}
	for _, w := range q.Words {
		term(w, "")
	}
	if q.Prefix != "" {
		term(q.Prefix, ":*")
	}
	tsq := strings.Join(terms, " & ")
	if len(convs) == 0 {
		return pgSearchVector + " @@ ?::tsquery", []any{tsq}
	}
	return pgConversationVector + " @@ ?::tsquery AND split_part(m.conversation_id, '/', 1) IN (?)", []any{tsq, idList(convs)}
}

// search is SearchMessages on PostgreSQL.
func (*postgresEngine) search(ctx context.Context, s *store, q driver.SearchQuery, convs []string, member string) ([]messaging.Message, bool, error) {
	var named []string
	if nameable(q.All, member, convs) {
		// Named in the match (pgSearchMatch): no other condition.
		named, q.All = convs, true
	}
	match, args := pgSearchMatch(q, named)
	p := s.matchPage(q, member, convs, match, args)
	if named != nil {
		// Every match from GIN, then sorted: OFFSET 0 keeps the planner
		// from walking messages_created and testing each row, which reads
		// every newer row of other conversations (DESIGN.md §4.10).
		p.from = "(SELECT * FROM messages AS m WHERE " + match + " OFFSET 0) AS m LEFT JOIN contacts AS c ON c.id = m.contact_id"
		p.fromArgs, p.branches = args, []branch{{}}
	}
	query, qargs := s.pageSQL(p)
	return s.searchPage(ctx, q, query, qargs)
}
