package driver

import "time"

// The queries of the lists. Every list is read by keyset: a page is the
// Limit items just beyond a position, never an offset, so a deep page
// costs what the first does. So every query but EventQuery embeds one
// Window, and those of the lists that the caller's access narrows
// (messages, conversations, attachments, events) embed one Scope; the
// rest of a query is what narrows its list alone.

// Cursor is a position in a list: the (Time, ID) of an item. The lists of
// messages, attachments, revisions (by CreatedAt) and conversations (by
// UpdatedAt) are ordered by Time, then ID, both descending.
//
// A Cursor whose Time is zero names its item by ID alone, and the backend
// finds the item's place itself (in the page's own query, where it can, so
// that a cursor costs no statement of its own). The Service gives such
// cursors where it knows only an id: the members of a conversation (by
// contact id) and the memberships of a contact (by conversation id), which
// are ordered by that id ascending and need no more; the reactors of a
// reaction (by contact id), which are in the order they came, where an id
// that is not a reactor is an error matching ErrNotFound; and the messages
// of a list of one conversation (Scope.ConversationIDs of one, All false,
// MemberID empty), where a message that is not of that conversation is an
// error matching ErrNotFound; and the conversations (ConversationQuery)
// and threads (ThreadQuery), where an id that is not in the list is an
// error matching ErrNotFound. Every other cursor has its Time.
type Cursor struct {
	// Time is the item's time in the list's order: CreatedAt for messages,
	// attachments and revisions, UpdatedAt for conversations; zero for a
	// cursor by ID alone.
	Time time.Time
	// ID is the item's id, which breaks ties of Time.
	ID string
}

// Window selects a page of a list: the Limit items just beyond After, or
// just before Before, in the list's order.
type Window struct {
	// Limit is the page size, at least 1.
	Limit int
	// After, when set, selects the Limit items just after it in the list's
	// order (older, in a list newest first).
	After *Cursor
	// Before, when set, selects the Limit items just before it; they are
	// still returned in the list's order. After and Before are never both
	// set, and Before is never set for members.
	Before *Cursor
}

// Scope is the conversations a list filtered by the caller's access
// holds: every one (All), or those of ConversationIDs and those MemberID
// is a member of.
type Scope struct {
	// All selects every conversation; ConversationIDs and MemberID are
	// then ignored.
	All bool
	// ConversationIDs selects these conversations.
	ConversationIDs []string
	// MemberID, when set, also selects the conversations this contact is
	// a member of (MessageStore.AddMember).
	MemberID string
}

// MessageQuery selects a page of messages, newest first.
type MessageQuery struct {
	Scope
	Window
}

// ConversationQuery selects a page of conversations, most recently active
// first. Its cursors may be by conversation id alone (Cursor.Time zero): a
// conversation of the list (of the Scope; with All, not a thread's), else
// an error matching ErrNotFound.
type ConversationQuery struct {
	Scope
	Window
	// ViewerID is the contact whose read state (UnreadCount,
	// LastReadMessageID) each conversation carries.
	ViewerID string
}

// AttachmentQuery selects a page of attachments, newest first.
type AttachmentQuery struct {
	Scope
	Window
	// UploaderID, when set, also lists the attachments that this contact
	// uploaded without a conversation (ConversationID "").
	UploaderID string
}

// RevisionQuery selects a page of a message's revisions, newest first.
type RevisionQuery struct {
	Window
	// MessageID is the message whose revisions are listed.
	MessageID string
}

// MemberQuery selects a page of members, forward only (Window.Before is
// never set): those of ConversationID by contact id, or the memberships
// of ContactID by conversation id, ascending; Window.After is a cursor by
// that id alone, and the page holds the items whose id sorts after it.
type MemberQuery struct {
	Window
	// ConversationID selects the members of a conversation.
	ConversationID string
	// ContactID selects the memberships of a contact.
	ContactID string
}

// ReactorQuery selects a page of the reactors of one reaction, in the
// order they came. Its cursors are by contact id alone.
type ReactorQuery struct {
	Window
	// MessageID and Name select the reaction.
	MessageID, Name string
}

// EventQuery selects events. The outbox is a log ordered by Seq, not a list
// of (Time, ID), so its window is its own: After, Before and Limit in
// Seq, and Newest for the direction.
type EventQuery struct {
	Scope
	// Unfiled also selects the events of no conversation (ConversationID
	// "": those of attachments in none).
	Unfiled bool
	// ViewerID, when set, keeps of the events selected above only those
	// with no AudienceID or with AudienceID ViewerID.
	ViewerID string
	// After, when > 0, selects events with a Seq greater than it.
	After int64
	// Before, when > 0, selects events with a Seq less than it.
	Before int64
	// Limit is the most events returned, at least 1.
	Limit int
	// Newest returns the events newest first (Seq descending): the Limit
	// events of greatest Seq. Otherwise they come oldest first, the Limit
	// of least Seq.
	Newest bool
	// Redact returns each event as Redact makes it, for the messages and
	// attachments that a stored message.deleted or attachment.deleted
	// event names (DeletedID), whatever its Seq: once a delete has
	// committed, no read with Redact shows what it deleted. Without it,
	// events come as recorded.
	Redact bool
}

// SearchQuery selects a page of the messages whose text matches a search,
// newest first, as MessageQuery does: Scope and Window alike (its cursors
// always have their Time), and Words and Prefix from the query.
//
// A message matches when the words of its text, as SearchWords returns
// them, include every one of Words, and one that starts with Prefix (when
// Prefix is not ""). Words and Prefix are folded as SearchWords folds, so
// a backend compares them with the stored words as they are.
type SearchQuery struct {
	Scope
	Window
	// Words must each be a word of the text, whole; at least one of Words
	// and Prefix is set.
	Words []string
	// Prefix, when not "", must begin a word of the text.
	Prefix string
}
