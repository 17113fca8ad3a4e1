package sqlstore

import (
	"context"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

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
func (s *store) searchWords(text string) string { return searchWordsOf(s.flavor, text) }

// searchWordsOf returns the value of messages.search_words for text on f.
func searchWordsOf(f flavor, text string) string {
	words := driver.SearchWords(text)
	if f == flavorMySQL {
		for i, w := range words {
			words[i] = mysqlWordMark + w
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

// searchMatch returns the condition on m (messages) of the messages whose
// words match q, and its arguments; on PostgreSQL, of the conversations
// convs too when not empty (their replies included).
func (s *store) searchMatch(q driver.SearchQuery, convs []string) (string, []any) {
	var b strings.Builder
	switch s.flavor {
	case flavorPostgres:
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
			b.WriteString(" & (")
			for i, c := range convs {
				if i > 0 {
					b.WriteString(" | ")
				}
				b.WriteString(tsLexeme("§" + c))
			}
			b.WriteString(")")
		}
		return pgSearchVector + " @@ ?::tsquery", []any{b.String()}
	default: // MySQL, MariaDB (SQLite: searchSQLite)
		for _, w := range q.Words {
			b.WriteString("+" + mysqlWordMark + w + " ")
		}
		if q.Prefix != "" {
			b.WriteString("+" + mysqlWordMark + q.Prefix + "*")
		}
		return "MATCH (m.search_words) AGAINST (? IN BOOLEAN MODE)", []any{strings.TrimSpace(b.String())}
	}
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
	if s.flavor == flavorSQLite {
		return s.searchSQLite(ctx, q)
	}
	var convs []string
	var member string
	var err error
	if s.flavor == flavorPostgres {
		convs, member, err = s.searchConversations(ctx, q)
	} else {
		convs, member, err = s.scope(ctx, q.All, q.MemberID, q.ConversationIDs)
	}
	if err != nil {
		return nil, false, err
	}
	var named []string
	if s.flavor == flavorPostgres && nameable(q.All, member, convs) {
		// The conversations are lexemes of the tsquery: no other
		// condition.
		named, q.All = convs, true
	}
	b, ok := s.searchScope(q.All, member, convs)
	if !ok {
		return []messaging.Message{}, false, nil
	}
	match, args := s.searchMatch(q, named)
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
	rows, more := trimPage(rows, q.Limit, q.Before != nil)
	items, err := complete(ctx, s.flavor, s.readByIDs, rows)
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

// searchSQLite is SearchMessages on SQLite. FTS5 returns the matches of
// its query in rowid order, which is time order to the millisecond, and
// a query that names the scope's conversations matches only theirs: the
// first query (p) reads the matches newest first (oldest first for
// Before) and stops at limit+1 of them, without reading the others; the
// second reads those again with every other match of the millisecond of
// the last of them, whose rowids are not in (created_at, id) order, and
// sorts them exactly.
//
// A member of more than maxSearchConversations conversations is probed
// for row by row (memberOf), still in rowid order.
func (s *store) searchSQLite(ctx context.Context, q driver.SearchQuery) ([]messaging.Message, bool, error) {
	convs, member, err := s.searchConversations(ctx, q)
	if err != nil {
		return nil, false, err
	}
	if !q.All && member == "" && len(convs) == 0 {
		return []messaging.Message{}, false, nil
	}
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
		// The words the prefix begins, when few: FTS5 reads a prefix
		// query's every match before returning one (it merges the lists
		// of its words), but streams an OR of words in rowid order.
		var terms []string
		if err := s.read(ctx, &terms, "SELECT term FROM message_search_terms WHERE term >= ? AND term < ? LIMIT ?",
			q.Prefix, q.Prefix+"\U0010FFFF", maxPrefixWords+1); err != nil {
			return nil, false, err
		}
		switch {
		case len(terms) == 0:
			return []messaging.Message{}, false, nil
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
	var where string
	var whereArgs []any
	switch {
	case nameable(q.All, member, convs):
		// A conversation's token stands for its replies too.
		match.WriteString(" AND (")
		for i, c := range convs {
			if i > 0 {
				match.WriteString(" OR ")
			}
			match.WriteString(`"` + ftsConversation(c) + `"`)
		}
		match.WriteString(")")
	case !q.All:
		// Ids of threads, or a member of many.
		b, _ := s.searchScope(false, member, convs)
		where, whereArgs = " AND "+b.where, b.args
	}
	dir, cmp, cur, edge := "DESC", "<", q.After, "MIN"
	if q.Before != nil {
		dir, cmp, cur, edge = "ASC", ">", q.Before, "MAX"
	}
	var seek string
	var seekArgs []any
	if cur != nil {
		t := cur.Time.UTC()
		if dir == "DESC" {
			seek = " AND f.rowid < " + ftsBucket + " + 1048576"
		} else {
			seek = " AND f.rowid >= " + ftsBucket
		}
		seek += " AND m.created_at " + cmp + "= ? AND (m.created_at " + cmp + " ? OR m.id " + cmp + " ?)"
		seekArgs = []any{t, t, t, cur.ID}
	}
	// FTS5 is the outer loop (CROSS JOIN), in the order of its rowids.
	const from = " FROM message_search AS f CROSS JOIN message_search_ids AS i CROSS JOIN messages AS m "
	cond := "WHERE f.message_search MATCH ? AND i.rowid = f.rowid AND m.id = i.message_id" + where + seek
	last := "(SELECT " + edge + "(r) FROM p)"
	var bound string
	if dir == "DESC" {
		bound = " AND f.rowid >= (" + last + " >> 20) << 20"
	} else {
		bound = " AND f.rowid < ((" + last + " >> 20) + 1) << 20"
	}
	limit := strconv.Itoa(q.Limit + 1)
	query := "WITH p AS (SELECT f.rowid AS r" + from + cond + " ORDER BY f.rowid " + dir + " LIMIT " + limit + ") " +
		"SELECT " + messageCols + from + "LEFT JOIN contacts AS c ON c.id = m.contact_id " + cond + bound +
		" ORDER BY m.created_at " + dir + ", m.id " + dir + " LIMIT " + limit
	args := slices.Concat([]any{match.String()}, whereArgs, seekArgs)
	return s.searchPage(ctx, q, query, slices.Concat(args, args))
}
