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

// RevisionListOptions select a page of a message's revisions.
type RevisionListOptions struct {
	// Limit is the page size: 0 for the default of 10, at most
	// Options.MaxListLimit; a larger or negative one is an error of kind
	// ErrInvalid naming "limit".
	Limit int
	// StartingAfter is the id of a revision of the message; the page holds
	// the revisions just older than it.
	StartingAfter string
	// EndingBefore is the id of a revision of the message; the page holds
	// the revisions just newer than it, still newest first.
	EndingBefore string
}

// RevisionPage is one page of a message's revisions.
type RevisionPage struct {
	// Data are the revisions of the page, newest first.
	Data []Revision
	// HasMore reports whether more revisions exist beyond the page in the
	// direction of travel.
	HasMore bool
}

// Revisions returns a page of the earlier texts of a message, newest
// first, to a caller who may see the message. Errors: ErrNotFound for a
// message that does not exist or that the caller may not see, ErrInvalid
// for a bad limit or cursor (a revision id not of this message).
func (s *Service) Revisions(ctx context.Context, caller Contact, messageID string, o RevisionListOptions) (RevisionPage, error) {
	p, err := s.revisions(ctx, caller, messageID, o)
	return p, wrapErr("messaging.Revisions "+strconv.Quote(messageID), err)
}

func (s *Service) revisions(ctx context.Context, caller Contact, messageID string, o RevisionListOptions) (RevisionPage, error) {
	limit, err := check.Limit(o.Limit, s.opts.MaxListLimit)
	if err != nil {
		return RevisionPage{}, err
	}
	if _, err := s.lookup(ctx, caller, messageID); err != nil {
		return RevisionPage{}, err
	}
	q := driver.RevisionQuery{MessageID: messageID, Limit: limit}
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
		return RevisionPage{}, err
	}
	items, more, err := s.repo.ListRevisions(ctx, q)
	if err != nil {
		return RevisionPage{}, err
	}
	if items == nil {
		items = []Revision{}
	}
	return RevisionPage{Data: items, HasMore: more}, nil
}

// AllRevisions returns an iterator over the earlier texts of a message,
// newest first, read page by page (o.Limit a page; 0 for the largest), from
// the newest or from just older than o.StartingAfter. o.EndingBefore must
// be empty. The iterator yields the first error (with a zero Revision) and
// stops; break out of the loop to stop early.
func (s *Service) AllRevisions(ctx context.Context, caller Contact, messageID string, o RevisionListOptions) iter.Seq2[Revision, error] {
	if o.Limit == 0 {
		o.Limit = s.opts.MaxListLimit
	}
	if o.EndingBefore != "" {
		return func(yield func(Revision, error) bool) {
			yield(Revision{}, wrapErr("messaging.AllRevisions", check.BadParam("ending_before", "AllRevisions walks toward older revisions: ending_before cannot be used")))
		}
	}
	return paging.All(o.StartingAfter, func(after string) ([]Revision, bool, error) {
		o.StartingAfter = after
		p, err := s.Revisions(ctx, caller, messageID, o)
		return p.Data, p.HasMore, err
	}, func(r Revision) string { return r.ID })
}
