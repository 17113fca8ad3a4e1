package sqlstore

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// sqliteEngine is SQLite (package sqlite; DESIGN.md §4): one writer whose
// transactions hold the database, readers, statements prepared (stmtCache).
type sqliteEngine struct{ engineDefaults }

var sqliteSQL = withStandard(dialectSQL{
	subqueryBounds:  true,
	returning:       true,
	numbersAtInsert: true,
	eventLog:        "events",
	pruneEvents:     "DELETE FROM events WHERE seq > 0 AND seq <= ?",
	sendsInTx:       true,
	insertNewTail:   " ON CONFLICT DO NOTHING",
	beforeSlash:     "substr(%[1]s, 1, instr(%[1]s, '/') - 1)",
	lockMessage:     "SELECT " + messageCols + " FROM " + messageFrom + " WHERE m.id = ?",
	// A subquery's rows in the index's order, which an aggregate keeps;
	// group_concat(x ORDER BY …) sorts (DESIGN.md §4.5).
	reactions: reactionsBySQL(`SELECT group_concat(u.username, char(31)) FROM (SELECT COALESCE(c.username, '') AS username
		FROM reactions AS r LEFT JOIN contacts AS c ON c.id = r.contact_id
		WHERE r.message_id = n.message_id AND r.name = n.name AND r.seq <= n.head_seq ORDER BY r.seq) AS u`),
	// The planner would walk every conversation's events (DESIGN.md §5).
	eventsOfFew: "events AS e INDEXED BY events_conversation",
})

// opened makes the writer's and the readers' stmtCache.
func (sqliteEngine) opened(s *store, w, r *sql.DB) {
	s.wstmts = newStmtCache(w, nil)
	if r != w {
		s.stmts = newStmtCache(r, sqliteReadCols)
	}
}

func (sqliteEngine) start(s *store) { s.startSearchIndexer() }

// maxPrefixWords is the most words of the index a search's prefix stands
// for in its FTS5 query; beyond, it is a prefix query.
var maxPrefixWords = 64

// ftsBucket is the first FTS5 rowid of the millisecond of the time ?
// (rowids are created_at in ms << 20, plus a number; DESIGN.md §4.10).
const ftsBucket = "(CAST(round(unixepoch(?, 'subsec') * 1000) AS INTEGER) << 20)"

// search is SearchMessages on SQLite: the union of FTS5's page (up to the
// mark) and of the tail beyond it, in one statement (DESIGN.md §4.10).
// FTS5 orders to the millisecond: its page's last one is read whole.
func (sqliteEngine) search(ctx context.Context, s *store, q driver.SearchQuery, convs []string, member string) ([]messaging.Message, bool, error) {
	mark, terms, err := s.searchMark(ctx, q.Prefix)
	if err != nil {
		return nil, false, err
	}
	// bucket bounds FTS5's rowids at the cursor's millisecond; bound, at
	// the millisecond of the page's last match (p).
	dir, cmp, cur := "DESC", "<", q.After
	bucket, bound := " AND f.rowid < "+ftsBucket+" + 1048576", " AND f.rowid >= ((SELECT MIN(r) FROM p) >> 20) << 20"
	if q.Before != nil {
		dir, cmp, cur = "ASC", ">", q.Before
		bucket, bound = " AND f.rowid >= "+ftsBucket, " AND f.rowid < (((SELECT MAX(r) FROM p) >> 20) + 1) << 20"
	}
	var seek string
	var seekArgs []any
	if cur != nil {
		seek, seekArgs = s.seek("m.created_at", "m.id", cmp, cur.Time.UTC(), cur.ID)
		seek = " AND " + seek
	}
	var where string
	var whereArgs []any
	named := nameable(q.All, member, convs)
	if !q.All {
		b, _ := s.searchScope(false, member, convs)
		where, whereArgs = " AND "+b.where, b.args
	}
	limit := strconv.Itoa(q.Limit + 1)
	order := " ORDER BY m.created_at " + dir + ", m.id " + dir + " LIMIT " + limit

	// The tail, in seq order (NOT INDEXED: no index but the rowid's).
	tail := "SELECT " + messageCols + " FROM messages AS m NOT INDEXED LEFT JOIN contacts AS c ON c.id = m.contact_id WHERE m.seq > ?" +
		strings.Repeat(" AND instr(' ' || m.search_words || ' ', ?) > 0", len(q.Words))
	tailArgs := []any{mark}
	for _, w := range q.Words {
		tailArgs = append(tailArgs, " "+w+" ")
	}
	if q.Prefix != "" {
		tail += " AND instr(' ' || m.search_words, ?) > 0"
		tailArgs = append(tailArgs, " "+q.Prefix)
	}
	tail += where + seek + order
	tailArgs = slices.Concat(tailArgs, whereArgs, seekArgs)

	match, ok := ftsMatch(q, terms)
	if !ok { // no word of the index begins with the prefix
		return s.searchPage(ctx, q, tail, tailArgs)
	}
	if named {
		// A conversation's token, as the triggers write it, stands for its replies too.
		tokens := make([]string, len(convs))
		for i, c := range convs {
			tokens[i] = `"§` + strings.ToUpper(hex.EncodeToString([]byte(c))) + `"`
		}
		match += " AND (" + strings.Join(tokens, " OR ") + ")"
		where, whereArgs = "", nil
	}
	if cur != nil {
		seek, seekArgs = bucket+seek, append([]any{cur.Time.UTC()}, seekArgs...)
	}
	// FTS5 is the outer loop (CROSS JOIN), in its rowids' order; what the
	// indexer indexed since searchMark is the tail's.
	const from = " FROM message_search AS f CROSS JOIN message_search_ids AS i CROSS JOIN messages AS m "
	cond := "WHERE f.message_search MATCH ? AND i.rowid = f.rowid AND m.seq = i.message_seq AND m.seq <= ?" + where + seek
	args := slices.Concat([]any{match, mark}, whereArgs, seekArgs)
	query := "WITH p AS (SELECT f.rowid AS r" + from + cond + " ORDER BY f.rowid " + dir + " LIMIT " + limit + ") " +
		"SELECT * FROM (SELECT * FROM (SELECT " + messageCols + from + "LEFT JOIN contacts AS c ON c.id = m.contact_id " + cond + bound + order + ") AS p0" +
		" UNION ALL SELECT * FROM (" + tail + ") AS p1) AS u ORDER BY u.created_at " + dir + ", u.id " + dir + " LIMIT " + limit
	return s.searchPage(ctx, q, query, slices.Concat(args, args, tailArgs))
}

// searchMark returns the search index's mark and, for a prefix, the words
// of the index it begins, read together: the words of the messages to it.
func (s *store) searchMark(ctx context.Context, prefix string) (mark int64, terms []string, err error) {
	var rows []struct {
		Mark int64   `bun:"mark"`
		Term *string `bun:"term"`
	}
	if prefix == "" {
		// The mark alone: the join costs 20 µs, a tenth of a rare word's search.
		err = s.read(ctx, &rows, "SELECT seq AS mark FROM message_search_mark")
	} else {
		err = s.read(ctx, &rows, "SELECT k.seq AS mark, t.term AS term FROM message_search_mark AS k LEFT JOIN "+
			"(SELECT term FROM message_search_terms WHERE term >= ? AND term < ? LIMIT ?) AS t ON 1",
			prefix, prefix+"\U0010FFFF", maxPrefixWords+1)
	}
	if err == nil && len(rows) == 0 {
		err = errors.New("sqlstore: no search mark")
	}
	if err != nil {
		return 0, nil, err
	}
	for _, r := range rows {
		if r.Term != nil {
			terms = append(terms, *r.Term)
		}
	}
	return rows[0].Mark, terms, nil
}

// ftsMatch returns the FTS5 query of q, its prefix as the words it begins
// (terms) when few: FTS5 streams an OR of words in rowid order, but reads
// all of a prefix query's matches first. False: the prefix begins none.
func ftsMatch(q driver.SearchQuery, terms []string) (string, bool) {
	all := make([]string, 0, len(q.Words)+1)
	for _, w := range q.Words {
		all = append(all, `"`+w+`"`)
	}
	switch {
	case q.Prefix == "":
	case len(terms) == 0:
		return "", false
	case len(terms) > maxPrefixWords:
		all = append(all, `"`+q.Prefix+`"*`)
	default:
		all = append(all, `("`+strings.Join(terms, `" OR "`)+`")`)
	}
	return "(" + strings.Join(all, " AND ") + ")", true
}

// The indexer looks for messages beyond the mark every searchIndexEvery,
// at once while a batch leaves more, and indexes searchBatch at a time.
const searchIndexEvery, searchBatch = 100 * time.Millisecond, 1000

// searchIndexer is the goroutine of a Store's search indexer, which keeps
// FTS5 behind the sends by moving message_search_mark (DESIGN.md §4.10).
type searchIndexer struct {
	stop context.CancelFunc
	done chan struct{} // closed when it has stopped
}

// startSearchIndexer starts the indexer when the store first stores a
// message, so that a store that only reads writes nothing; Close stops it.
func (s *store) startSearchIndexer() {
	if s.indexing.Load() {
		return
	}
	s.indexerMu.Lock()
	defer s.indexerMu.Unlock()
	if s.indexing.Swap(true) {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	ix := &searchIndexer{stop: cancel, done: make(chan struct{})}
	s.indexer = ix
	r, w, log := s.r.DB, s.w.DB, s.opts.Logger
	go func() {
		defer close(ix.done)
		t := time.NewTicker(searchIndexEvery)
		defer t.Stop()
		for {
			more, err := indexSearch(ctx, r, w, searchBatch)
			if err != nil && ctx.Err() == nil {
				// Not migrated yet, or busy: again at the next tick.
				log.DebugContext(ctx, "sqlstore: search index", "err", err)
			}
			if more && err == nil && ctx.Err() == nil {
				continue
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// stopSearchIndexer stops the indexer, if it runs, for good, and waits.
func (s *store) stopSearchIndexer() {
	s.indexerMu.Lock()
	s.indexing.Store(true)
	ix := s.indexer
	s.indexer = nil
	s.indexerMu.Unlock()
	if ix != nil {
		ix.stop()
		<-ix.done
	}
}

// indexSearch indexes up to batch messages beyond the mark and tells
// whether more are left; it looks on the reader first, for an idle store.
func indexSearch(ctx context.Context, r, w *sql.DB, batch int) (more bool, err error) {
	var pending int
	if err := r.QueryRowContext(ctx, "SELECT COALESCE((SELECT MAX(seq) FROM messages) > seq, 0) FROM message_search_mark").Scan(&pending); err != nil || pending == 0 {
		return false, err
	}
	var mark, last int64
	err = w.QueryRowContext(ctx, `UPDATE message_search_mark SET seq = min(seq + ?, (SELECT MAX(seq) FROM messages))
		WHERE seq < (SELECT MAX(seq) FROM messages) RETURNING seq, (SELECT MAX(seq) FROM messages)`, batch).Scan(&mark, &last)
	if err == sql.ErrNoRows { // another process indexed them
		return false, nil
	}
	return err == nil && mark < last, err
}

// maxStmts bounds the prepared statements a Store keeps (DESIGN.md §4.7).
const maxStmts = 256

// stmtCache holds prepared statements by query text, of the readers
// (readPrepared) or of the writer (txStmt), at most maxStmts.
type stmtCache struct {
	db      *sql.DB
	rewrite *strings.Replacer // if set, turns a query into the text prepared
	mu      sync.RWMutex
	m       map[string]*sql.Stmt
	want    map[string]bool // queries transactions ran unprepared (inTx)
	closed  bool            // by close: nothing more is prepared
}

func newStmtCache(db *sql.DB, rewrite *strings.Replacer) *stmtCache {
	return &stmtCache{db: db, rewrite: rewrite, m: map[string]*sql.Stmt{}, want: map[string]bool{}}
}

// get returns the prepared statement of query, or nil when the cache is
// full or closed. It prepares outside the lock, as that takes a connection,
// which transactions waiting for the lock (inTx) may all hold.
func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.RLock()
	st, ok := c.m[query]
	full := c.closed || len(c.m) >= maxStmts
	c.mu.RUnlock()
	if ok || full {
		return st, nil
	}
	text := query
	if c.rewrite != nil {
		text = c.rewrite.Replace(query)
	}
	st, err := c.db.PrepareContext(ctx, text)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	kept, ok := c.m[query]
	if !ok && !c.closed && len(c.m) < maxStmts {
		c.m[query], kept = st, st
	}
	c.mu.Unlock()
	if kept != st {
		_ = st.Close()
	}
	return kept, nil
}

// inTx returns query's prepared statement for a transaction, or nil and
// notes query for prepareWanted: preparing in the transaction would wait
// for a connection, which transactions waiting for this one's rows may all
// hold.
func (c *stmtCache) inTx(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.m[query]
	if !ok && !c.closed && len(c.m)+len(c.want) < maxStmts {
		c.want[query] = true
	}
	return st
}

// prepareWanted prepares the queries that transactions ran unprepared
// (inTx). The caller holds no connection of the pool.
func (c *stmtCache) prepareWanted(ctx context.Context) {
	c.mu.Lock()
	qs := slices.Collect(maps.Keys(c.want))
	clear(c.want)
	c.mu.Unlock()
	for _, q := range qs {
		if _, err := c.get(ctx, q); err != nil {
			return // canceled, or no such table yet: a later transaction asks again
		}
	}
}

// close closes the statements outside the lock: closing one waits for its
// callers, which may wait for a connection a transaction at inTx holds.
func (c *stmtCache) close() error {
	c.mu.Lock()
	c.closed = true
	m := c.m
	c.m = map[string]*sql.Stmt{}
	c.mu.Unlock()
	var errs []error
	for _, st := range m {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}

// sqliteReadCols rewrites the prepared reads' columns as +column, of no
// declared type, which bun parses once (DESIGN.md §4.7, "+column reads").
var sqliteReadCols = strings.NewReplacer(
	messageCols, exprCols(messageCols),
	attachmentCols, exprCols(attachmentCols),
	linkedAttachmentCols, exprCols(linkedAttachmentCols),
	reactionsCols, exprCols(reactionsCols),
	conversationOwnCols, exprCols(conversationOwnCols),
	lastMessageCols, exprCols(lastMessageCols),
	"SELECT "+contactCols+" FROM contacts", "SELECT "+exprCols(contactCols)+" FROM contacts",
)

// exprCols turns "m.id, c.username AS contact_username" into "+m.id AS
// id, +c.username AS contact_username"; an expression (with parentheses) stays.
func exprCols(cols string) string {
	parts := strings.Split(cols, ",")
	depth := 0
	for i, p := range parts {
		p = strings.Join(strings.Fields(p), " ")
		inExpr := depth > 0 || strings.Contains(p, "(")
		depth += strings.Count(p, "(") - strings.Count(p, ")")
		if inExpr {
			parts[i] = p
			continue
		}
		col, alias, ok := strings.Cut(p, " AS ")
		if !ok {
			alias = col[strings.IndexByte(col, '.')+1:]
		}
		parts[i] = "+" + col + " AS " + alias
	}
	return strings.Join(parts, ", ")
}
