package messaging

import (
	"context"
	"errors"
	"strconv"

	"github.com/parleychat/parley/internal/check"
	"github.com/parleychat/parley/messaging/driver"
)

// ReactorListOptions select a page of the reactors of one reaction.
type ReactorListOptions struct {
	// Limit is the page size: 0 for the default of 10, at most
	// Options.MaxListLimit; a larger or negative one is an error of kind
	// ErrInvalid naming "limit".
	Limit int
	// StartingAfter is the username of a reactor of the reaction; the page
	// holds the reactors who came just after it.
	StartingAfter string
	// EndingBefore is the username of a reactor of the reaction; the page
	// holds the reactors who came just before it, still in the order they
	// came.
	EndingBefore string
}

// ReactorPage is one page of the reactors of a reaction.
type ReactorPage struct {
	// Data are the reactors of the page, in the order they came.
	Data []Reactor
	// HasMore reports whether more reactors exist beyond the page in the
	// direction of travel.
	HasMore bool
}

// Reactors returns a page of everyone who reacted to a message with the
// reaction name, in the order they came, each by its username as stored
// now, to a caller who may see the message. (A Message embeds only the
// first MaxEmbeddedReactors of each reaction.) A name nobody reacted with
// has no reactors. Errors: ErrNotFound for a message that does not exist
// or that the caller may not see, ErrInvalid for a bad name, limit or
// cursor (a username that is not a reactor of the reaction).
func (s *Service) Reactors(ctx context.Context, caller Contact, messageID, name string, o ReactorListOptions) (ReactorPage, error) {
	p, err := s.reactors(ctx, caller, messageID, name, o)
	return p, wrapErr("messaging.Reactors "+strconv.Quote(messageID), err)
}

func (s *Service) reactors(ctx context.Context, caller Contact, messageID, name string, o ReactorListOptions) (ReactorPage, error) {
	limit, err := check.Limit(o.Limit, s.opts.MaxListLimit)
	if err != nil {
		return ReactorPage{}, err
	}
	if err := check.ReactionName("name", name); err != nil {
		return ReactorPage{}, err
	}
	if _, err := s.lookup(ctx, caller, messageID); err != nil {
		return ReactorPage{}, err
	}
	q := driver.ReactorQuery{MessageID: messageID, Name: name, Limit: limit}
	// A cursor is a username; the store pages by contact id.
	after, before, err := check.Cursors(o.StartingAfter, o.EndingBefore, func(username string) (string, bool, error) {
		c, err := s.repo.ContactByUsername(ctx, username)
		if errors.Is(err, ErrNotFound) {
			return "", false, nil
		}
		return c.ID, err == nil, err
	})
	if err != nil {
		return ReactorPage{}, err
	}
	if after != nil {
		q.After = *after
	}
	if before != nil {
		q.Before = *before
	}
	items, more, err := s.repo.ListReactors(ctx, q)
	if errors.Is(err, ErrNotFound) {
		param, username := "starting_after", o.StartingAfter
		if q.Before != "" {
			param, username = "ending_before", o.EndingBefore
		}
		return ReactorPage{}, check.BadParam(param, param+" names no item of this list: "+username)
	}
	if err != nil {
		return ReactorPage{}, err
	}
	if items == nil {
		items = []Reactor{}
	}
	return ReactorPage{Data: items, HasMore: more}, nil
}
