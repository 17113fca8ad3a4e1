package messaging

import (
	"context"
	"errors"
	"iter"
	"strconv"
	"unicode/utf8"

	"github.com/parleychat/parley/internal/check"
	"github.com/parleychat/parley/internal/paging"
	"github.com/parleychat/parley/internal/search"
	"github.com/parleychat/parley/messaging/driver"
)

// Search returns a page of the messages whose text holds every word of
// query, newest first: of the conversation conversationID, or of every
// conversation the caller may see when it is "". Words are runs of letters
// and digits, compared with case and accents folded ("CAFÉ", "Café" and
// "cafe" are one word); the last word of the query also matches the words
// it begins ("meet" finds "meeting"), so that results follow a person
// typing. There are no stop words and no minimum length. A message is
// found by its text as it is now: not by the text an edit replaced.
// Scripts written without spaces (Chinese, Japanese, Thai) give one word
// for each run of letters between spaces and punctuation: such text is
// found by a whole run, or by its start as the last word of the query, on
// every backend alike (the words are made in Go, not by the engine).
//
// The caller's access (the Policy's Scope) is applied by the store in the
// search's query, as for Messages. A cursor (o.StartingAfter,
// o.EndingBefore) is the id of a message of the results.
//
// Errors: ErrInvalid for a query of no word or of more than
// Options.MaxSearchQueryChars characters (naming "query"), a bad limit,
// conversation id or cursor.
func (s *Service) Search(ctx context.Context, caller Contact, query, conversationID string, o ListOptions) (Page[Message], error) {
	p, err := s.search(ctx, caller, query, conversationID, o)
	return p, wrapErr("messaging.Search", err)
}

func (s *Service) search(ctx context.Context, caller Contact, query, conversationID string, o ListOptions) (Page[Message], error) {
	parsed, err := parseQuery(query, s.opts.MaxSearchQueryChars)
	if err != nil {
		return Page[Message]{}, err
	}
	limit, err := check.Limit(o.Limit, s.opts.MaxListLimit)
	if err != nil {
		return Page[Message]{}, err
	}
	q := driver.SearchQuery{Window: driver.Window{Limit: limit}, Words: parsed.Words, Prefix: parsed.Prefix}
	empty := Page[Message]{Data: []Message{}}
	if conversationID != "" {
		if err := check.ConversationID("conversation_id", conversationID); err != nil {
			return Page[Message]{}, err
		}
		ok, err := s.policy.CanView(ctx, caller.ID, conversationID)
		if err != nil || !ok {
			return empty, err
		}
		q.ConversationIDs = []string{conversationID}
	} else {
		sc, err := s.policy.Scope(ctx, caller.ID)
		if err != nil {
			return Page[Message]{}, err
		}
		q.All, q.ConversationIDs = sc.All, sc.ConversationIDs
		if sc.Members {
			q.MemberID = caller.ID
		}
		if !q.All && q.MemberID == "" && len(q.ConversationIDs) == 0 {
			return empty, nil
		}
	}
	q.After, q.Before, err = check.Cursors(o.StartingAfter, o.EndingBefore, func(id string) (driver.Cursor, bool, error) {
		// A cursor is a message of the results: one the caller may see,
		// of the conversation asked for, that matches the query.
		m, err := s.get(ctx, caller, id)
		if errors.Is(err, ErrNotFound) {
			return driver.Cursor{}, false, nil
		}
		if err != nil {
			return driver.Cursor{}, false, err
		}
		ok := (conversationID == "" || m.ConversationID == conversationID) && parsed.Match(search.Words(m.Text))
		return driver.Cursor{Time: m.CreatedAt, ID: m.ID}, ok, nil
	})
	if err != nil {
		return Page[Message]{}, err
	}
	items, more, err := s.repo.SearchMessages(ctx, q)
	if err != nil {
		return Page[Message]{}, err
	}
	if items == nil {
		items = []Message{}
	}
	return Page[Message]{Data: items, HasMore: more}, nil
}

// parseQuery checks and parses a search query of at most maxChars
// characters, with no control characters (as all text of the API).
func parseQuery(query string, maxChars int) (search.Query, error) {
	if query == "" {
		return search.Query{}, check.Missing("query")
	}
	if !utf8.ValidString(query) || utf8.RuneCountInString(query) > maxChars {
		return search.Query{}, check.BadParam("query", "query must be valid text of at most "+strconv.Itoa(maxChars)+" characters")
	}
	if err := check.Text("query", query, false); err != nil {
		return search.Query{}, err
	}
	parsed, err := search.Parse(query)
	if err != nil {
		return search.Query{}, check.BadParam("query", "query must hold at least one word (letters or digits)")
	}
	return parsed, nil
}

// AllSearch returns an iterator over the messages Search finds, newest
// first, read page by page (o.Limit messages a page; 0 for the largest,
// Options.MaxListLimit), from the newest or from just older than
// o.StartingAfter. o.EndingBefore must be empty. The iterator yields the
// first error (with a zero Message) and stops; break out of the loop to
// stop early.
func (s *Service) AllSearch(ctx context.Context, caller Contact, query, conversationID string, o ListOptions) iter.Seq2[Message, error] {
	return paging.All("messaging.AllSearch", o, s.opts.MaxListLimit,
		func(o ListOptions) (Page[Message], error) { return s.Search(ctx, caller, query, conversationID, o) },
		func(m Message) string { return m.ID })
}
