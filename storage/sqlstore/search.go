package sqlstore

import (
	"context"
	"slices"
	"strings"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// Search (DESIGN.md §4.10). Every engine stores the words of a message's
// text as driver.SearchWords folds them, in messages.search_words, and
// indexes that column with its full-text index (engine.search), so that no engine's own tokenizer, folding,
// stop words or minimum word length changes what a query finds. Words hold
// only letters, digits and marks, so they need no escaping in any
// engine's query syntax.

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

// SearchMessages returns up to q.Limit messages of q's Scope whose words
// match q, newest first, and whether more exist beyond them in the
// direction of travel, in three queries (as ListMessages): the Scope and
// the match are conditions of one query.
func (s *store) SearchMessages(ctx context.Context, q driver.SearchQuery) (_ []messaging.Message, _ bool, err error) {
	defer wrapTo("sqlstore.SearchMessages", &err)
	if q.Limit < 1 {
		return nil, false, invalid("limit must be at least 1")
	}
	if len(q.Words) == 0 && q.Prefix == "" {
		return nil, false, invalid("a search needs a word")
	}
	convs, member, err := s.searchConversations(ctx, q)
	if err != nil {
		return nil, false, err
	}
	if !q.All && member == "" && len(convs) == 0 {
		return []messaging.Message{}, false, nil
	}
	return s.eng.search(ctx, s, q, convs, member)
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
		c, args := threadsOf("m.conversation_id", convs)
		b.where, b.args = "("+b.where+" OR "+c+")", append(b.args, args...)
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

// searchConversations resolves the scope of a search, as scope does with
// up to maxSearchConversations conversations, without repeats; none for
// q.All.
func (s *store) searchConversations(ctx context.Context, q driver.SearchQuery) (convs []string, member string, err error) {
	if q.All {
		return nil, "", nil
	}
	convs, member, err = s.scope(ctx, false, q.MemberID, q.ConversationIDs, maxSearchConversations)
	return dedupe(convs), member, err
}

// nameable tells whether the scope of a search can be named in the
// full-text query: some conversations, no member to probe for, and none
// of them a thread's key (whose conversation's token would stand for the
// whole conversation).
func nameable(all bool, member string, convs []string) bool {
	return !all && member == "" && len(convs) > 0 && !slices.ContainsFunc(convs, func(c string) bool { return strings.Contains(c, "/") })
}

// searchRows returns the rows of the conversations convs: the sum of
// their message_count. Their threads' replies are not counted: the OR of
// a LIKE per conversation that finds their rows of conversations cost
// PostgreSQL 35 ms to plan and 8 ms to run for 50 conversations, the IN
// alone 1 ms (EXPLAIN ANALYZE, load 21).
func (s *store) searchRows(ctx context.Context, convs []string) (int64, error) {
	var n []int64
	err := s.read(ctx, &n, "SELECT COALESCE(SUM(m.message_count), 0) FROM conversations AS m WHERE m.id IN (?)", idList(convs))
	if err != nil || len(n) == 0 {
		return 0, err
	}
	return n[0], nil
}
