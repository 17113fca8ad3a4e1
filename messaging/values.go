package messaging

import "github.com/parleychat/parley/messaging/driver"

// The values of the API are defined in package driver, which backends
// share with the services without importing them; these are their names
// for hosts. See driver for their fields.

// Contact is a person who sends messages: the caller, as the host's
// authenticator identifies it. A host that has users of its own may store
// each as a Contact under an ID of its choosing: SaveContact keeps any
// non-empty ID.
type Contact = driver.Contact

// Message is a unit of a conversation.
type Message = driver.Message

// Reaction is one reaction name, the usernames of the first who reacted
// with it (at most MaxEmbeddedReactors), in the order they came, and how
// many did.
type Reaction = driver.Reaction

// Reactor is one who reacted with a reaction name, and when.
type Reactor = driver.Reactor

// MaxEmbeddedReactors is the most reactors a Message carries of each
// reaction; Service.Reactors pages through all of them.
const MaxEmbeddedReactors = driver.MaxEmbeddedReactors

// Attachment is a file shared in a conversation, possibly linked to a
// message; package attachments uploads, serves, renames and deletes them.
type Attachment = driver.Attachment

// Page is one page of a list: its items in the list's order, and whether
// more exist beyond them. Every list of the services returns one.
type Page[T any] = driver.Page[T]

// ListOptions select a page of a list: its size and where it starts.
// What a list is narrowed by (a conversation, a message) is an argument
// of the call.
type ListOptions = driver.ListOptions

// Conversation is a conversation as one caller sees it.
type Conversation = driver.Conversation

// Member is a contact's membership of a conversation.
type Member = driver.Member

// Revision is an earlier text of an edited message.
type Revision = driver.Revision

// Event is a change, as it is recorded with the change and delivered after
// the commit (see package events).
type Event = driver.Event

// EventType names what changed, as the API's event "type".
type EventType = driver.EventType

// The types of events (see driver.EventType for each).
const (
	EventMessageCreated     = driver.EventMessageCreated
	EventMessageUpdated     = driver.EventMessageUpdated
	EventMessageDeleted     = driver.EventMessageDeleted
	EventAttachmentCreated  = driver.EventAttachmentCreated
	EventAttachmentUpdated  = driver.EventAttachmentUpdated
	EventAttachmentDeleted  = driver.EventAttachmentDeleted
	EventConversationRead   = driver.EventConversationRead
	EventConversationTyping = driver.EventConversationTyping
	EventsLost              = driver.EventsLost
)

// Typing says that a contact is typing in a conversation (see
// Service.Typing).
type Typing = driver.Typing

// Error is the error every service returns: a kind, a message written for
// people, and the parameter at fault, if any. Use errors.As to read it,
// and KindOf (or errors.Is with a kind) to classify it.
type Error = driver.Error

// ErrorKind classifies an error; a kind is itself an error, for
// errors.Is.
type ErrorKind = driver.ErrorKind

// The kinds of errors (see driver.ErrorKind for each).
const (
	ErrNotFound        = driver.ErrNotFound
	ErrInvalid         = driver.ErrInvalid
	ErrConflict        = driver.ErrConflict
	ErrPermission      = driver.ErrPermission
	ErrTooLarge        = driver.ErrTooLarge
	ErrUnimplemented   = driver.ErrUnimplemented
	ErrUnauthenticated = driver.ErrUnauthenticated
	ErrUnavailable     = driver.ErrUnavailable
)

// Codes of the API's error object (Error.Code).
const (
	// CodeMissing refines ErrInvalid: a required parameter is absent.
	CodeMissing = driver.CodeMissing
	// CodeInvalid refines ErrInvalid: a parameter is malformed or out of
	// range.
	CodeInvalid = driver.CodeInvalid
	// CodeKeyReused refines ErrInvalid: an idempotency key was first used
	// with other arguments.
	CodeKeyReused = driver.CodeKeyReused
	// CodeKeyInUse refines ErrConflict: a call with the idempotency key is
	// still under way; retry later.
	CodeKeyInUse = driver.CodeKeyInUse
)

// KindOf returns the kind of err: that of the outermost *Error that has a
// kind, else that of the first ErrorKind in err's chain, else zero (an
// internal error, or nil).
func KindOf(err error) ErrorKind { return driver.KindOf(err) }
