package messaging

import (
	"context"
	"time"

	"github.com/parleychat/parley/attachments"
)

// Cursor is a position in a list: the (CreatedAt, ID) of an item. Lists are
// ordered by CreatedAt, then ID, both descending.
type Cursor = attachments.Cursor

// ListQuery selects a page of messages for a repository.
type ListQuery struct {
	// ConversationIDs restricts the list to these conversations. When All is
	// true it is ignored.
	ConversationIDs []string
	// All lists messages of every conversation.
	All bool
	// Limit is the page size, at least 1.
	Limit int
	// After, when set, selects the Limit items just older than it.
	After *Cursor
	// Before, when set, selects the Limit items just newer than it; they are
	// still returned newest first. After and Before are never both set.
	Before *Cursor
}

// Change is what UpdateMessage applies to a message, all at once or not at
// all. Nil and empty fields change nothing.
type Change struct {
	// Text replaces the text.
	Text *string
	// AddReactions merges reactors into reactions: a reactor already under
	// a name is not added again; new names come after existing ones, new
	// reactors after existing ones, in the order given.
	AddReactions []Reaction
	// RemoveReaction removes Reactor from the reaction Name; a reaction left
	// with no reactors disappears. Removing one that is not there is no error.
	RemoveReaction *Reaction
	// LinkAttachments links these attachments to the message (see
	// CreateMessage for the rules).
	LinkAttachments []string
	// Read, when true, sets the message's ReadAt to ReadAt unless it is
	// set already; when false, clears it.
	Read *bool
	// ReadAt is the time Read true records.
	ReadAt time.Time
	// UpdatedAt, when not zero, becomes the message's UpdatedAt.
	UpdatedAt time.Time
	// MaxReactionNames is a limit the repository enforces atomically with
	// the merge: when > 0, a change that adds reaction names beyond it must
	// fail with an error matching ErrInvalid and change nothing. (A message
	// already over a lowered limit may still get reactors on its names.)
	MaxReactionNames int
	// MaxAttachments is the same for links: when > 0, a change that links
	// attachments beyond it fails with ErrInvalid and changes nothing.
	MaxAttachments int
}

// Repository stores messages, contacts and reactions, and links attachment
// rows to messages. A backend implements it together with
// attachments.Repository over the same storage, so that a message and its
// attachment links commit together. Implementations must be safe for
// concurrent use; merges (reactions, links) must not lose writes under
// concurrent callers. The storetest package checks every obligation below.
//
// Times are stored with at least microsecond precision and returned in UTC.
type Repository interface {
	// PutContact inserts the contact, or updates every field of the contact
	// with the same ID. If another contact has the same Username, it must
	// return an error matching ErrConflict.
	PutContact(ctx context.Context, c Contact) error

	// GetContact returns the contact, or an error matching ErrNotFound.
	GetContact(ctx context.Context, id string) (Contact, error)

	// ContactByUsername returns the contact with that username, or an error
	// matching ErrNotFound.
	ContactByUsername(ctx context.Context, username string) (Contact, error)

	// TouchContact sets the contact's LastActiveAt. A missing contact is an
	// error matching ErrNotFound.
	TouchContact(ctx context.Context, id string, at time.Time) error

	// CreateMessage stores m (m.Contact.ID names the sender; m.Reactions and
	// m.Attachments are empty) and links the attachments attachmentIDs to it,
	// in one transaction. Linking sets an attachment's MessageID and
	// ConversationID. It fails, storing nothing, with an error matching
	// ErrNotFound if an attachment does not exist, and ErrConflict if one is
	// linked to another message or belongs to another conversation.
	CreateMessage(ctx context.Context, m Message, attachmentIDs []string) error

	// GetMessage returns the message with its contact (every field, as
	// stored now), reactions and attachments (oldest first), or an error
	// matching ErrNotFound.
	GetMessage(ctx context.Context, id string) (Message, error)

	// ListMessages returns up to q.Limit messages matching q, newest first
	// (CreatedAt, then ID, descending), each as GetMessage returns it, and
	// whether more exist beyond them in the direction of travel. It reads a
	// page in a fixed number of queries, whatever its size.
	ListMessages(ctx context.Context, q ListQuery) (items []Message, hasMore bool, err error)

	// UpdateMessage applies ch atomically and returns the message as
	// GetMessage would after it. Errors: ErrNotFound for a missing message;
	// for links, those of CreateMessage (linking an attachment already linked
	// to this message is not an error); ErrInvalid for a limit.
	UpdateMessage(ctx context.Context, id string, ch Change) (Message, error)

	// DeleteMessage removes the message, its reactions and its attachment
	// rows, and records the attachments' keys as pending deletions (see
	// attachments.Repository), in one transaction. It returns the removed
	// attachments, or an error matching ErrNotFound.
	DeleteMessage(ctx context.Context, id string) ([]attachments.Attachment, error)
}
