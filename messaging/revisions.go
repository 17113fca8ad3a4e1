package messaging

import (
	"context"
	"errors"
	"iter"
	"strconv"

	"github.com/parleychat/parley/internal/check"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/internal/paging"
	"github.com/parleychat/parley/messaging/driver"
)

// Revisions returns a page of the earlier texts of a message, newest
// first, to a caller who may see the message. Errors: ErrNotFound for a
// message that does not exist (a deleted root's tombstone too) or that
// the caller may not see, ErrInvalid for a bad limit or cursor (a revision
// id not of this message).
func (s *Service) Revisions(ctx context.Context, caller Contact, messageID string, o ListOptions) (Page[Revision], error) {
	p, err := s.revisions(ctx, caller, messageID, o)
	return p, wrapErr("messaging.Revisions "+strconv.Quote(messageID), err)
}

func (s *Service) revisions(ctx context.Context, caller Contact, messageID string, o ListOptions) (Page[Revision], error) {
	limit, err := check.Limit(o.Limit, s.opts.MaxListLimit)
	if err != nil {
		return Page[Revision]{}, err
	}
	if _, err := s.lookupLive(ctx, caller, messageID); err != nil {
		return Page[Revision]{}, err
	}
	q := driver.RevisionQuery{Window: driver.Window{Limit: limit}, MessageID: messageID}
	q.After, q.Before, err = check.Cursors(o.StartingAfter, o.EndingBefore, func(id string) (driver.Cursor, bool, error) {
		if !ids.Valid(ids.Revision, id) {
			return driver.Cursor{}, false, nil
		}
		r, err := s.repo.GetRevision(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return driver.Cursor{}, false, nil
		}
		return driver.Cursor{Time: r.CreatedAt, ID: r.ID}, r.MessageID == messageID, err
	})
	if err != nil {
		return Page[Revision]{}, err
	}
	items, more, err := s.repo.ListRevisions(ctx, q)
	if err != nil {
		return Page[Revision]{}, err
	}
	if items == nil {
		items = []Revision{}
	}
	return Page[Revision]{Data: items, HasMore: more}, nil
}

// AllRevisions returns an iterator over the earlier texts of a message,
// newest first, read page by page (o.Limit a page; 0 for the largest), from
// the newest or from just older than o.StartingAfter. o.EndingBefore must
// be empty. The iterator yields the first error (with a zero Revision) and
// stops; break out of the loop to stop early.
func (s *Service) AllRevisions(ctx context.Context, caller Contact, messageID string, o ListOptions) iter.Seq2[Revision, error] {
	return paging.All("messaging.AllRevisions", o, s.opts.MaxListLimit,
		func(o ListOptions) (Page[Revision], error) { return s.Revisions(ctx, caller, messageID, o) },
		func(r Revision) string { return r.ID })
}
