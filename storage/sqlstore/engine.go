package sqlstore

import (
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

// An engine is what one SQL engine does its own way (DESIGN.md §4.0): the
// steps written as code, here, and its dialect's statements and
// capabilities, in dialectSQL. Shared code asks for them, never which
// engine it runs on. Each engine lives in its own file: engine_sqlite.go,
// engine_postgres.go, engine_mysql.go.
type engine interface {
	// name is "sqlite", "postgres" or "mysql", the directory of its
	// migrations.
	name() string
	// dialect returns its statements and capabilities.
	dialect() *dialectSQL

	// opened sets up what the engine keeps for a store that Open made
	// over w (writes) and r (other reads; w but for SQLite files).
	opened(s *store, w, r *sql.DB)
	// start starts what runs beside a store once it stores messages
	// (SQLite's search indexer), unless it runs; Close stops it.
	start(s *store)
	// oneConversation returns the condition that col holds a page's one
	// conversation where the page reads it as a range (rangeOfOne), with
	// the conversation as n arguments.
	oneConversation(s *store, col string) (cond string, n int)

	// initMigrations creates Options.Schema and bun/migrate's tables.
	initMigrations(ctx context.Context, s *store, m *migrate.Migrator) error
	// lockMigrations takes the migrations' lock where their own
	// transactions cannot hold it; unlock releases it.
	lockMigrations(ctx context.Context, s *store) (unlock func(), err error)
	// claimMigration takes the migrations' lock in a migration's
	// transaction db, where the engine takes it there.
	claimMigration(ctx context.Context, s *store, db bun.IConn) error

	// putContact stores the contact of args (contactCols' values),
	// replacing the one of its id.
	putContact(ctx context.Context, s *store, args []any) error
	// storeKey stores done, the record of a keyed write, in the write's
	// transaction; a live record in the way fails it with taken.
	storeKey(ctx context.Context, s *store, tx bun.Tx, done driver.IdempotencyRecord, taken error) error
	// search is SearchMessages, q checked and its scope resolved
	// (searchConversations): some conversations, a member, or q.All.
	search(ctx context.Context, s *store, q driver.SearchQuery, convs []string, member string) ([]messaging.Message, bool, error)
	// sequence numbers the events committed since its last call, where
	// they are not numbered at insert (numbersAtInsert; outbox.go).
	sequence(ctx context.Context, s *store) error
}

// engineDefaults are the steps most engines share; an engine embeds it.
type engineDefaults struct{}

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

// putContact is one upsert, atomic on its own: ON CONFLICT names the one
// key it updates on.
func (engineDefaults) putContact(ctx context.Context, s *store, args []any) error {
	return s.retry(ctx, func(ctx context.Context) error {
		const upsert = `INSERT INTO contacts (` + contactCols + `) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET username = excluded.username, phone_number = excluded.phone_number,
			avatar_url = excluded.avatar_url, last_active_at = excluded.last_active_at, created_at = excluded.created_at`
		_, err := s.w.ExecContext(ctx, upsert, args...)
		if isUniqueViolation(err) {
			// PostgreSQL may check the username's index before the id's:
			// a concurrent insert of the same new contact then violates
			// it. That insert has committed now, so once more finds its id.
			_, err = s.w.ExecContext(ctx, upsert, args...)
		}
		if isUniqueViolation(err) {
			return errUsernameTaken // the only unique key ON CONFLICT leaves
		}
		return err
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
// what the engine can do that others cannot (bun's feature flags).
type dialectSQL struct {
	// schemas: the tables may live in a schema of their own
	// (Options.Schema).
	schemas bool
	// returning: UPDATE and DELETE take a RETURNING clause.
	returning bool
	// rowValues: a comparison of row values, (a, b) < (?, ?), is read as
	// a range of an index on (a, b); else a range on a and a filter of
	// its ties (seek).
	rowValues bool
	// subqueryBounds: a subquery may bound a range of an index (a cursor
	// by id is read by the page's own query).
	subqueryBounds bool
	// numbersAtInsert: an event's seq is given at insert, in commit order
	// (one writer); else the sequencer numbers committed events.
	numbersAtInsert bool
	// arrays: a batch of rows is taken as arrays, a column each (unnest):
	// sends, combined events and reactions are one statement each
	// (sends.go, reactPostgres).
	arrays bool
	// sendsInTx: a send is its own transaction, and sends that wait for
	// the one writer are made in one, each in a savepoint (sends.go).
	sendsInTx bool
	// rangeOfOne: a page of one conversation reads it as a range, always
	// (ordered against the page); rangeAfterCursor: only after a cursor
	// (ordered with it). Else by "=" (list.go).
	rangeOfOne, rangeAfterCursor bool

	// txOptions are the options of write transactions, snapshotOptions
	// those of a copy's read transaction (Snapshot).
	txOptions, snapshotOptions *sql.TxOptions

	// forUpdate locks the rows a SELECT reads for its transaction to
	// write ("" where a transaction holds the database).
	forUpdate string
	// skip follows an INSERT's values and skips a row whose key is taken;
	// %[1]s, where used, is a column of the key (skipTail).
	skip string
	// insertNew begins, and insertNewTail ends, an INSERT that skips a
	// row whose key is taken and counts only the rows it inserted.
	insertNew, insertNewTail string
	// listedAt, if set, is the column that orders the list in
	// updated_at's place: updated_at to the second (DESIGN.md §4.12).
	listedAt string
	// memberOf is the condition that conversation column %[1]s is one of
	// contact ?'s memberships, a probe of the members' key per row.
	memberOf string
	// beforeSlash is the part of column %[1]s before its first slash (a
	// thread key's conversation).
	beforeSlash string
	// lockMessage reads a message's row (messageCols, or messageOwnCols
	// without returning) and locks it.
	lockMessage string
	// reactions and reactionsOrder read messages' embedded reactors
	// (reactions.go).
	reactions, reactionsOrder string
	// eventLog is the table writes insert their events into.
	eventLog string
	// eventGate, if set, is the first value of an insert into eventLog,
	// in its type's place: it reads the type through a lock (MySQL's gate).
	eventGate string
	// pruneEvents deletes the events up to seq ?, and their log rows;
	// prunedPerEvent, if set, is the rows it counts an event for.
	pruneEvents    string
	prunedPerEvent int64
	// eventsOfFew is the FROM of a page of a few conversations' events.
	eventsOfFew string
	// countSend counts n messages of a conversation (id, first's time,
	// newest's time, n, newest's id); countOwn, n of a contact's own
	// (conversation, contact, n).
	countSend, countOwn string
	// countCheckedReply, if set, is countSend for a reply that checks its
	// root too, in takeReply's place (countCheckedReplySQL): where a
	// transaction holds the database, its statements' order locks nothing.
	countCheckedReply string
	// addMember makes a contact a member (conversation, contact, time).
	addMember string
	// takers makes contacts take part in threads from a time, each a
	// "(?, ?, ?)" of %[1]s (thread key, contact, time).
	takers string
	// claimKey inserts an upload's claim of its key, unless a row is in
	// its way.
	claimKey string
	// pruneKeys deletes up to %[1]d records of keys expired before a
	// time, given pruneKeyArgs times.
	pruneKeys    string
	pruneKeyArgs int
	// overriding comes before the VALUES of Load's inserts, which set
	// identity columns; resetSeq, if set, moves the seq sequence of table
	// %[1]s past its greatest value.
	overriding, resetSeq string
	// wordMark is written before every word of messages.search_words.
	wordMark string
}

// skipTail returns the clause after an INSERT's values that skips a row
// whose key (of which key is a column) is taken.
func (d *dialectSQL) skipTail(key string) string {
	if !strings.Contains(d.skip, "%") {
		return d.skip
	}
	return fmt.Sprintf(d.skip, key)
}

// The statements of SQLite and PostgreSQL, which write them alike.
const (
	standardSkip      = " ON CONFLICT DO NOTHING"
	standardCountSend = `INSERT INTO conversations (id, created_at, updated_at, message_count, last_message_id)
		VALUES (?, ?, ?, ?, ?)` + countSendConflict
	// countSendConflict is the ON CONFLICT clause of standardCountSend.
	countSendConflict = ` ON CONFLICT (id) DO UPDATE SET message_count = conversations.message_count + EXCLUDED.message_count,
		last_message_id = CASE WHEN ` + newest + ` THEN EXCLUDED.last_message_id ELSE conversations.last_message_id END,
		updated_at = CASE WHEN ` + newest + ` THEN EXCLUDED.updated_at ELSE conversations.updated_at END`
	standardCountOwn = `INSERT INTO conversation_members (conversation_id, contact_id, own_count) VALUES (?, ?, ?)
		ON CONFLICT (conversation_id, contact_id) DO UPDATE SET own_count = conversation_members.own_count + EXCLUDED.own_count`
	standardAddMember = `INSERT INTO conversation_members (conversation_id, contact_id, is_member, joined_at) VALUES (?, ?, TRUE, ?)
		ON CONFLICT (conversation_id, contact_id) DO UPDATE SET joined_at = CASE WHEN conversation_members.is_member
		THEN conversation_members.joined_at ELSE EXCLUDED.joined_at END, is_member = TRUE`
	standardTakers = `INSERT INTO conversation_members (conversation_id, contact_id, joined_at) VALUES %[1]s
		ON CONFLICT (conversation_id, contact_id) DO UPDATE SET joined_at = EXCLUDED.joined_at
		WHERE conversation_members.joined_at IS NULL`
	// standardPruneKeys checks its outer condition again on a row that a
	// keyed write renewed while the DELETE waited for it (PostgreSQL
	// rechecks only the DELETE's own conditions, not its subquery's): a
	// renewed record stays.
	standardPruneKeys = `DELETE FROM idempotency_keys WHERE expires_at <= ? AND (scope, client_key) IN
		(SELECT scope, client_key FROM idempotency_keys WHERE expires_at <= ? ORDER BY expires_at LIMIT %[1]d)`
	standardPruneEvents = "DELETE FROM events WHERE seq > 0 AND seq <= ?"
	standardMemberOf    = "(SELECT cm.is_member FROM conversation_members AS cm WHERE cm.conversation_id = %[1]s AND cm.contact_id = ?) = TRUE"
)

// engineOf returns the engine of a bun dialect, or an error matching
// messaging.ErrUnimplemented.
func engineOf(op string, name dialect.Name) (engine, error) {
	switch name {
	case dialect.SQLite:
		return sqliteEngine{}, nil
	case dialect.PG:
		return &postgresEngine{}, nil
	case dialect.MySQL:
		return mysqlEngine{}, nil
	}
	return nil, &messaging.Error{Kind: messaging.ErrUnimplemented, Op: op, Message: "unsupported SQL dialect " + name.String()}
}
