package sqlstore

import (
	"context"
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
//     (migrations/sqlite);
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

// searchMatch returns the condition on m (messages) of the messages whose
// words match q, and its arguments.
func (s *store) searchMatch(q driver.SearchQuery) (string, []any) {
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
		return "array_to_tsvector(string_to_array(m.search_words, ' ')) @@ ?::tsquery", []any{b.String()}
	case flavorMySQL:
		for _, w := range q.Words {
			b.WriteString("+" + mysqlWordMark + w + " ")
		}
		if q.Prefix != "" {
			b.WriteString("+" + mysqlWordMark + q.Prefix + "*")
		}
		return "MATCH (m.search_words) AGAINST (? IN BOOLEAN MODE)", []any{strings.TrimSpace(b.String())}
	default:
		for _, w := range q.Words {
			b.WriteString(`"` + w + `" `)
		}
		if q.Prefix != "" {
			b.WriteString(`"` + q.Prefix + `"*`)
		}
		return "m.id IN (SELECT i.message_id FROM message_search AS f JOIN message_search_ids AS i ON i.rowid = f.rowid WHERE message_search MATCH ?)",
			[]any{strings.TrimSpace(b.String())}
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
	convs, member, err := s.scope(ctx, q.All, q.MemberID, q.ConversationIDs)
	if err != nil {
		return nil, false, err
	}
	b, ok := s.scopeBranch("m.conversation_id", q.All, member, convs)
	if !ok {
		return []messaging.Message{}, false, nil
	}
	if !q.All && len(convs) > 0 {
		// The replies of these conversations are under their threads'
		// keys (threads.go).
		b.where, b.args = "("+b.where+" OR "+threadsOf("m.conversation_id", len(convs))+")", append(b.args, threadPatterns(convs)...)
	}
	if member != "" {
		// A member of many conversations: the replies of those are under
		// their threads' keys, whose conversation is before the slash.
		b.where, b.args = "("+b.where+" OR "+s.memberOf(s.threadConversation("m.conversation_id"))+")", append(b.args, member)
	}
	match, args := s.searchMatch(q)
	if b.where != "" {
		match = b.where + " AND " + match
		args = append(b.args, args...)
	}
	p := pageQuery{cols: messageCols, from: messageFrom, alias: "m", after: q.After, before: q.Before, limit: q.Limit,
		branches: []branch{{where: match, args: args}}}
	query, qargs := s.pageSQL(p)
	rows := make([]messageRow, 0, q.Limit+1)
	if err := s.read(ctx, &rows, query, qargs...); err != nil {
		return nil, false, err
	}
	rows, more := trimPage(rows, q.Limit, q.Before != nil)
	items, err := complete(ctx, s.flavor, s.readByIDs, rows)
	if err != nil {
		return nil, false, err
	}
	return items, more, nil
}
