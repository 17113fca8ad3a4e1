package driver

import "time"

// EventType names what changed, as the API's event "type".
type EventType string

// The types of events. Every change a Service makes records one or more of
// them; EventsLost is made by a subscription, never stored.
const (
	// EventMessageCreated: a message was sent (Event.Message).
	EventMessageCreated EventType = "message.created"
	// EventMessageUpdated: a message's text, reactions, read state or
	// attachments changed (Event.Message, after the change).
	EventMessageUpdated EventType = "message.updated"
	// EventMessageDeleted: a message was deleted (Event.DeletedID).
	EventMessageDeleted EventType = "message.deleted"
	// EventAttachmentCreated: a file was uploaded (Event.Attachment).
	EventAttachmentCreated EventType = "attachment.created"
	// EventAttachmentUpdated: an attachment was renamed or linked to a
	// message (Event.Attachment, after the change).
	EventAttachmentUpdated EventType = "attachment.updated"
	// EventAttachmentDeleted: an attachment was deleted, by itself or with
	// its message (Event.DeletedID).
	EventAttachmentDeleted EventType = "attachment.deleted"
	// EventConversationRead: a contact's read position in a conversation
	// moved (Event.Conversation, as that contact sees it). Its audience is
	// that contact.
	EventConversationRead EventType = "conversation.read"
	// EventThreadRead: a contact's read position in a thread moved
	// (Event.Thread, as that contact sees it). Its audience is that
	// contact.
	EventThreadRead EventType = "thread.read"
	// EventConversationTyping: a contact is typing in a conversation
	// (Event.Typing). It is delivered live to the others who may see the
	// conversation, and never stored.
	EventConversationTyping EventType = "conversation.typing"
	// EventsLost starts a subscription that asked to resume after an event
	// that is no longer kept: the events in between are gone, and the
	// subscriber should reload what it shows. It is never stored.
	EventsLost EventType = "events.lost"
)

// Event is a change, as it is recorded in the outbox of the change's
// transaction and delivered after the commit. The object it carries is the
// resource as a read would return it just after the change; exactly one of
// Message, Attachment, Conversation, Thread, DeletedID and Typing is set (none for
// EventsLost).
type Event struct {
	// ID is the store's ("evt_…", see EventStore.ReadEvents): one per
	// event for every reader, telling nothing of other events; consumers
	// use it to drop duplicates and to resume a subscription. The
	// Service's Recorder makes one that stores may replace.
	ID string
	// Type says what changed.
	Type EventType
	// ConversationID is the conversation the change belongs to; "" for an
	// attachment in no conversation (its uploader is then the audience).
	ConversationID string
	// AudienceID, when set, is the one contact who may see the event (the
	// reader of a conversation.read, the uploader of an attachment in no
	// conversation). When "", everyone who may see the conversation may.
	AudienceID string
	// Created is when the change was made.
	Created time.Time

	// Message is the message after the change (message.created,
	// message.updated).
	Message *Message
	// Attachment is the attachment after the change (attachment.created,
	// attachment.updated).
	Attachment *Attachment
	// Conversation is the conversation after the change, as AudienceID sees
	// it (conversation.read).
	Conversation *Conversation
	// DeletedID is the id of the deleted message or attachment
	// (message.deleted, attachment.deleted; and, read back with
	// EventQuery.Redact, any event about one deleted since).
	DeletedID string
	// DeletedParentID is the root of a deleted reply (message.deleted).
	DeletedParentID string
	// Thread is the thread after the change, as AudienceID sees it
	// (thread.read).
	Thread *Thread
	// Typing is who is typing (conversation.typing).
	Typing *Typing

	// Redacted counts the messages and attachments that the event showed
	// when it was recorded and that are deleted since (a deleted message
	// with all its files): read back with EventQuery.Redact, it shows only
	// their ids (see Redact). 0 in an event as recorded. It only grows,
	// and two reads of an event with the same Redacted show the same.
	Redacted int

	// Seq is the event's place in the store's commit order, set by the
	// store when it is read back; 0 in an event not yet stored.
	Seq int64
}

// Change is what a write changed, as a repository reports it to the
// write's Recorder, inside the write's transaction: the resources after the
// change, read in that transaction. Each write of the MessageStore contracts
// says which fields it sets.
type Change struct {
	// Message is the message after the change, as GetMessage would return
	// it then (for DeleteMessage: the deleted message's ID, ConversationID
	// and Contact.ID).
	Message *Message
	// Conversation is the conversation after the change, as the contact
	// whose read position moved sees it.
	Conversation *Conversation
	// Thread is the thread after the change, as the contact whose read
	// position in it moved sees it (MarkThreadRead).
	Thread *Thread
	// RemovedRoot is the id of a deleted root that DeleteMessage removed
	// with its last reply (the tombstone is gone); "" otherwise.
	RemovedRoot string
	// Attachments are attachments after the change: the one created or
	// renamed.
	Attachments []Attachment
	// Removed are the attachments the change deleted, as they were, oldest
	// first.
	Removed []Attachment
}

// Recorder makes the events of a write from what it changed. A Service
// passes one to each write of the MessageStore; the repository calls it
// inside the write's transaction, after the change and before the commit
// (memstore: under its lock), and stores the events it returns, in order,
// in the same transaction: an event is stored if and only if its change
// commits. A repository that runs a transaction again (after a
// serialization failure, or, when it makes several callers' changes in
// one transaction, after another change of it failed) calls it again, and
// stores only the events of the attempt that commits; it may call it on
// another goroutine than the write's caller. A Recorder does no I/O and
// never calls the repository. A nil Recorder records nothing.
type Recorder func(Change) []Event

// Typing says that a contact is typing in a conversation, until ExpiresAt
// unless said again.
type Typing struct {
	ConversationID string
	Contact        Contact
	ExpiresAt      time.Time
}
