package attachments

import (
	"time"

	"github.com/parleychat/parley/internal/domain"
	"github.com/parleychat/parley/messaging/driver"
)

// The events of the files service: attachment.created on upload,
// attachment.updated on rename, attachment.deleted on delete (with
// message.updated for the message it leaves). Linking an attachment to a
// message is a change of the message, whose events the messaging Service
// records. An attachment in no conversation is seen by its uploader only,
// and so are its events (their audience).

func (s *Service) now() time.Time { return s.opts.Now().UTC().Truncate(time.Microsecond) }

// recorder returns mk: every write records its events.
func (s *Service) recorder(mk driver.Recorder) driver.Recorder { return mk }

// notify tells the Feed that a write that recorded events has committed.
func (s *Service) notify() {
	if s.m.Committed != nil {
		s.m.Committed()
	}
}

// attachmentEvents returns an event of type t for each of atts, made at at.
func attachmentEvents(t driver.EventType, atts []driver.Attachment, at time.Time) []driver.Event {
	out := make([]driver.Event, 0, len(atts))
	for i := range atts {
		a := atts[i]
		e := domain.NewEvent(t, a.ConversationID, a.UploaderID, at)
		e.Attachment = &a
		out = append(out, e)
	}
	return out
}

// deleteEvents returns the events of a deleted attachment: attachment.deleted,
// and message.updated for the message it was linked to.
func deleteEvents(c driver.Change, at time.Time) []driver.Event {
	var out []driver.Event
	for _, a := range c.Removed {
		e := domain.NewEvent(driver.EventAttachmentDeleted, a.ConversationID, a.UploaderID, at)
		e.DeletedID = a.ID
		out = append(out, e)
	}
	if m := c.Message; m != nil {
		e := domain.NewEvent(driver.EventMessageUpdated, m.ConversationID, "", at)
		e.Message = m
		out = append(out, e)
	}
	return out
}
