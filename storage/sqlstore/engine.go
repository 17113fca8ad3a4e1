package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// An engine is what one SQL engine does its own way, each in its own
// file (DESIGN.md §4.0): steps as methods, statements and capabilities in
// its dialectSQL. Shared code asks for them, never which engine it runs on.
type engine interface {
	name() string // "sqlite", "postgres" or "mysql": its migrations' directory
	dialect() *dialectSQL

	// opened keeps what the engine needs of w (writes) and r (reads).
	opened(s *store, w, r *sql.DB)
	// start starts what runs beside a store that stores messages, unless
	// it runs; Close stops it.
	start(s *store)
	// oneConversation is the condition that col is a page's one
	// conversation, read as a range (rangeOfOne), given as n arguments.
	oneConversation(s *store, col string) (cond string, n int)

	// initMigrations creates Options.Schema and bun/migrate's tables.
	initMigrations(ctx context.Context, s *store, m *migrate.Migrator) error
	// lockMigrations takes the migrations' lock where their transactions
	// cannot hold it, claimMigration where a migration's transaction does.
	lockMigrations(ctx context.Context, s *store) (unlock func(), err error)
	claimMigration(ctx context.Context, s *store, db bun.IConn) error

	// putContact stores the contact of args (contactCols'), replacing its id's.
	putContact(ctx context.Context, s *store, args []any) error
	// storeKey stores a keyed write's record in its transaction; a live
	// record in the way fails it with taken.
	storeKey(ctx context.Context, s *store, tx bun.Tx, done driver.IdempotencyRecord, taken error) error
	// search is SearchMessages in the scope searchConversations resolved.
	search(ctx context.Context, s *store, q driver.SearchQuery, convs []string, member string) ([]messaging.Message, bool, error)
	// sequence numbers the events committed since its last call, unless
	// numbersAtInsert (DESIGN.md §4.3).
	sequence(ctx context.Context, s *store) error
}

// engineDefaults are an engine's name and dialect, and the steps most
// engines share; an engine embeds it.
type engineDefaults struct {
	n string
	d *dialectSQL
}

func (e engineDefaults) name() string         { return e.n }
func (e engineDefaults) dialect() *dialectSQL { return e.d }

func (engineDefaults) opened(*store, *sql.DB, *sql.DB) {}
func (engineDefaults) start(*store)                    {}

// oneConversation is a range of col: conversation_id >= ? AND <= ?.
func (engineDefaults) oneConversation(_ *store, col string) (string, int) {
	return col + " >= ? AND " + col + " <= ?", 2
}

func (engineDefaults) initMigrations(ctx context.Context, _ *store, m *migrate.Migrator) error {
	return m.Init(ctx)
}

func (engineDefaults) lockMigrations(context.Context, *store) (func(), error)  { return func() {}, nil }
func (engineDefaults) claimMigration(context.Context, *store, bun.IConn) error { return nil }
func (engineDefaults) sequence(context.Context, *store) error                  { return nil }

// putContact is one upsert, atomic on its own: ON CONFLICT names the one
// key it updates on.
func (engineDefaults) putContact(ctx context.Context, s *store, args []any) error {
	return s.retry(ctx, func(ctx context.Context) error {
		const upsert = `INSERT INTO contacts (` + contactCols + `) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET username = excluded.username, phone_number = excluded.phone_number,
			avatar_url = excluded.avatar_url, last_active_at = excluded.last_active_at, created_at = excluded.created_at`
		// PostgreSQL may check the username's index before the id's, which
		// a concurrent insert of this contact violates: once more.
		for range 2 {
			if _, err := s.w.ExecContext(ctx, upsert, args...); !isUniqueViolation(err) {
				return err
			}
		}
		return errUsernameTaken // the only unique key ON CONFLICT leaves
	})
}

// storeKey is a conditional upsert (upsertKey).
func (engineDefaults) storeKey(ctx context.Context, s *store, tx bun.Tx, done driver.IdempotencyRecord, taken error) error {
	n, err := affected(s.execWrite(ctx, tx, upsertKey, done.Scope, done.Key, done.Fingerprint, done.Result,
		done.CreatedAt.UTC(), done.ExpiresAt.UTC(), done.Lock))
	if err == nil && n == 0 {
		return taken
	}
	return err
}

// dialectSQL is what differs in the text of an engine's statements, and
// what it can do that others cannot (bun's feature flags). A field marked
// "std" left empty is SQLite's and PostgreSQL's (withStandard).
type dialectSQL struct {
	schemas         bool // the tables may live in Options.Schema
	returning       bool // UPDATE and DELETE take RETURNING
	rowValues       bool // (a, b) < (?, ?) is a range of an index on (a, b); else seek's filter of ties
	subqueryBounds  bool // a subquery may bound an index's range (a cursor by id)
	numbersAtInsert bool // an event's seq is given at insert, in commit order; else by sequence
	arrays          bool // a batch of rows is one statement of arrays, a column each (unnest)
	sendsInTx       bool // sends waiting for the one writer share a transaction (sends.go)
	// A page of one conversation reads it as a range always (rangeOfOne),
	// only after a cursor (rangeAfterCursor), or by "=" (list.go).
	rangeOfOne, rangeAfterCursor bool
	txOptions, snapshotOptions   *sql.TxOptions // write transactions', a copy's read's

	forUpdate string // locks a SELECT's rows ("" where a transaction holds the database)
	skip      string // (std) after an INSERT's values, skips a row whose key is taken (skipTail)
	// insertNew (std) begins, insertNewTail ends, an INSERT that skips a
	// row whose key is taken and counts only the rows it inserted.
	insertNew, insertNewTail string
	listedAt                 string // if set, orders the list in updated_at's place (DESIGN.md §4.12)
	memberOf                 string // (std) conversation column %[1]s is one of contact ?'s
	beforeSlash              string // column %[1]s up to its first slash
	lockMessage              string // reads a message's row and locks it (messageOwnCols without returning)
	reactions                string // reads the embedded reactors, ordered by reactionsOrder (std)
	reactionsOrder           string
	eventLog                 string // (std) the table events are inserted into
	eventGate                string // if set, the first value of an insert into eventLog
	// pruneEvents deletes the events up to seq ?, and their log rows;
	// prunedPerEvent, if set, is the rows it counts an event for.
	pruneEvents    string
	prunedPerEvent int64
	eventsOfFew    string // (std) the FROM of a page of a few conversations' events
	// countSend (std) counts n messages of a conversation (id, first's time,
	// newest's time, n, newest's id); countOwn (std), (conversation, contact, n).
	countSend, countOwn string
	addMember           string // (std) makes a member (conversation, contact, time)
	// takers (std) makes contacts take part in threads from a time, a
	// "(?, ?, ?)" each of %[1]s (thread key, contact, time).
	takers   string
	claimKey string // (std) inserts an upload's claim of its key unless a row is in its way
	// pruneKeys (std) deletes up to %[1]d records of keys expired before a
	// time, given pruneKeyArgs (std) times.
	pruneKeys    string
	pruneKeyArgs int
	// overriding comes before the VALUES of Load's inserts of identity
	// columns; resetSeq, if set, moves table %[1]s's seq past its greatest.
	overriding, resetSeq string
	wordMark             string // written before every word of messages.search_words
}

// skipTail returns skip, key in place of its %[1]s (a column of the key).
func (d *dialectSQL) skipTail(key string) string {
	if !strings.Contains(d.skip, "%") {
		return d.skip
	}
	return fmt.Sprintf(d.skip, key)
}

// withStandard returns d with the statements ("std") it leaves empty as
// SQLite and PostgreSQL write them.
func withStandard(d dialectSQL) dialectSQL {
	d.skip = cmp.Or(d.skip, " ON CONFLICT DO NOTHING")
	d.insertNew = cmp.Or(d.insertNew, "INSERT INTO")
	// Not EXISTS, which SQLite makes a Bloom filter of every membership and
	// MySQL a semi-join sorting them all: this walks the time index.
	d.memberOf = cmp.Or(d.memberOf, "(SELECT cm.is_member FROM conversation_members AS cm WHERE cm.conversation_id = %[1]s AND cm.contact_id = ?) = TRUE")
	d.reactionsOrder = cmp.Or(d.reactionsOrder, " ORDER BY n.message_id, n.seq")
	d.eventLog = cmp.Or(d.eventLog, "event_log")
	d.eventsOfFew = cmp.Or(d.eventsOfFew, "events AS e")
	d.countSend = cmp.Or(d.countSend, `INSERT INTO conversations (id, created_at, updated_at, message_count, last_message_id)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET message_count = conversations.message_count + EXCLUDED.message_count,
		last_message_id = CASE WHEN `+newest+` THEN EXCLUDED.last_message_id ELSE conversations.last_message_id END,
		updated_at = CASE WHEN `+newest+` THEN EXCLUDED.updated_at ELSE conversations.updated_at END`)
	d.countOwn = cmp.Or(d.countOwn, `INSERT INTO conversation_members (conversation_id, contact_id, own_count) VALUES (?, ?, ?)
		ON CONFLICT (conversation_id, contact_id) DO UPDATE SET own_count = conversation_members.own_count + EXCLUDED.own_count`)
	d.addMember = cmp.Or(d.addMember, `INSERT INTO conversation_members (conversation_id, contact_id, is_member, joined_at) VALUES (?, ?, TRUE, ?)
		ON CONFLICT (conversation_id, contact_id) DO UPDATE SET joined_at = CASE WHEN conversation_members.is_member
		THEN conversation_members.joined_at ELSE EXCLUDED.joined_at END, is_member = TRUE`)
	d.takers = cmp.Or(d.takers, `INSERT INTO conversation_members (conversation_id, contact_id, joined_at) VALUES %[1]s
		ON CONFLICT (conversation_id, contact_id) DO UPDATE SET joined_at = EXCLUDED.joined_at
		WHERE conversation_members.joined_at IS NULL`)
	d.claimKey = cmp.Or(d.claimKey, d.insertNew+` idempotency_keys (scope, client_key, fingerprint, lock_token, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?)`+d.insertNewTail)
	// The outer condition again: PostgreSQL rechecks only the DELETE's own
	// on a row a keyed write renewed while it waited, and a renewed record stays.
	d.pruneKeys = cmp.Or(d.pruneKeys, `DELETE FROM idempotency_keys WHERE expires_at <= ? AND (scope, client_key) IN
		(SELECT scope, client_key FROM idempotency_keys WHERE expires_at <= ? ORDER BY expires_at LIMIT %[1]d)`)
	d.pruneKeyArgs = cmp.Or(d.pruneKeyArgs, 2)
	return d
}

// engineOf returns the engine of a bun dialect, or an error matching
// messaging.ErrUnimplemented.
func engineOf(op string, name dialect.Name) (engine, error) {
	switch name {
	case dialect.SQLite:
		return sqliteEngine{engineDefaults{"sqlite", &sqliteSQL}}, nil
	case dialect.PG:
		return &postgresEngine{engineDefaults: engineDefaults{"postgres", &postgresSQL}}, nil
	case dialect.MySQL:
		return mysqlEngine{engineDefaults{"mysql", &mysqlSQL}}, nil
	}
	return nil, &messaging.Error{Kind: messaging.ErrUnimplemented, Op: op, Message: "unsupported SQL dialect " + name.String()}
}
