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

// An engine is what one SQL engine does its own way. The store's shared
// code asks its engine for a step, and its engine's dialect (the
// statements whose text differs, and what the engine can do) for a
// statement or a capability, as bun keeps a dialect per package with
// feature flags; it never asks which engine it is. Each engine's answers
// live in its own file: engine_sqlite.go, engine_postgres.go,
// engine_mysql.go. A capability a new feature needs is one method or one
// field here, written once per engine.
type engine interface {
	// name is the engine's name: "sqlite", "postgres" or "mysql", the
	// directory of its migrations.
	name() string
	// dialect returns the engine's statements and capabilities.
	dialect() *dialectSQL

	// opened sets up what the engine keeps for a store that Open made
	// over w (writes) and r (reads outside transactions, w itself but for
	// SQLite files). A store made by New over the host's database keeps
	// nothing.
	opened(s *store, w, r *sql.DB)
	// start starts what the engine runs beside a store that stores
	// messages, unless it runs (SQLite's search indexer): the store's
	// first message (a send or an import) calls it, Close stops it.
	start(s *store)
	// oneConversation returns the condition that col holds a page's one
	// conversation where the page reads it as a range (rangeOfOne), with
	// the conversation as n arguments.
	oneConversation(s *store, col string) (cond string, n int)

	// initMigrations creates Options.Schema and bun/migrate's tables.
	initMigrations(ctx context.Context, s *store, m *migrate.Migrator) error
	// lockMigrations takes the lock that migrations run under, when the
	// engine's migrations cannot take it in their own transactions;
	// unlock releases it.
	lockMigrations(ctx context.Context, s *store) (unlock func(), err error)
	// claimMigration takes the migration lock in a migration's
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
	// sequence gives the events committed since the last call their
	// seqs, where the engine does not give them at insert
	// (numbersAtInsert false; outbox.go): readers call it first.
	sequence(ctx context.Context, s *store) error
}

// engineDefaults are the engine methods that most engines share; an
// engine embeds it and writes the others.
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

func (engineDefaults) putContact(ctx context.Context, s *store, args []any) error {
	return putContactUpsert(ctx, s, args)
}

func (engineDefaults) storeKey(ctx context.Context, s *store, tx bun.Tx, done driver.IdempotencyRecord, taken error) error {
	return storeKeyUpsert(ctx, s, tx, done, taken)
}

// dialectSQL is what differs in the text of an engine's statements, and
// what the engine can do that others cannot.
type dialectSQL struct {
	// Capabilities.

	// schemas: the store's tables may live in a schema of their own
	// (Options.Schema).
	schemas bool
	// returning: UPDATE and DELETE take a RETURNING clause.
	returning bool
	// rowValues: the engine reads a comparison of row values, (a, b) <
	// (?, ?), as a range of an index on (a, b); others get a range on a
	// and a filter of its ties (seek).
	rowValues bool
	// subqueryBounds: a subquery may bound a range of an index (a cursor
	// by id is read by the page's own query, not before it).
	subqueryBounds bool
	// numbersAtInsert: an event's seq is given at insert, in commit
	// order (one writer); otherwise the sequencer numbers events once
	// they commit (outbox.go).
	numbersAtInsert bool
	// arrays: the engine takes a batch of rows as arrays, a column each
	// (unnest): a send alone is one statement, and sends that wait are
	// stored together (sends.go); events of a combined change go in one
	// statement; the reaction changes of a transaction are one call of
	// parley_react after the lock (reactPostgres).
	arrays bool
	// sendsInTx: a send is its transaction, and sends that wait for the
	// writer are made in one transaction, each in a savepoint of its own
	// (sends.go): SQLite, whose one writer makes a send's commit most of
	// its cost.
	sendsInTx bool
	// rangeOfOne: a page of one conversation reads it as a range
	// (conversation_id >= ? AND <= ?), ordered by it too, rather than by
	// "=": always (ordered against the page), or only after a cursor
	// (ordered with the page).
	rangeOfOne, rangeAfterCursor bool

	// Transactions.

	// txOptions are the options of the store's write transactions, and
	// snapshotOptions those of a copy's read transaction (Snapshot).
	txOptions, snapshotOptions *sql.TxOptions

	// Statements and fragments.

	// forUpdate is the locking clause of a SELECT whose rows its
	// transaction writes next ("" where a transaction holds the
	// database).
	forUpdate string
	// skip is the clause after an INSERT's values that skips a row whose
	// key is taken, with %[1]s, where it needs one, for a column of the
	// key.
	skip string
	// insertNew begins an INSERT that skips a row whose key is taken and
	// counts only the rows it inserted; insertNewTail follows its values.
	insertNew, insertNewTail string
	// listedAt, where not "", is the column of conversations that their
	// list is indexed by in updated_at's place (conversations_listed):
	// updated_at truncated to the second, generated by the engine, so
	// that a send's update of the row changes no indexed column but once
	// a second, and PostgreSQL makes it HOT (DESIGN.md section 4.12).
	// The list orders by it, then updated_at and the id.
	listedAt string
	// memberOf is the condition that the conversation column %[1]s is one
	// of contact ?'s memberships: a probe of the members' primary key
	// for each row (conversations.go).
	memberOf string
	// beforeSlash is the part of the column %[1]s before its first slash
	// (a thread key's conversation).
	beforeSlash string
	// lockMessage reads a message's row (messageCols, or messageOwnCols
	// without returning) and locks it.
	lockMessage string
	// reactions and reactionsOrder read the embedded reactors of messages
	// (reactions.go).
	reactions, reactionsOrder string
	// eventLog is the table that writes insert their events into:
	// events, or the log that the sequencer copies into events.
	eventLog string
	// pruneEvents deletes the events up to seq ? (PruneEvents), and what
	// the engine keeps of them elsewhere.
	pruneEvents string
	// eventsOfFew is the FROM of a page of events of a few conversations
	// after a cursor.
	eventsOfFew string
	// countSend counts n messages of a conversation (id, first's time,
	// newest's time, n, newest's id), storing it when new; countOwn
	// counts n of a contact's own (conversation, contact, n).
	countSend, countOwn string
	// countCheckedReply, where not "", is countSend for a reply that
	// checks its root too (countCheckedReplySQL), in place of takeReply
	// before the reply: where a transaction holds the database (SQLite),
	// so that the order of its statements locks nothing.
	countCheckedReply string
	// addMember makes a contact (conversation, contact, time) a member.
	addMember string
	// takers makes contacts take part in threads from a time, each a
	// "(?, ?, ?)" of %[1]s (thread key, contact, time).
	takers string
	// pruneKeys deletes up to %[1]d expired records of keys, given the
	// time before which they expired (its placeholders: pruneKeyArgs).
	pruneKeys    string
	pruneKeyArgs int
	// overriding is written before the VALUES of an insert that gives an
	// identity column its values; resetSeq, when not "", moves the
	// sequence of the seq column of table %[1]s past its greatest value.
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

// putContactUpsert is putContact in one statement, atomic on its own
// (SQLite, PostgreSQL: ON CONFLICT names the one key it updates on).
func putContactUpsert(ctx context.Context, s *store, args []any) error {
	return s.retry(ctx, func(ctx context.Context) error {
		_, err := s.w.ExecContext(ctx, `INSERT INTO contacts (`+contactCols+`) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET username = excluded.username, phone_number = excluded.phone_number,
			avatar_url = excluded.avatar_url, last_active_at = excluded.last_active_at, created_at = excluded.created_at`, args...)
		if isUniqueViolation(err) {
			return errUsernameTaken // the only unique key ON CONFLICT leaves
		}
		return err
	})
}

// storeKeyUpsert is storeKey by a conditional upsert (upsertKey; SQLite,
// PostgreSQL).
func storeKeyUpsert(ctx context.Context, s *store, tx bun.Tx, done driver.IdempotencyRecord, taken error) error {
	n, err := affected(s.execWrite(ctx, tx, upsertKey, done.Scope, done.Key, done.Fingerprint, done.Result,
		done.CreatedAt.UTC(), done.ExpiresAt.UTC(), done.Lock))
	if err == nil && n == 0 {
		return taken
	}
	return err
}

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
