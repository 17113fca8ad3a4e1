package memstore

import (
	"context"
	"slices"
	"strings"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// SearchMessages returns a page of the messages of q's Scope whose text
// matches q, newest first, and whether more exist in the direction of
// travel. It reads every message of the Scope: memstore is for tests.
func (s *store) SearchMessages(ctx context.Context, q driver.SearchQuery) ([]messaging.Message, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []*messaging.Message
	for _, m := range s.messages {
		if m.Deleted { // a root's tombstone
			continue
		}
		if !(q.All || slices.Contains(q.ConversationIDs, m.ConversationID) || s.isMember(m.ConversationID, q.MemberID)) {
			continue
		}
		if matches(driver.SearchWords(m.Text), q.Words, q.Prefix) {
			all = append(all, m)
		}
	}
	sortNewestFirst(all, msgPos)
	sel, more, err := page(all, msgPos, q.Limit, q.After, q.Before)
	if err != nil {
		return nil, false, err
	}
	out := make([]messaging.Message, len(sel))
	for i, m := range sel {
		out[i] = s.view(m)
	}
	return out, more, nil
}

// matches reports whether words, sorted, hold every one of want and one
// that starts with prefix.
func matches(words, want []string, prefix string) bool {
	for _, w := range want {
		if _, ok := slices.BinarySearch(words, w); !ok {
			return false
		}
	}
	if prefix == "" {
		return true
	}
	i, _ := slices.BinarySearch(words, prefix)
	return i < len(words) && strings.HasPrefix(words[i], prefix)
}
