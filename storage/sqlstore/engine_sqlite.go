package sqlstore

import (
	"context"
	"database/sql"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// sqliteEngine is SQLite (modernc.org/sqlite): a file in WAL mode, one
// writer connection whose transactions are BEGIN IMMEDIATE (a transaction
// holds the database), and a pool of readers. Every statement with
// arguments is prepared once (read.go's stmtCache): SQLite parses and
// plans each query otherwise.
type sqliteEngine struct{}

func (sqliteEngine) name() string { return "sqlite" }

func (sqliteEngine) dialect() *dialectSQL { return &sqliteSQL }

var sqliteSQL = dialectSQL{
	subqueryBounds:  true,
	returning:       true,
	numbersAtInsert: true,
	skip:            standardSkip,
	insertNew:       "INSERT INTO",
	insertNewTail:   standardSkip,
	// Not EXISTS: SQLite would first build a Bloom filter of every
	// membership; a scalar subquery keeps the walk of the time index.
	memberOf:    standardMemberOf,
	beforeSlash: "substr(%[1]s, 1, instr(%[1]s, '/') - 1)",
	lockMessage: "SELECT " + messageCols + " FROM " + messageFrom + " WHERE m.id = ?",
	// group_concat(x ORDER BY …) sorts its input in a temporary B-tree
	// (about twice the cost of the read): instead it concatenates the
	// rows of a subquery in the index's order. SQLite keeps a subquery's
	// ORDER BY when the query around it uses an aggregate other than
	// count, min and max, has no ORDER BY of its own and no join
	// (sqlite3Select's omit-ORDER-BY rules); with the index serving the
	// order it sorts nothing. TestEmbeddedReactorsOrder checks the order
	// against the contact ids' (which the index does not follow).
	reactions: reactionsBySQL(`SELECT group_concat(u.username, char(31)) FROM (SELECT COALESCE(c.username, '') AS username
		FROM reactions AS r LEFT JOIN contacts AS c ON c.id = r.contact_id
		WHERE r.message_id = n.message_id AND r.name = n.name AND r.seq <= n.head_seq ORDER BY r.seq) AS u`),
	reactionsOrder: " ORDER BY n.message_id, n.seq",
	// A resume (or a page after a cursor) of a few conversations reads
	// their ranges of the index by conversation, and sorts what it found:
	// its cost is the caller's events after the cursor. With its bounds
	// as parameters, the planner would rather walk the seq range in
	// order, over every conversation's events (BENCHMARKS.md §5: about 80
	// times slower behind 1,000,000 events of others).
	eventsOfFew:  "events AS e INDEXED BY events_conversation",
	countSend:    standardCountSend,
	countOwn:     standardCountOwn,
	addMember:    standardAddMember,
	takers:       standardTakers,
	claimKey:     `INSERT INTO idempotency_keys (scope, client_key, fingerprint, lock_token, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
	pruneKeys:    standardPruneKeys,
	pruneKeyArgs: 2,
}

// opened keeps the prepared statements of the writer and of the reader
// pool (reads select columns as +column: sqliteReadCols).
func (sqliteEngine) opened(s *store, w, r *sql.DB) {
	s.wstmts = &stmtCache{db: w, m: make(map[string]*sql.Stmt)}
	if r != w {
		s.stmts = &stmtCache{db: r, rewrite: sqliteReadCols, m: make(map[string]*sql.Stmt)}
	}
}

func (sqliteEngine) start(s *store) { s.startSearchIndexer() }

func (sqliteEngine) genericPlans(context.Context, *store) bool { return true }

func (sqliteEngine) initMigrations(ctx context.Context, _ *store, m *migrate.Migrator) error {
	return m.Init(ctx)
}

func (sqliteEngine) lockMigrations(context.Context, *store) (func(), error) { return func() {}, nil }

// claimMigration takes nothing: the migration's IMMEDIATE transaction
// holds the database's write lock.
func (sqliteEngine) claimMigration(context.Context, *store, bun.IConn) error { return nil }

func (sqliteEngine) putContact(ctx context.Context, s *store, args []any) error {
	return putContactUpsert(ctx, s, args)
}

func (sqliteEngine) storeKey(ctx context.Context, s *store, tx bun.Tx, done driver.IdempotencyRecord, taken error) error {
	return storeKeyUpsert(ctx, s, tx, done, taken)
}

func (sqliteEngine) numberEvents(context.Context, bun.Tx, int64) (int, error) {
	panic("sqlstore: SQLite numbers events at insert")
}

func (sqliteEngine) search(ctx context.Context, s *store, q driver.SearchQuery) ([]messaging.Message, bool, error) {
	return s.searchSQLite(ctx, q)
}
