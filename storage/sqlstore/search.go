package sqlstore

import (
	"context"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// Search. Every engine stores the words of a message's text as
// driver.SearchWords folds them, in messages.search_words, and indexes
// that column with its full-text index; a query is matched against those
// words as they are, so that no engine's own tokenizer, folding, stop
// words or minimum word length changes what a query finds:
//
//   - SQLite: FTS5 with the ascii tokenizer (which splits on ASCII
//     punctuation only and folds ASCII case only), kept by triggers
//     (migrations/sqlite), whose rowids follow time and whose rows hold a
//     token of their conversation (searchSQLite);
//   - PostgreSQL: a GIN index of array_to_tsvector of the words (lexemes
//     taken as they are), queried by a tsquery of quoted lexemes;
//   - MySQL and MariaDB: InnoDB FULLTEXT over the words each written after
//     mysqlWordMark, which makes every token at least three characters
//     long (innodb_ft_min_token_size's default) and none a stop word,
//     queried in boolean mode.
//
// Words hold only letters, digits and marks (no quote, operator or space),
// so that they need no escaping in any engine's query syntax.

// mysqlWordMark is written before every word on MySQL.
const mysqlWordMark = "ww"

// searchWords returns the value of messages.search_words for text.
func (s *store) searchWords(text string) string { return searchWordsOf(s.sql.wordMark, text) }

// searchWordsOf returns the value of messages.search_words for text, each
// word after mark (dialectSQL.wordMark).
func searchWordsOf(mark, text string) string {
	words := driver.SearchWords(text)
	if mark != "" {
		for i, w := range words {
			words[i] = mark + w
		}
	}
	return strings.Join(words, " ")
}

// pgSearchVector is the expression of the index messages_search on
// PostgreSQL (migrations/postgres): the words of m and the lexeme of its
// conversation.
const pgSearchVector = "array_to_tsvector(string_to_array(m.search_words, ' ') || ('§' || split_part(m.conversation_id, '/', 1)))"

// tsLexeme returns the tsquery of the one lexeme s, quoted.
func tsLexeme(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", "''") + "'"
}

// pgSearchMatch returns the condition on m (messages) of the messages
// whose words match q, and its arguments, on PostgreSQL; of the
// conversations convs too when not empty (their replies included).
func pgSearchMatch(q driver.SearchQuery, convs []string) (string, []any) {
	var b strings.Builder
	for _, w := range q.Words {
		if b.Len() > 0 {
			b.WriteString(" & ")
		}
		b.WriteString("'" + w + "'")
	}
	if q.Prefix != "" {
		if b.Len() > 0 {
			b.WriteString(" & ")
		}
		b.WriteString("'" + q.Prefix + "':*")
	}
	if len(convs) > 0 {
		if b.Len() > 0 {
			b.WriteString(" & ")
		}
		b.WriteString("(")
		for i, c := range convs {
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(tsLexeme("§" + c))
		}
		b.WriteString(")")
	}
	return pgSearchVector + " @@ ?::tsquery", []any{b.String()}
}

// mysqlSearchMatch returns the condition on m (messages) of the messages
// whose words match q by the FULLTEXT index, and its arguments, on MySQL
// and MariaDB.
func mysqlSearchMatch(q driver.SearchQuery) (string, []any) {
	var b strings.Builder
	for _, w := range q.Words {
		b.WriteString("+" + mysqlWordMark + w + " ")
	}
	if q.Prefix != "" {
		b.WriteString("+" + mysqlWordMark + q.Prefix + "*")
	}
	return "MATCH (m.search_words) AGAINST (? IN BOOLEAN MODE)", []any{strings.TrimSpace(b.String())}
}

// SearchMessages returns up to q.Limit messages of q's Scope whose words
// match q, newest first, and whether more exist beyond them in the
// direction of travel, in three queries (as ListMessages): the Scope and
// the match are conditions of one query.
func (s *store) SearchMessages(ctx context.Context, q driver.SearchQuery) ([]messaging.Message, bool, error) {
	items, more, err := s.searchMessages(ctx, q)
	return items, more, wrapErr("sqlstore.SearchMessages", err)
}

func (s *store) searchMessages(ctx context.Context, q driver.SearchQuery) ([]messaging.Message, bool, error) {
	if q.Limit < 1 {
		return nil, false, invalid("limit must be at least 1")
	}
	if len(q.Words) == 0 && q.Prefix == "" {
		return nil, false, invalid("a search needs a word")
	}
	return s.eng.search(ctx, s, q)
}

// searchPostgres is SearchMessages on PostgreSQL.
func (s *store) searchPostgres(ctx context.Context, q driver.SearchQuery) ([]messaging.Message, bool, error) {
	convs, member, err := s.searchConversations(ctx, q)
	if err != nil {
		return nil, false, err
	}
	var named []string
	if nameable(q.All, member, convs) {
		// The conversations are lexemes of the tsquery: no other
		// condition.
		named, q.All = convs, true
	}
	b, ok := s.searchScope(q.All, member, convs)
	if !ok {
		return []messaging.Message{}, false, nil
	}
	gin, filter, filterArgs := q, "", []any(nil)
	if named != nil && q.Prefix != "" {
		// GIN answers a prefix ('proj':*) by reading every match of every
		// word it begins in the whole store into a bitmap before it
		// intersects it with anything (21 ms of CPU for 60,000 matches),
		// while whole words and the conversations' lexemes are
		// intersected as they are read. So the prefix is tested on the
		// rows those give (LIKE) when there are whole words, or, for a
		// prefix alone, when reading the conversations' rows costs less
		// than the prefix's matches (pgPrefixAlone).
		like := len(q.Words) > 0
		if !like {
			if like, err = s.pgPrefixAlone(ctx, named, q.Prefix); err != nil {
				return nil, false, err
			}
		}
		if like {
			gin.Prefix = ""
			filter, filterArgs = " AND (' ' || m.search_words) LIKE ?", []any{"% " + q.Prefix + "%"}
		}
	}
	match, args := pgSearchMatch(gin, named)
	match, args = match+filter, append(args, filterArgs...)
	if b.where != "" {
		match = b.where + " AND " + match
		args = append(b.args, args...)
	}
	p := pageQuery{cols: messageCols, from: messageFrom, alias: "m", after: q.After, before: q.Before, limit: q.Limit,
		branches: []branch{{where: match, args: args}}}
	if named != nil {
		// Every match of the conversations, from the GIN index, then
		// sorted: OFFSET 0 keeps the planner from walking messages_created
		// newest first and testing each row, which it prefers by its
		// estimate of @@ (about 0.1% of the rows, whatever the lexemes)
		// and which reads every newer row of other conversations (65 ms
		// rather than 2 ms for a word in 50 of 10,000 conversations).
		p.from = "(SELECT * FROM messages AS m WHERE " + match + " OFFSET 0) AS m LEFT JOIN contacts AS c ON c.id = m.contact_id"
		p.fromArgs, p.branches = args, []branch{{}}
	}
	query, qargs := s.pageSQL(p)
	return s.searchPage(ctx, q, query, qargs)
}

// searchPage reads the page of q that query selects (up to one row more
// than q.Limit, which tells whether more follow) and completes its
// messages.
func (s *store) searchPage(ctx context.Context, q driver.SearchQuery, query string, args []any) ([]messaging.Message, bool, error) {
	rows := make([]messageRow, 0, q.Limit+1)
	if err := s.read(ctx, &rows, query, args...); err != nil {
		return nil, false, err
	}
	return s.searchDone(ctx, q, rows)
}

// searchDone completes the messages of rows, the page of q as pageSQL
// reads it.
func (s *store) searchDone(ctx context.Context, q driver.SearchQuery, rows []messageRow) ([]messaging.Message, bool, error) {
	rows, more := trimPage(rows, q.Limit, q.Before != nil)
	items, err := complete(ctx, s.sql, s.readByIDs, rows)
	if err != nil {
		return nil, false, err
	}
	return items, more, nil
}

// searchScope returns the condition on m of the messages of a search's
// scope (scope's convs and member), replies included; false when that is
// none.
func (s *store) searchScope(all bool, member string, convs []string) (branch, bool) {
	b, ok := s.scopeBranch("m.conversation_id", all, member, convs)
	if !ok || all {
		return b, ok
	}
	if len(convs) > 0 {
		// The replies of these conversations are under their threads'
		// keys (threads.go).
		b.where, b.args = "("+b.where+" OR "+threadsOf("m.conversation_id", len(convs))+")", append(b.args, threadPatterns(convs)...)
	}
	if member != "" {
		// A member of many conversations: the replies of those are under
		// their threads' keys, whose conversation is before the slash.
		b.where, b.args = "("+b.where+" OR "+s.memberOf(s.threadConversation("m.conversation_id"))+")", append(b.args, member)
	}
	return b, true
}

// maxSearchConversations is the most conversations of a member that a
// search on SQLite or PostgreSQL names in its full-text query; a member
// of more is probed for row by row.
var maxSearchConversations = 500

// searchConversations resolves the scope of a search on SQLite and
// PostgreSQL: the conversations of q.ConversationIDs and of q.MemberID's
// memberships, up to maxSearchConversations of these, or member (q's
// MemberID) to probe for when more.
func (s *store) searchConversations(ctx context.Context, q driver.SearchQuery) (convs []string, member string, err error) {
	if q.All {
		return nil, "", nil
	}
	convs = q.ConversationIDs
	if q.MemberID != "" {
		mine, many, err := s.membershipsUpTo(ctx, q.MemberID, maxSearchConversations)
		if err != nil {
			return nil, "", err
		}
		if many {
			return dedupe(convs), q.MemberID, nil
		}
		convs = append(mine, convs...)
	}
	return dedupe(convs), "", nil
}

// nameable tells whether the scope of a search can be named in the
// full-text query: some conversations, no member to probe for, and none
// of them a thread's key (whose conversation's token would stand for the
// whole conversation).
func nameable(all bool, member string, convs []string) bool {
	return !all && member == "" && len(convs) > 0 && !slices.ContainsFunc(convs, func(c string) bool { return strings.Contains(c, "/") })
}

// maxPrefixWords is the most words that a search on SQLite names in its
// full-text query for its prefix; a prefix of more is a prefix query.
var maxPrefixWords = 64

// ftsBucket is the SQL of the first FTS5 rowid of the millisecond of the
// time given as its argument, as the insert trigger computes it: a
// message's rowid is its created_at in milliseconds times 2^20, plus a
// number among those of its millisecond (migrations/sqlite).
const ftsBucket = "(CAST(round(unixepoch(?, 'subsec') * 1000) AS INTEGER) << 20)"

// ftsConversation returns the FTS5 token of the conversation conv: "§"
// and its bytes in hex, as the triggers write it.
func ftsConversation(conv string) string {
	return "§" + strings.ToUpper(hex.EncodeToString([]byte(conv)))
}

// searchSQLite is SearchMessages on SQLite, over the messages FTS5 holds
// (up to the mark, searchindex.go) and those beyond it, the tail, in one
// statement: the union of the page of each, sorted.
//
// FTS5 returns the matches of its query in rowid order, which is time
// order to the millisecond, and a query that names the scope's
// conversations matches only theirs: the first query (p) reads the
// matches newest first (oldest first for Before) and stops at limit+1 of
// them, without reading the others; the second reads those again with
// every other match of the millisecond of the last of them, whose rowids
// are not in (created_at, id) order, and sorts them exactly. A member of
// more than maxSearchConversations conversations is probed for row by
// row (memberOf), still in rowid order.
//
// The tail is read in seq order from the mark (at most a few thousand
// messages, messages_search_tail), each message's words matched as they
// are: every word whole, the last as a prefix, as FTS5 matches them.
func (s *store) searchSQLite(ctx context.Context, q driver.SearchQuery) ([]messaging.Message, bool, error) {
	convs, member, err := s.searchConversations(ctx, q)
	if err != nil {
		return nil, false, err
	}
	if !q.All && member == "" && len(convs) == 0 {
		return []messaging.Message{}, false, nil
	}
	mark, terms, err := s.searchMark(ctx, q.Prefix)
	if err != nil {
		return nil, false, err
	}
	dir, cmp, cur, edge := "DESC", "<", q.After, "MIN"
	if q.Before != nil {
		dir, cmp, cur, edge = "ASC", ">", q.Before, "MAX"
	}
	var seek string
	var seekArgs []any
	if cur != nil {
		t := cur.Time.UTC()
		seek = " AND m.created_at " + cmp + "= ? AND (m.created_at " + cmp + " ? OR m.id " + cmp + " ?)"
		seekArgs = []any{t, t, cur.ID}
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
	var tail strings.Builder
	tailArgs := []any{mark}
	tail.WriteString("SELECT " + messageCols + " FROM messages AS m NOT INDEXED LEFT JOIN contacts AS c ON c.id = m.contact_id WHERE m.seq > ?")
	for _, w := range q.Words {
		tail.WriteString(" AND instr(' ' || m.search_words || ' ', ?) > 0")
		tailArgs = append(tailArgs, " "+w+" ")
	}
	if q.Prefix != "" {
		tail.WriteString(" AND instr(' ' || m.search_words, ?) > 0")
		tailArgs = append(tailArgs, " "+q.Prefix)
	}
	tail.WriteString(where + seek + order)
	tailArgs = slices.Concat(tailArgs, whereArgs, seekArgs)

	match, ok := ftsMatch(q, terms)
	if !ok { // no word of the index begins with the prefix
		return s.searchPage(ctx, q, tail.String(), tailArgs)
	}
	if named {
		// A conversation's token stands for its replies too.
		match += " AND ("
		for i, c := range convs {
			if i > 0 {
				match += " OR "
			}
			match += `"` + ftsConversation(c) + `"`
		}
		match += ")"
		where, whereArgs = "", nil
	}
	if cur != nil {
		t := cur.Time.UTC()
		if dir == "DESC" {
			seek = " AND f.rowid < " + ftsBucket + " + 1048576" + seek
		} else {
			seek = " AND f.rowid >= " + ftsBucket + seek
		}
		seekArgs = append([]any{t}, seekArgs...)
	}
	// FTS5 is the outer loop (CROSS JOIN), in the order of its rowids; the
	// messages beyond the mark that the indexer indexed since searchMark
	// read it are the tail's.
	const from = " FROM message_search AS f CROSS JOIN message_search_ids AS i CROSS JOIN messages AS m "
	cond := "WHERE f.message_search MATCH ? AND i.rowid = f.rowid AND m.seq = i.message_seq AND m.seq <= ?" + where + seek
	last := "(SELECT " + edge + "(r) FROM p)"
	var bound string
	if dir == "DESC" {
		bound = " AND f.rowid >= (" + last + " >> 20) << 20"
	} else {
		bound = " AND f.rowid < ((" + last + " >> 20) + 1) << 20"
	}
	args := slices.Concat([]any{match, mark}, whereArgs, seekArgs)
	query := "WITH p AS (SELECT f.rowid AS r" + from + cond + " ORDER BY f.rowid " + dir + " LIMIT " + limit + ") " +
		"SELECT * FROM (SELECT * FROM (SELECT " + messageCols + from + "LEFT JOIN contacts AS c ON c.id = m.contact_id " + cond + bound + order + ") AS p0" +
		" UNION ALL SELECT * FROM (" + tail.String() + ") AS p1) AS u ORDER BY u.created_at " + dir + ", u.id " + dir + " LIMIT " + limit
	return s.searchPage(ctx, q, query, slices.Concat(args, args, tailArgs))
}

// searchMark returns the mark of the search index (searchindex.go) and,
// for a prefix, the words of the index it begins, read together so that
// the words are those of every message up to the mark.
func (s *store) searchMark(ctx context.Context, prefix string) (mark int64, terms []string, err error) {
	if prefix == "" {
		var marks []int64
		if err := s.read(ctx, &marks, "SELECT seq FROM message_search_mark"); err != nil {
			return 0, nil, err
		}
		if len(marks) != 1 {
			return 0, nil, errors.New("sqlstore: no search mark")
		}
		return marks[0], nil, nil
	}
	var rows []struct {
		Mark int64   `bun:"mark"`
		Term *string `bun:"term"`
	}
	if err := s.read(ctx, &rows, "SELECT k.seq AS mark, t.term AS term FROM message_search_mark AS k LEFT JOIN "+
		"(SELECT term FROM message_search_terms WHERE term >= ? AND term < ? LIMIT ?) AS t ON 1",
		prefix, prefix+"\U0010FFFF", maxPrefixWords+1); err != nil {
		return 0, nil, err
	}
	if len(rows) == 0 {
		return 0, nil, errors.New("sqlstore: no search mark")
	}
	terms = []string{}
	for _, r := range rows {
		if r.Term != nil {
			terms = append(terms, *r.Term)
		}
	}
	return rows[0].Mark, terms, nil
}

// ftsMatch returns the FTS5 query of q's words, its prefix named as the
// words of the index it begins (terms) when few: FTS5 reads a prefix
// query's every match before returning one (it merges the lists of its
// words), but streams an OR of words in rowid order. It returns false
// when the prefix begins no word of the index.
func ftsMatch(q driver.SearchQuery, terms []string) (string, bool) {
	var match strings.Builder
	match.WriteString("(")
	for i, w := range q.Words {
		if i > 0 {
			match.WriteString(" AND ")
		}
		match.WriteString(`"` + w + `"`)
	}
	if q.Prefix != "" {
		if len(q.Words) > 0 {
			match.WriteString(" AND ")
		}
		switch {
		case len(terms) == 0:
			return "", false
		case len(terms) > maxPrefixWords:
			match.WriteString(`"` + q.Prefix + `"*`)
		default:
			match.WriteString("(")
			for i, t := range terms {
				if i > 0 {
					match.WriteString(" OR ")
				}
				match.WriteString(`"` + t + `"`)
			}
			match.WriteString(")")
		}
	}
	match.WriteString(")")
	return match.String(), true
}

// prefixCost is what a row read and tested by LIKE costs in matches of a
// prefix read from GIN, in CPU: 1.1 µs against 0.35 (pgPrefixAlone).
var prefixCost int64 = 3

// prefixSample is the number of newest messages in which a search on
// PostgreSQL counts the matches of a prefix, to estimate its matches in
// the whole store (pgPrefixAlone).
const prefixSample = 1000

// pgPrefixAlone tells whether a search on PostgreSQL of prefix alone in
// the conversations convs reads their rows and tests the prefix on each
// (LIKE) rather than asking GIN for the prefix: when they are at most
// maxPrefixScan rows and the prefix's matches in the whole store,
// estimated from the newest prefixSample messages, are at least
// prefixCost times as many. One query.
func (s *store) pgPrefixAlone(ctx context.Context, convs []string, prefix string) (bool, error) {
	var est []struct {
		Rows, Sample, Total int64
	}
	err := s.read(ctx, &est, "SELECT "+searchRowsSQL+" AS rows, "+
		"(SELECT count(*) FROM (SELECT m.search_words FROM messages AS m ORDER BY m.created_at DESC, m.id DESC LIMIT "+
		strconv.Itoa(prefixSample)+") AS m WHERE (' ' || m.search_words) LIKE ?) AS sample, "+
		"(SELECT GREATEST(reltuples, 0)::bigint FROM pg_class WHERE oid = 'messages'::regclass) AS total",
		idList(convs), "% "+prefix+"%")
	if err != nil || len(est) == 0 {
		return false, err
	}
	e := est[0]
	return e.Rows <= maxPrefixScan && e.Sample*e.Total >= prefixCost*e.Rows*prefixSample, nil
}

// searchRows returns the rows of the conversations convs: the sum of
// their message_count. Their threads' replies are not counted: the OR of
// a LIKE per conversation that finds their rows of conversations cost
// PostgreSQL 35 ms to plan and 8 ms to run for 50 conversations, the IN
// alone 1 ms (EXPLAIN ANALYZE, load 21).
func (s *store) searchRows(ctx context.Context, convs []string) (int64, error) {
	var n []int64
	err := s.read(ctx, &n, "SELECT "+searchRowsSQL, idList(convs))
	if err != nil || len(n) == 0 {
		return 0, err
	}
	return n[0], nil
}

// searchRowsSQL is the expression of searchRows, the conversations its
// argument.
const searchRowsSQL = "(SELECT COALESCE(SUM(m.message_count), 0) FROM conversations AS m WHERE m.id IN (?))"

// maxSearchScan is the most rows of named conversations (the sum of their
// message_count) that a search on MySQL reads one by one, testing each
// row's words, rather than asking the FULLTEXT index, which reads every
// match of its words in the whole table: at a million messages, 4-7 µs a
// row against 140 µs a match (8.3 s for a word in 6% of the messages, 1
// ms for one in 0.01%; BENCHMARKS.md section 11). 50,000 rows cost less
// than the FULLTEXT search of any word in more than 0.2% of a million.
var maxSearchScan int64 = 50_000

// maxPrefixScan is the most rows of named conversations that a search on
// PostgreSQL of one word, a prefix, reads one by one rather than asking
// GIN for the prefix (1.1 µs of CPU a row against 0.35 µs a match of the
// prefix in the whole store: 6 ms against 21 ms for a prefix in 6% of a
// million messages, BENCHMARKS.md section 11).
var maxPrefixScan int64 = 20_000

// searchWindow and maxSearchWindow bound the rows, beyond the cursor,
// that a search of every conversation on MySQL walks newest first (oldest
// first for Before), testing each row's words, before it asks the
// FULLTEXT index: it walks searchWindow rows, then, if they held some
// matches but less than a page, as many as those matches say a page
// needs, up to maxSearchWindow.
var searchWindow, maxSearchWindow = 1_000, 20_000

// mysqlWords returns the condition on m that its words hold q's (the
// last as a prefix), tested on the row by LIKE, and its arguments.
func mysqlWords(q driver.SearchQuery) (string, []any) {
	var b strings.Builder
	args := make([]any, 0, len(q.Words)+1)
	for _, w := range q.Words {
		if b.Len() > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString("CONCAT(' ', m.search_words, ' ') LIKE ?")
		args = append(args, "% "+mysqlWordMark+w+" %")
	}
	if q.Prefix != "" {
		if b.Len() > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString("CONCAT(' ', m.search_words) LIKE ?")
		args = append(args, "% "+mysqlWordMark+q.Prefix+"%")
	}
	return b.String(), args
}

// searchMySQL is SearchMessages on MySQL and MariaDB. InnoDB's FULLTEXT
// search reads every match of its words in the whole table before it
// returns a row, whatever the LIMIT (seconds for a word in 5% of a
// million messages), so it is asked only when reading rows is dearer:
//
//   - named conversations (a member's, up to maxSearchConversations) of
//     at most maxSearchScan rows: their rows, read from
//     messages_conversation_created, each tested by LIKE, then sorted;
//   - every conversation: the rows of messages_created newest first, each
//     tested by LIKE, stopping at the page, in a window of searchWindow
//     rows; FULLTEXT when the window holds less than a page.
func (s *store) searchMySQL(ctx context.Context, q driver.SearchQuery) ([]messaging.Message, bool, error) {
	convs, member, err := s.searchConversations(ctx, q)
	if err != nil {
		return nil, false, err
	}
	if !q.All && member == "" && len(convs) == 0 {
		return []messaging.Message{}, false, nil
	}
	like, likeArgs := mysqlWords(q)
	page := func(index string, b branch) (string, []any) {
		return s.pageSQL(pageQuery{cols: messageCols, alias: "m", after: q.After, before: q.Before, limit: q.Limit,
			from:     "messages AS m FORCE INDEX (" + index + ") LEFT JOIN contacts AS c ON c.id = m.contact_id",
			branches: []branch{b}})
	}
	switch {
	case q.All:
		items, more, ok, err := s.searchMySQLWindow(ctx, q, like, likeArgs, page)
		if err != nil || ok {
			return items, more, err
		}
	case member == "":
		n, err := s.searchRows(ctx, convs)
		if err != nil {
			return nil, false, err
		}
		if n <= maxSearchScan {
			b, _ := s.searchScope(false, "", convs)
			b.where, b.args = b.where+" AND "+like, append(b.args, likeArgs...)
			query, args := page("messages_conversation_created", b)
			return s.searchPage(ctx, q, query, args)
		}
	}
	b, _ := s.searchScope(q.All, member, convs)
	match, args := mysqlSearchMatch(q)
	if b.where != "" {
		match = b.where + " AND " + match
		args = append(b.args, args...)
	}
	b = branch{where: match, args: args}
	query, qargs := s.pageSQL(pageQuery{cols: messageCols, from: messageFrom, alias: "m", after: q.After, before: q.Before,
		limit: q.Limit, branches: []branch{b}})
	return s.searchPage(ctx, q, query, qargs)
}

// searchMySQLWindow reads the page of q, a search of every conversation,
// from the rows of messages_created beyond q's cursor, testing each row's
// words (like), in a window of rows (searchWindow): ok is false when the
// window holds less than a page and more rows follow it.
func (s *store) searchMySQLWindow(ctx context.Context, q driver.SearchQuery, like string, likeArgs []any,
	page func(index string, b branch) (string, []any)) (items []messaging.Message, more, ok bool, err error) {
	dir, cmp, cur, edge := "DESC", "<", q.After, ">="
	if q.Before != nil {
		dir, cmp, cur, edge = "ASC", ">", q.Before, "<="
	}
	var seek string
	var seekArgs []any
	if cur != nil {
		t := cur.Time.UTC()
		seek = " WHERE m.created_at " + cmp + "= ? AND (m.created_at " + cmp + " ? OR m.id " + cmp + " ?)"
		seekArgs = []any{t, t, cur.ID}
	}
	for window := searchWindow; ; {
		// The time of the row window rows beyond the cursor, from the
		// index alone.
		var at []time.Time
		if err := s.read(ctx, &at, "SELECT m.created_at FROM messages AS m FORCE INDEX (messages_created)"+seek+
			" ORDER BY m.created_at "+dir+", m.id "+dir+" LIMIT 1 OFFSET "+strconv.Itoa(window), seekArgs...); err != nil {
			return nil, false, false, err
		}
		b := branch{where: like, args: likeArgs}
		if len(at) > 0 {
			// Every row from the cursor to at (ties included) is
			// tested, so a page found there is the page.
			b.where, b.args = "m.created_at "+edge+" ? AND "+like, append([]any{at[0]}, likeArgs...)
		}
		query, args := page("messages_created", b)
		rows := make([]messageRow, 0, q.Limit+1)
		if err := s.read(ctx, &rows, query, args...); err != nil {
			return nil, false, false, err
		}
		if len(at) == 0 || len(rows) > q.Limit {
			items, more, err = s.searchDone(ctx, q, rows)
			return items, more, true, err
		}
		// The rows a page needs at the rate of the matches found, and a
		// half more.
		need := max(window, 1) * (q.Limit + 1) / max(len(rows), 1) * 3 / 2
		if len(rows) == 0 || window >= maxSearchWindow || need > maxSearchWindow {
			return nil, false, false, nil
		}
		window = need
	}
}
