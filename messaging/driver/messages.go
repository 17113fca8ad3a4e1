package driver

import (
	"context"
	"time"
)

// MessageChange is what MessageStore.UpdateMessage applies to a message, all
// at once or not at all. Nil and empty fields change nothing. The Service
// has checked every argument; the rules that depend on the stored message
// come as Check.
type MessageChange struct {
	// Text replaces the text.
	Text *string
	// RevisionID, when set with Text, keeps the text that Text replaces as
	// a Revision with this ID, replaced at UpdatedAt, in the same
	// transaction; when the text stays the same, no revision is kept.
	RevisionID string
	// Reactions, when not nil, adds or removes reactions of one contact.
	Reactions *ReactionChange
	// LinkAttachments links these attachments to the message (see
	// CreateMessage for the rules).
	LinkAttachments []string
	// NewAttachment, when not nil, is a new attachment row (its MessageID
	// ""), stored linked to the message (its ConversationID the message's)
	// in the change's transaction; Check counts it among the attachments
	// after the change. An existing ID is an error matching ErrConflict.
	NewAttachment *Attachment
	// Reservation, when set with NewAttachment, is the id of the upload
	// reservation (ReservationStore) that the new attachment completes: it
	// is removed in the change's transaction, and if it does not exist the
	// change is not made and the error matches ErrNotFound.
	Reservation string
	// Read, when true, sets the message's ReadAt to ReadAt unless it is
	// set already; when false, clears it.
	Read *bool
	// ReadAt is the time Read true records.
	ReadAt time.Time
	// UpdatedAt, when not zero, becomes the message's UpdatedAt.
	UpdatedAt time.Time
	// Check, when not nil, decides whether the change may be made. The
	// repository calls it inside the change's transaction, with the
	// message row locked, with the message's counts before and after the
	// change; when it returns an error, the repository changes nothing and
	// returns that error as it is.
	Check func(before, after MessageCounts) error
	// Record, when not nil, is the change's Recorder: the repository calls
	// it after the change, in the change's transaction, with
	// Change.Message set to the message as UpdateMessage returns it, and
	// stores the events it returns (see Recorder).
	Record Recorder
	// Done, when not nil, is the idempotency record the change answers: the
	// repository stores it in the change's transaction (see
	// IdempotencyStore, Keyed writes).
	Done *IdempotencyRecord
}

// MessageCounts are the numbers a MessageChange's Check decides by.
type MessageCounts struct {
	// ReactionNames is the number of distinct reaction names.
	ReactionNames int
	// Attachments is the number of linked attachments.
	Attachments int
	// ReactorNames is the number of distinct reaction names that the
	// contact of the change's Reactions has on the message; 0 when the
	// change adds no reaction.
	ReactorNames int
}

// ReactionChange is the change of one contact's reactions to a message,
// part of a MessageChange: the repository applies it in the change's
// transaction, with the change's other fields, or not at all. The Service
// has checked the names (valid, each given once).
type ReactionChange struct {
	// ContactID is the contact who reacts: the caller.
	ContactID string
	// Add are reaction names the contact reacts with, in order: a name the
	// contact has already is kept as it is; a new name comes after the
	// message's existing names, and the contact after the name's existing
	// reactors, reacted at At.
	Add []string
	// Remove are reaction names the contact no longer reacts with, removed
	// after Add is applied; a name the contact does not have is no error,
	// and a name left with no reactors disappears (and loses its place).
	Remove []string
	// At is when the reactions of Add were made.
	At time.Time
}

// MessageRef is what the Service's checks read of a message: where it is
// and who sent it, without its reactions and attachments.
type MessageRef struct {
	// ID is the message's id.
	ID string
	// ConversationID is the message's conversation.
	ConversationID string
	// SenderID is the contact id of the sender.
	SenderID string
	// CreatedAt is when the message was sent.
	CreatedAt time.Time
	// ParentID is the root of a reply; "" for a message that is not one.
	ParentID string
	// Deleted marks a root's tombstone (see ThreadStore).
	Deleted bool
}

// MessageImporter is the bulk load of a store that has one (sqlstore's):
// it stores messages as they are given, far faster than a create each,
// for migrations from other systems and for benchmarks, and records no
// events. messaging.Service.ImportMessages checks the messages and calls
// it; what the Service cannot check (that each sender exists, that an id
// is new, or names the message it named before) the store checks,
// storing nothing of a call that fails: an error matching ErrInvalid or
// ErrConflict.
type MessageImporter interface {
	ImportMessages(ctx context.Context, msgs []Message) error
}

// MessageStore stores messages, contacts and reactions, and links attachment
// rows to messages: it is what a storage backend implements for the
// Service. A backend implements it together with AttachmentStore
// over the same storage, so that a message and its attachment links commit
// together. Implementations must be safe for concurrent use; merges
// (reactions, links) must not lose writes under concurrent callers. The
// storetest package checks every obligation below.
//
// Errors that a contract names are kinds (ErrNotFound, ErrConflict),
// returned bare or wrapped with fmt.Errorf's %w; a backend that cannot
// reach its storage returns an error of kind ErrUnavailable. The wording
// people read is the Service's.
//
// Every write that changes a message or a conversation takes a Recorder
// (in MessageChange for UpdateMessage): the repository calls it inside the
// write's transaction with what changed, and stores the events it returns
// in the same transaction, as the outbox that package events reads
// (EventStore). An event is stored if and only if its change
// commits. Each method says what it reports in the Change; a call that
// fails calls no Recorder, or stores nothing of what it returned.
//
// Times are stored with at least microsecond precision and returned in UTC.
type MessageStore interface {
	IdempotencyStore
	RevisionStore

	// PutContact inserts the contact, or updates every field of the contact
	// with the same ID. If another contact has the same Username, it must
	// return an error matching ErrConflict.
	PutContact(ctx context.Context, c Contact) error

	// GetContact returns the contact, or an error matching ErrNotFound.
	GetContact(ctx context.Context, id string) (Contact, error)

	// ContactByUsername returns the contact with that username, or an error
	// matching ErrNotFound.
	ContactByUsername(ctx context.Context, username string) (Contact, error)

	// TouchContact moves the contact's LastActiveAt forward to at, never
	// back: of touches that commit out of order (two instances, or two
	// requests across a second's turn) the latest stays. A missing
	// contact is an error matching ErrNotFound.
	TouchContact(ctx context.Context, id string, at time.Time) error

	// CreateMessage stores m (m.Contact.ID names the sender; m.Reactions and
	// m.Attachments are empty) and links the attachments attachmentIDs to it,
	// in one transaction. Linking sets an attachment's MessageID and
	// ConversationID. It fails, storing nothing, with an error matching
	// ErrNotFound if an attachment does not exist, and ErrConflict if one is
	// linked to another message or belongs to another conversation.
	// rec's Change.Message is m as stored, with m.Contact as given, no
	// reactions, and its attachments as linked, oldest first.
	CreateMessage(ctx context.Context, m Message, attachmentIDs []string, rec Recorder) error

	// GetMessage returns the message with its contact (every field, as
	// stored now), reactions and attachments (oldest first), or an error
	// matching ErrNotFound. Each reaction carries its Count and its first
	// MaxEmbeddedReactors reactors, by their usernames as stored now; its
	// cost does not grow with the number of reactors.
	GetMessage(ctx context.Context, id string) (Message, error)

	// LookupMessage returns the conversation, sender and creation time of
	// the message, reading none of its reactions or attachments, or an
	// error matching ErrNotFound.
	LookupMessage(ctx context.Context, id string) (MessageRef, error)

	// ListReactors returns up to q.Limit reactors of the reaction q.Name of
	// the message q.MessageID, in the order they came, each with its
	// username as stored now, and whether more exist beyond them in the
	// direction of travel. A reaction or message that does not exist has
	// no reactors. A cursor (q.After, q.Before) that is not a reactor of
	// the reaction is an error matching ErrNotFound. A page costs the same
	// whatever the number of reactors.
	ListReactors(ctx context.Context, q ReactorQuery) (items []Reactor, hasMore bool, err error)

	// ListMessages returns up to q.Limit messages matching q, newest first
	// (CreatedAt, then ID, descending), each as GetMessage returns it, and
	// whether more exist beyond them in the direction of travel. It reads a
	// page in a fixed number of queries, whatever its size.
	ListMessages(ctx context.Context, q MessageQuery) (items []Message, hasMore bool, err error)

	// SearchMessages returns up to q.Limit messages of q's Scope whose
	// text matches q (see SearchQuery), newest first (CreatedAt, then ID,
	// descending), each as GetMessage returns it, and whether more exist
	// beyond them in the direction of travel. Replies match as other
	// messages do; an edited message matches by its text as it is now; a
	// deleted one (a root's tombstone too) never matches. The Scope is
	// applied in the query, so that a caller of few conversations pays for
	// those only.
	SearchMessages(ctx context.Context, q SearchQuery) (items []Message, hasMore bool, err error)

	// UpdateMessage applies ch atomically and returns the message as
	// GetMessage would after it. Errors: ErrNotFound for a missing message;
	// for links, those of CreateMessage (linking an attachment already linked
	// to this message is not an error); ch.Check's error as it is;
	// ErrKeyTaken when another record of ch.Done's key is in the way.
	// A change of reactions neither reads nor rewrites the reactors
	// already there: its cost does not grow with their number.
	UpdateMessage(ctx context.Context, id string, ch MessageChange) (Message, error)

	// DeleteMessage removes the message, its reactions, its revisions and
	// its attachment rows, and records the attachments' keys as pending
	// deletions (see AttachmentStore), in one transaction. It returns the removed
	// attachments, or an error matching ErrNotFound. rec's Change.Message
	// holds the deleted message's ID, ConversationID and Contact.ID, and
	// Change.Removed its removed attachments, oldest first.
	DeleteMessage(ctx context.Context, id string, rec Recorder) ([]Attachment, error)

	// GetAttachment returns the attachment row, or an error matching
	// ErrNotFound (the same method as AttachmentStore's).
	GetAttachment(ctx context.Context, id string) (Attachment, error)

	// Conversations. A conversation is stored from its first message (or
	// filed attachment: see AttachmentStore.CreateAttachment). Its
	// counters are kept by the writes that change them, in their
	// transactions: CreateMessage and DeleteMessage keep MessageCount,
	// UpdatedAt and LastMessage, and every contact's unread count, exact
	// under concurrent sends, deletes and reads.

	// GetConversation returns the conversation, with viewerID's read state
	// and its LastMessage as GetMessage returns it, or an error matching
	// ErrNotFound.
	GetConversation(ctx context.Context, id, viewerID string) (Conversation, error)

	// ListConversations returns up to q.Limit conversations matching q,
	// most recently active first (UpdatedAt, then ID, descending), each as
	// GetConversation returns it, and whether more exist beyond them in the
	// direction of travel. It reads a page in a fixed number of queries.
	ListConversations(ctx context.Context, q ConversationQuery) (items []Conversation, hasMore bool, err error)

	// MarkRead moves contactID's read position in the conversation
	// forward to messageID; a message at or before the position changes
	// nothing. It returns an error matching ErrNotFound when messageID is
	// not a message of the conversation. When the position moves, rec is
	// called with Change.Conversation: the conversation as contactID sees
	// it after the move (as GetConversation would return it); when it does
	// not, rec is not called.
	MarkRead(ctx context.Context, conversationID, contactID, messageID string, rec Recorder) error

	// AddMember records the membership (joined at at); an existing one is
	// kept as it is. An unknown contact is an error matching ErrNotFound.
	AddMember(ctx context.Context, conversationID, contactID string, at time.Time) error

	// RemoveMember ends the membership; a missing one is not an error.
	RemoveMember(ctx context.Context, conversationID, contactID string) error

	// IsMember reports whether the contact is a member of the conversation.
	IsMember(ctx context.Context, conversationID, contactID string) (bool, error)

	// ListMembers returns up to q.Limit members as q selects them, by id
	// ascending, and whether more follow.
	ListMembers(ctx context.Context, q MemberQuery) (items []Member, hasMore bool, err error)
}

// IdempotencyRecord is what a backend keeps of a write that answers an
// idempotency key, for backends.
//
// A record is done (Lock "", Result set) when it is stored by the write it
// answers, in the write's transaction. A long write (an upload) first
// claims its key (ClaimIdempotencyKey: a record with Lock set and no
// Result), so that a retry on any instance sees it under way, and then
// completes the claim in its transaction, or releases it
// (ReleaseIdempotencyKey) when it fails.
type IdempotencyRecord struct {
	// Scope is the id of the caller whose key it is: keys of different
	// callers never collide.
	Scope string
	// Key is the caller's key, 1 to 255 characters.
	Key string
	// Fingerprint identifies the write and its arguments (a hex SHA-256).
	Fingerprint string
	// Lock is the random token of the call that holds the record while its
	// write is under way; "" once the write is done.
	Lock string
	// Result is what a done write keeps of its answer: the id of the
	// Message or Attachment it returned, which a replay reads again (as the
	// caller may see it then), so that a record stays small.
	Result []byte
	// CreatedAt is when the call that wrote the record began.
	CreatedAt time.Time
	// ExpiresAt is when the record may be forgotten.
	ExpiresAt time.Time
}

// IdempotencyStore keeps the records of idempotency keys, in the same
// storage as the data they answer; it is part of MessageStore.
//
// # Keyed writes
//
// A keyed write is a repository write handed done, the record of the key it
// answers, as it is to be kept: CreateMessageKeyed, UpdateMessage with
// MessageChange.Done, and AttachmentStore's CreateAttachmentKeyed
// and RenameAttachmentKeyed. In the transaction of the write, the backend
// stores done with Lock "", in place of: no record of
// (done.Scope, done.Key); a record that expired (ExpiresAt not after
// done.CreatedAt); or the claim of done.Lock. If another record of the key
// is in the way (a done one that has not expired, or the claim of another
// call), the write changes nothing and fails with an error matching
// ErrKeyTaken; of concurrent keyed writes of one key, at most one succeeds.
// The change and its record commit together or not at all, so that no
// failure leaves a change without its record or a record without its
// change.
type IdempotencyStore interface {
	// GetIdempotencyKey returns the record of scope and key, or an error
	// matching ErrNotFound. An expired record may be returned until it is
	// pruned.
	GetIdempotencyKey(ctx context.Context, scope, key string) (IdempotencyRecord, error)

	// ClaimIdempotencyKey stores rec, a claim (rec.Lock set, rec.Result
	// nil), unless a record of the same Scope and Key is in its way: one
	// that has not expired (its ExpiresAt is after rec.CreatedAt) and that
	// is done (Lock "") or was claimed at or after staleBefore. A record
	// that is not in the way is replaced. It reports whether rec was
	// stored; when it was not, it returns the record in the way, unchanged.
	// Of concurrent claims of one key, at most one is stored. The claim
	// need not be durable before the call returns (the write that
	// completes it is).
	ClaimIdempotencyKey(ctx context.Context, rec IdempotencyRecord, staleBefore time.Time) (IdempotencyRecord, bool, error)

	// ReleaseIdempotencyKey removes the record of scope and key if it is
	// claimed with lock, and does nothing otherwise (a record completed or
	// taken over stays).
	ReleaseIdempotencyKey(ctx context.Context, scope, key, lock string) error

	// CreateMessageKeyed is CreateMessage that also stores done in its
	// transaction (see Keyed writes): on any error, neither the message,
	// nor its links, nor the record is stored.
	CreateMessageKeyed(ctx context.Context, m Message, attachmentIDs []string, rec Recorder, done IdempotencyRecord) error

	// PruneIdempotencyKeys removes up to limit records that expired
	// (ExpiresAt not after before), whether done or claimed, and returns
	// how many it removed.
	PruneIdempotencyKeys(ctx context.Context, before time.Time, limit int) (int, error)
}

// RevisionStore keeps the earlier texts of edited messages; it is part
// of MessageStore. A revision is written by UpdateMessage when
// MessageChange.RevisionID is set and the text changes, and removed by
// DeleteMessage with its message.
type RevisionStore interface {
	// ListRevisions returns up to q.Limit revisions of the message, newest
	// first (CreatedAt, then ID, descending), and whether more exist beyond
	// them in the direction of travel. A message without revisions, or
	// none at all, has an empty list.
	ListRevisions(ctx context.Context, q RevisionQuery) (items []Revision, hasMore bool, err error)

	// GetRevision returns the revision, or an error matching ErrNotFound.
	GetRevision(ctx context.Context, id string) (Revision, error)
}
