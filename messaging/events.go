package messaging

import (
	"context"
	"time"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging/driver"
)

// newEvent returns an event of type t in conversation conv, made at at.
func newEvent(t EventType, conv string, at time.Time) Event {
	return Event{ID: ids.NewAt(ids.Event, at), Type: t, ConversationID: conv, Created: at}
}

// CanSeeEvent reports whether caller may see ev: an event with an audience
// is seen by that contact only, and then only if the contact may see the
// conversation; an event of an attachment in no conversation, by its
// uploader (its audience); any other event, by whoever may see its
// conversation under the Policy.
func (s *Service) CanSeeEvent(ctx context.Context, caller Contact, ev Event) (bool, error) {
	if ev.AudienceID != "" && ev.AudienceID != caller.ID {
		return false, nil
	}
	if ev.ConversationID == "" {
		return ev.AudienceID != "", nil
	}
	return s.policy.CanView(ctx, caller.ID, ev.ConversationID)
}

// recorder returns the Recorder that makes events with mk: every write
// records its events.
func (s *Service) recorder(mk driver.Recorder) driver.Recorder { return mk }

// notify tells the Feed that a write that recorded events has committed.
func (s *Service) notify() { s.committed() }

// messageEvent returns the event of type t carrying m.
func messageEvent(t EventType, m Message, at time.Time) Event {
	e := newEvent(t, m.ConversationID, at)
	e.Message = &m
	return e
}

// linkedEvents returns the attachment.updated events of the attachments of
// m whose ids are in linked, made at at.
func linkedEvents(m Message, linked map[string]bool, at time.Time) []Event {
	var out []Event
	for i := range m.Attachments {
		if a := m.Attachments[i]; linked[a.ID] {
			e := newEvent(EventAttachmentUpdated, a.ConversationID, at)
			e.Attachment = &a
			out = append(out, e)
		}
	}
	return out
}
