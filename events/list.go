package events

import (
	"context"
	"errors"
	"iter"
	"slices"

	"github.com/parleychat/parley/internal/check"
	"github.com/parleychat/parley/internal/domain"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/internal/paging"
	"github.com/parleychat/parley/messaging/driver"
)

// Events returns a page of the past events the caller may see that are
// still kept, newest first, for clients that poll: those of the
// conversation, or when conversationID is "" those of every conversation
// the caller may see and of the caller's attachments in none. Errors:
// ErrInvalid for a bad limit, conversation id or cursor (an id that is not
// in the list, or no longer kept).
func (f *Feed) Events(ctx context.Context, caller driver.Contact, conversationID string, o driver.ListOptions) (driver.Page[driver.Event], error) {
	p, err := f.events(ctx, caller, conversationID, o)
	return p, domain.Wrap("events.Events", err)
}

// AllEvents returns an iterator over the events that Events lists, newest
// first, read page by page (o.Limit a page; 0 for the largest), from the
// newest or from just older than o.StartingAfter. o.EndingBefore must be
// empty. The iterator yields the first error (with a zero Event) and
// stops; break out of the loop to stop early.
func (f *Feed) AllEvents(ctx context.Context, caller driver.Contact, conversationID string, o driver.ListOptions) iter.Seq2[driver.Event, error] {
	return paging.All("events.AllEvents", o, f.m.MaxListLimit,
		func(o driver.ListOptions) (driver.Page[driver.Event], error) {
			return f.Events(ctx, caller, conversationID, o)
		},
		func(e driver.Event) string { return e.ID })
}

func (f *Feed) events(ctx context.Context, caller driver.Contact, conversationID string, o driver.ListOptions) (driver.Page[driver.Event], error) {
	limit, err := check.Limit(o.Limit, f.m.MaxListLimit)
	if err != nil {
		return driver.Page[driver.Event]{}, err
	}
	q := driver.EventQuery{ViewerID: caller.ID, Limit: limit + 1, Redact: true}
	if conversationID != "" {
		if err := check.ConversationID("conversation_id", conversationID); err != nil {
			return driver.Page[driver.Event]{}, err
		}
		ok, err := f.m.CanView(ctx, caller.ID, conversationID)
		if err != nil {
			return driver.Page[driver.Event]{}, err
		}
		if !ok {
			return driver.Page[driver.Event]{Data: []driver.Event{}}, nil
		}
		q.ConversationIDs = []string{conversationID}
	} else {
		all, member, convs, err := f.m.Scope(ctx, caller.ID)
		if err != nil {
			return driver.Page[driver.Event]{}, err
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
		if conversationID != "" && e.ConversationID != conversationID {
			return 0, false, nil
		}
		ok, err := f.m.CanSeeEvent(ctx, caller, e)
		return e.Seq, ok, err
	})
	if err != nil {
		return driver.Page[driver.Event]{}, err
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
		return driver.Page[driver.Event]{}, err
	}
	more := len(evs) > limit
	if more {
		evs = evs[:limit]
	}
	if !q.Newest {
		slices.Reverse(evs)
	}
	return driver.Page[driver.Event]{Data: evs, HasMore: more}, nil
}
