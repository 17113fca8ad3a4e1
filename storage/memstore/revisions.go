package memstore

import (
	"context"
	"fmt"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

func revPos(r messaging.Revision) driver.Cursor {
	return driver.Cursor{Time: r.CreatedAt, ID: r.ID}
}

// ListRevisions returns a page of the message's revisions, newest first,
// and whether more exist in the direction of travel.
func (s *store) ListRevisions(ctx context.Context, q driver.RevisionQuery) ([]messaging.Revision, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	all := make([]messaging.Revision, 0, len(s.revsOf[q.MessageID]))
	for _, id := range s.revsOf[q.MessageID] {
		all = append(all, s.revisions[id])
	}
	sortNewestFirst(all, revPos)
	sel, more, err := page(all, revPos, q.Limit, q.After, q.Before)
	if err != nil {
		return nil, false, err
	}
	out := make([]messaging.Revision, len(sel))
	copy(out, sel)
	return out, more, nil
}

// GetRevision returns the revision, or an error matching
// messaging.ErrNotFound.
func (s *store) GetRevision(ctx context.Context, id string) (messaging.Revision, error) {
	if err := ctx.Err(); err != nil {
		return messaging.Revision{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.revisions[id]
	if !ok {
		return messaging.Revision{}, fmt.Errorf("memstore: no revision %q: %w", id, messaging.ErrNotFound)
	}
	return r, nil
}

// addRevision keeps r, under s.mu.
func (s *store) addRevision(r messaging.Revision) {
	s.revisions[r.ID] = r
	s.revsOf[r.MessageID] = append(s.revsOf[r.MessageID], r.ID)
}

// removeRevisions forgets the revisions of a message, under s.mu.
func (s *store) removeRevisions(messageID string) {
	for _, id := range s.revsOf[messageID] {
		delete(s.revisions, id)
	}
	delete(s.revsOf, messageID)
}
