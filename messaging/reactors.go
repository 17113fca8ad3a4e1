package messaging

import (
	"context"
	"errors"
	"iter"
	"strconv"

	"github.com/parleychat/parley/internal/check"
	"github.com/parleychat/parley/internal/paging"
	"github.com/parleychat/parley/messaging/driver"
)

// Reactors returns a page of everyone who reacted to a message with the
// reaction name, in the order they came, each by its username as stored
// now, to a caller who may see the message. (A Message embeds only the
// first MaxEmbeddedReactors of each reaction.) A name nobody reacted with
// has no reactors. Errors: ErrNotFound for a message that does not exist
// (a deleted root's tombstone too) or that the caller may not see,
// ErrInvalid for a bad name, limit or cursor (a username that is not a
// reactor of the reaction): o.StartingAfter and o.EndingBefore take a
// username.
func (s *Service) Reactors(ctx context.Context, caller Contact, messageID, name string, o ListOptions) (Page[Reactor], error) {
	p, err := s.reactors(ctx, caller, messageID, name, o)
	return p, wrapErr("messaging.Reactors "+strconv.Quote(messageID), err)
}

// AllReactors returns an iterator over everyone who reacted to the
// message with the name, in the order they came, read page by page
// (o.Limit a page; 0 for the largest), from the first or from just after
// the username o.StartingAfter. o.EndingBefore must be empty. It yields
// the first error and stops.
func (s *Service) AllReactors(ctx context.Context, caller Contact, messageID, name string, o ListOptions) iter.Seq2[Reactor, error] {
	return paging.All("messaging.AllReactors", o, s.opts.MaxListLimit,
		func(o ListOptions) (Page[Reactor], error) { return s.Reactors(ctx, caller, messageID, name, o) },
		func(r Reactor) string { return r.Username })
}

func (s *Service) reactors(ctx context.Context, caller Contact, messageID, name string, o ListOptions) (Page[Reactor], error) {
	limit, err := check.Limit(o.Limit, s.opts.MaxListLimit)
	if err != nil {
		return Page[Reactor]{}, err
	}
	if err := check.ReactionName("name", name); err != nil {
		return Page[Reactor]{}, err
	}
	if _, err := s.lookupLive(ctx, caller, messageID); err != nil {
		return Page[Reactor]{}, err
	}
	q := driver.ReactorQuery{Window: driver.Window{Limit: limit}, MessageID: messageID, Name: name}
	// A cursor is a username; the store pages by contact id.
	q.After, q.Before, err = check.Cursors(o.StartingAfter, o.EndingBefore, func(username string) (driver.Cursor, bool, error) {
		c, err := s.repo.ContactByUsername(ctx, username)
		if errors.Is(err, ErrNotFound) {
			return driver.Cursor{}, false, nil
		}
		return driver.Cursor{ID: c.ID}, err == nil, err
	})
	if err != nil {
		return Page[Reactor]{}, err
	}
	items, more, err := s.repo.ListReactors(ctx, q)
	if errors.Is(err, ErrNotFound) {
		param, username := "starting_after", o.StartingAfter
		if q.Before != nil {
			param, username = "ending_before", o.EndingBefore
		}
		return Page[Reactor]{}, check.BadParam(param, param+" names no item of this list: "+username)
	}
	if err != nil {
		return Page[Reactor]{}, err
	}
	if items == nil {
		items = []Reactor{}
	}
	return Page[Reactor]{Data: items, HasMore: more}, nil
}
