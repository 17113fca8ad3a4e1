package driver

// Deleted is gone from the events too (API.md, Events): once a message or
// an attachment is deleted, the events read back with EventQuery.Redact
// show nothing of it. A store finds the deleted ones among EventSubjects
// (those named by the DeletedID of a stored message.deleted or
// attachment.deleted event) and passes them to Redact.

// EventSubjects calls add with the id of every message and attachment
// that e shows: its Message or Attachment, the attachments of its
// Message, its Conversation's LastMessage and the Root of its Thread, and
// theirs. Ids may repeat.
func EventSubjects(e *Event, add func(id string)) {
	message := func(m *Message) {
		add(m.ID)
		for i := range m.Attachments {
			add(m.Attachments[i].ID)
		}
	}
	switch {
	case e.Message != nil:
		message(e.Message)
	case e.Attachment != nil:
		add(e.Attachment.ID)
	case e.Conversation != nil && e.Conversation.LastMessage != nil:
		message(e.Conversation.LastMessage)
	case e.Thread != nil && !e.Thread.Root.Deleted:
		message(&e.Thread.Root)
	}
}

// Redact removes from e what it shows of the messages and attachments
// for which deleted is true, and counts them in e.Redacted (a deleted
// message with every file it had, deleted or not, so that the count grows
// with each delete that changes what e shows, the message's after one of
// its files'):
//
//   - an event about one (its Message or Attachment) keeps only its id:
//     DeletedID (and DeletedParentID for a reply), as the event of its
//     delete carries;
//   - an embedded message (a Conversation's LastMessage, a Thread's Root)
//     becomes a tombstone (Message.Deleted), which keeps its id,
//     conversation, sender id, time and thread counts, and nothing of its
//     text, reactions or attachments;
//   - a deleted attachment is left out of a message's Attachments.
//
// Redact changes e in place and may change the objects it points to: a
// store calls it on events of its own (read back, or copies).
func Redact(e *Event, deleted func(id string) bool) {
	attachments := func(m *Message) {
		kept := m.Attachments[:0]
		for _, a := range m.Attachments {
			if deleted(a.ID) {
				e.Redacted++
				continue
			}
			kept = append(kept, a)
		}
		m.Attachments = kept
	}
	embedded := func(m *Message) {
		if m.Deleted {
			return
		}
		if !deleted(m.ID) {
			attachments(m)
			return
		}
		e.Redacted += 1 + len(m.Attachments)
		*m = Message{ID: m.ID, ConversationID: m.ConversationID, Contact: Contact{ID: m.Contact.ID}, CreatedAt: m.CreatedAt,
			ParentID: m.ParentID, ReplyCount: m.ReplyCount, LastReplyAt: m.LastReplyAt, Deleted: true}
	}
	switch {
	case e.Message != nil && deleted(e.Message.ID):
		e.Redacted += 1 + len(e.Message.Attachments)
		e.DeletedID, e.DeletedParentID, e.Message = e.Message.ID, e.Message.ParentID, nil
	case e.Message != nil:
		attachments(e.Message)
	case e.Attachment != nil && deleted(e.Attachment.ID):
		e.Redacted++
		e.DeletedID, e.Attachment = e.Attachment.ID, nil
	case e.Conversation != nil && e.Conversation.LastMessage != nil:
		embedded(e.Conversation.LastMessage)
	case e.Thread != nil:
		embedded(&e.Thread.Root)
	}
}
