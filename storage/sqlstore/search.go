package sqlstore

import (
	"context"
	"slices"
	"strings"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// Search: DESIGN.md §4.10. Words hold only letters, digits and marks, so
// they need no escaping in any engine's query syntax.

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
// match q, newest first, and whether more follow, as ListMessages pages.
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

// searchPage reads the page of q that query selects, as pageSQL's, and
// completes its messages.
func (s *store) searchPage(ctx context.Context, q driver.SearchQuery, query string, args []any) ([]messaging.Message, bool, error) {
	rows := make([]messageRow, 0, q.Limit+1)
	if err := s.read(ctx, &rows, query, args...); err != nil {
		return nil, false, err
	}
	return s.searchDone(ctx, q, rows)
}

// searchDone completes the messages of rows, q's page as pageSQL's.
func (s *store) searchDone(ctx context.Context, q driver.SearchQuery, rows []messageRow) ([]messaging.Message, bool, error) {
	rows, more := trimPage(rows, q.Limit, q.Before != nil)
	items, err := complete(ctx, s.sql, s.readByIDs, rows)
	return items, more && err == nil, err
}

// searchScope returns the condition on m of a search's scope (convs and
// member's), replies included; false when that is none.
func (s *store) searchScope(all bool, member string, convs []string) (branch, bool) {
	b, ok := s.scopeBranch("m.conversation_id", all, member, convs)
	if !ok || all {
		return b, ok
	}
	if len(convs) > 0 { // their replies, under their threads' keys
		c, args := threadsOf("m.conversation_id", convs)
		b.where, b.args = "("+b.where+" OR "+c+")", append(b.args, args...)
	}
	if member != "" { // the replies of a member's many conversations
		b.where, b.args = "("+b.where+" OR "+s.memberOf(s.threadConversation("m.conversation_id"))+")", append(b.args, member)
	}
	return b, true
}

// matchPage returns the page of q of the messages that match (a condition
// on m, with args) in the scope of q.All, member and convs (searchScope).
func (s *store) matchPage(q driver.SearchQuery, member string, convs []string, match string, args []any) pageQuery {
	b, _ := s.searchScope(q.All, member, convs)
	if b.where != "" {
		match, args = b.where+" AND "+match, append(b.args, args...)
	}
	return pageQuery{cols: messageCols, from: messageFrom, alias: "m", after: q.After, before: q.Before, limit: q.Limit,
		branches: []branch{{where: match, args: args}}}
}

// maxSearchConversations is the most conversations of a member that a
// search on SQLite or PostgreSQL names in its full-text query; a member
// of more is probed for row by row.
var maxSearchConversations = 500

// searchConversations resolves the scope of a search as scope does, up to
// maxSearchConversations without repeats; none for q.All.
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
// their message_count, without their threads' replies (DESIGN.md §4.10).
func (s *store) searchRows(ctx context.Context, convs []string) (int64, error) {
	return readOne[int64](ctx, s.read, "conversation", "SELECT COALESCE(SUM(m.message_count), 0) FROM conversations AS m WHERE m.id IN (?)", idList(convs))
}
