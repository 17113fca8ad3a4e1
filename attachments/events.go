package attachments

import (
	"time"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// The events of the files service: attachment.created on upload,
// attachment.updated on rename, attachment.deleted on delete (with
// message.updated for the message it leaves). Linking an attachment to a
// message is a change of the message, whose events the messaging Service
// records. An attachment in no conversation is seen by its uploader only,
// and so are its events (their audience).

func (s *Service) now() time.Time { return s.opts.Now().UTC().Truncate(time.Microsecond) }

// recorder returns mk, or nil while no events Feed is built on the
// messaging Service (see package events): writes then record no events.
func (s *Service) recorder(mk driver.Recorder) driver.Recorder {
	if s.domain.Committed() == nil {
		return nil
	}
	return mk
}

// notify tells the Feed that a write that recorded events has committed.
func (s *Service) notify() {
	if f := s.domain.Committed(); f != nil {
		f()
	}
}

// attachmentEvents returns an event of type t for each of atts, made at at.
func attachmentEvents(t messaging.EventType, atts []messaging.Attachment, at time.Time) []messaging.Event {
	out := make([]messaging.Event, 0, len(atts))
	for i := range atts {
		a := atts[i]
		e := driver.NewEvent(t, a.ConversationID, a.UploaderID, at)
		e.Attachment = &a
		out = append(out, e)
	}
	return out
}

// deleteEvents returns the events of a deleted attachment: attachment.deleted,
// and message.updated for the message it was linked to.
func deleteEvents(c driver.Change, at time.Time) []messaging.Event {
	var out []messaging.Event
	for _, a := range c.Removed {
		e := driver.NewEvent(messaging.EventAttachmentDeleted, a.ConversationID, a.UploaderID, at)
		e.DeletedID = a.ID
		out = append(out, e)
	}
	if m := c.Message; m != nil {
		e := driver.NewEvent(messaging.EventMessageUpdated, m.ConversationID, "", at)
		e.Message = m
		out = append(out, e)
	}
	return out
}
