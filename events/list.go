package events

import (
	"context"
	"errors"
	"slices"

	"github.com/parleychat/parley/internal/check"
	"github.com/parleychat/parley/internal/domain"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging/driver"
)

// ListOptions select a page of past events, for clients that poll.
type ListOptions struct {
	// ConversationID narrows the list to one conversation; when "", the
	// list holds the events of every conversation the caller may see, and
	// those of the caller's attachments in none.
	ConversationID string
	// Limit is the page size: 0 for the default of 10, at most the
	// messaging Service's Options.MaxListLimit.
	Limit int
	// StartingAfter is the id of an event of the list; the page holds the
	// events just older than it.
	StartingAfter string
	// EndingBefore is the id of an event of the list; the page holds the
	// events just newer than it, still newest first.
	EndingBefore string
}

// Page is one page of events.
type Page struct {
	// Data are the events, newest first (Seq descending).
	Data []driver.Event
	// HasMore reports whether more exist beyond the page in the direction
	// of travel.
	HasMore bool
}

// List returns a page of the events the caller may see that are still
// kept, newest first. Errors: ErrInvalid for a bad limit, conversation id
// or cursor (an id that is not in the list, or no longer kept).
func (f *Feed) List(ctx context.Context, caller driver.Contact, o ListOptions) (Page, error) {
	p, err := f.list(ctx, caller, o)
	return p, domain.Wrap("events.List", err)
}

func (f *Feed) list(ctx context.Context, caller driver.Contact, o ListOptions) (Page, error) {
	limit, err := check.Limit(o.Limit, f.m.MaxListLimit)
	if err != nil {
		return Page{}, err
	}
	q := driver.EventQuery{ViewerID: caller.ID, Limit: limit + 1}
	if o.ConversationID != "" {
		if err := check.ConversationID("conversation_id", o.ConversationID); err != nil {
			return Page{}, err
		}
		ok, err := f.m.CanView(ctx, caller.ID, o.ConversationID)
		if err != nil {
			return Page{}, err
		}
		if !ok {
			return Page{Data: []driver.Event{}}, nil
		}
		q.ConversationIDs = []string{o.ConversationID}
	} else {
		all, member, convs, err := f.m.Scope(ctx, caller.ID)
		if err != nil {
			return Page{}, err
		}
		q.All, q.MemberID, q.ConversationIDs, q.Unfiled = all, member, convs, true
	}
	after, before, err := check.Cursors(o.StartingAfter, o.EndingBefore, func(id string) (int64, bool, error) {
		if !ids.Valid(ids.Event, id) {
			return 0, false, nil
		}
		e, err := f.store.GetEvent(ctx, id)
		if errors.Is(err, driver.ErrNotFound) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
		if o.ConversationID != "" && e.ConversationID != o.ConversationID {
			return 0, false, nil
		}
		ok, err := f.m.CanSeeEvent(ctx, caller, e)
		return e.Seq, ok, err
	})
	if err != nil {
		return Page{}, err
	}
	switch {
	case after != nil: // older than it
		q.Before, q.Newest = *after, true
	case before != nil: // newer than it, the oldest of them first
		q.After = *before
	default:
		q.Newest = true
	}
	evs, err := f.store.ReadEvents(ctx, q)
	if err != nil {
		return Page{}, err
	}
	more := len(evs) > limit
	if more {
		evs = evs[:limit]
	}
	if !q.Newest {
		slices.Reverse(evs)
	}
	return Page{Data: evs, HasMore: more}, nil
}
