package storecopy

import (
	"context"
	"iter"
	"time"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// This file holds the seam between the copier and the stores: the rows a
// store gives and takes, and the interfaces it implements to be copied.
// Application code never needs it.

// Kind is a kind of stored row. The kinds are copied in the order of their
// values, so that every row comes after the rows it refers to.
type Kind int

// The kinds of rows, in the order they are copied.
const (
	Contacts Kind = iota
	Conversations
	Members
	Messages
	ReactionNames
	Reactions
	Attachments
	Revisions
	IdempotencyKeys
	numKinds
)

// Kinds returns every kind, in the order they are copied.
func Kinds() []Kind {
	out := make([]Kind, numKinds)
	for i := range out {
		out[i] = Kind(i)
	}
	return out
}

var kindNames = [numKinds]string{"contacts", "conversations", "members", "messages", "reaction names", "reactions", "attachments", "revisions", "idempotency keys"}

// String returns the kind's name in the plural, such as "reaction names".
func (k Kind) String() string {
	if k < 0 || k >= numKinds {
		return "unknown"
	}
	return kindNames[k]
}

// Conversation is a conversation's row: its own fields and counters, the
// same for every viewer.
type Conversation struct {
	// ID is the conversation id.
	ID string
	// CreatedAt is when its first message or filed attachment was stored.
	CreatedAt time.Time
	// UpdatedAt is the time of the newest message, or CreatedAt while it
	// has none.
	UpdatedAt time.Time
	// MessageCount is the number of its messages.
	MessageCount int64
	// LastMessageID is the id of the newest message; "" while it has none.
	LastMessageID string
}

// Member is one contact's state in one conversation: its membership, its
// read position and the counters its unread count is made of (see
// sqlstore's conversations.go). A source gives only the members with
// something to say: a membership, a read position or messages of their
// own.
type Member struct {
	// ConversationID is the conversation, ContactID the contact.
	ConversationID, ContactID string
	// IsMember is true when the contact is a member of the conversation
	// (see messaging.MembersOnly); JoinedAt is when it was added, zero
	// unless IsMember, or, in a thread's conversation (see Message), when
	// the contact began to take part in the thread.
	IsMember bool
	JoinedAt time.Time
	// ReadCreated and ReadMessageID are the read position: the
	// (CreatedAt, ID) of the message read through; zero and "" for none.
	ReadCreated   time.Time
	ReadMessageID string
	// ReadCount counts the messages at or before the position, OwnCount
	// the contact's own messages, OwnReadCount those at or before it.
	ReadCount, OwnCount, OwnReadCount int64
}

// Message is a message's row, without its contact, reactions and
// attachments, which are rows of their own.
type Message struct {
	// ID is the message id; ConversationID its conversation's, or for a
	// reply its thread's conversation, "<conversation id>/<root id>",
	// whose Conversation and Member rows are the thread's counters and
	// read positions.
	ID, ConversationID string
	// ContactID is the sender's contact id.
	ContactID string
	// Text is the content.
	Text string
	// ReadAt is when the message was first marked read; zero while unread.
	ReadAt time.Time
	// CreatedAt is when the message was sent.
	CreatedAt time.Time
	// UpdatedAt is when the message was last updated (messaging.Message's
	// UpdatedAt); zero while never updated.
	UpdatedAt time.Time
	// ReactionCount is the number of the message's reaction names, and
	// AttachmentCount of its linked attachments: counters a store keeps
	// on the row.
	ReactionCount, AttachmentCount int
	// Thread marks a root that had replies; Deleted, the tombstone of a
	// root deleted while it had replies.
	Thread, Deleted bool
}

// Batch is a batch of rows of one Kind: the slice of that kind is set, the
// others are nil.
type Batch struct {
	// Kind is the kind of the rows, and names the one slice that is set.
	Kind Kind
	// The rows, one slice per kind.
	Contacts        []messaging.Contact
	Conversations   []Conversation
	Members         []Member
	Messages        []Message
	ReactionNames   []ReactionName
	Reactions       []Reaction
	Attachments     []messaging.Attachment
	Revisions       []messaging.Revision
	IdempotencyKeys []driver.IdempotencyRecord
}

// Len returns the number of rows of b.
func (b *Batch) Len() int {
	switch b.Kind {
	case Contacts:
		return len(b.Contacts)
	case Conversations:
		return len(b.Conversations)
	case Members:
		return len(b.Members)
	case Messages:
		return len(b.Messages)
	case ReactionNames:
		return len(b.ReactionNames)
	case Reactions:
		return len(b.Reactions)
	case Attachments:
		return len(b.Attachments)
	case Revisions:
		return len(b.Revisions)
	case IdempotencyKeys:
		return len(b.IdempotencyKeys)
	}
	return 0
}

// Installation is a store's identity: its installation id and reconcile
// epoch (see driver.Installation). A copy never takes the source's: it
// gets one of its own (CopyID), and is handed the source's files (see
// Copy).
type Installation struct {
	// ID is the installation id (driver.Installation.InstallationID).
	ID string
	// Epoch is the reconcile epoch (driver.Installation.Epoch).
	Epoch int64
}

// Source is a store that can be copied: it opens snapshots of its rows.
// sqlstore.Store and memstore.Store implement it.
type Source interface {
	// Snapshot returns a consistent, read-only view of every row as of one
	// moment, which writes made after it do not change. It never writes to
	// the store. The caller closes it.
	Snapshot(ctx context.Context) (Snapshot, error)
}

// Snapshot is a consistent view of a store's rows. Its methods are called
// from one goroutine at a time.
type Snapshot interface {
	// Installation returns the store's identity ("" as ID when it has
	// none yet, which Copy refuses in a source).
	Installation(ctx context.Context) (Installation, error)
	// Count returns the number of rows of kind k that Rows gives.
	Count(ctx context.Context, k Kind) (int64, error)
	// Rows yields the rows of kind k in batches of at most size rows (a
	// store that reads from disk also ends a batch at a bound of bytes,
	// so that a copy's memory does not grow with its source's texts), in
	// the order of each kind's key, which is the same for every store (see
	// Key): bytes of strings, then numbers. Reaction names and reactions
	// come in the order a message shows them, by message id. Times are in
	// UTC, to the microsecond. The caller may stop early, and keeps each
	// batch: a Rows never reuses one (the copy reads the next batch while
	// it loads the one before).
	Rows(ctx context.Context, k Kind, size int) iter.Seq2[*Batch, error]
	// Close ends the snapshot.
	Close() error
}

// Sink is a store that a copy can write to: every Sink is a Source too,
// for checking the destination and verifying the copy.
type Sink interface {
	Source
	// SetInstallation gives the store the identity in. It is called on a
	// store whose rows are all empty, or that holds in already.
	SetInstallation(ctx context.Context, in Installation) error
	// Load stores the rows of b as they are, counters included, in one
	// transaction: a row whose key is stored already is skipped, never
	// changed, so that loading a batch again changes nothing. Rows come
	// in the order of Kinds: a row comes after those it refers to.
	Load(ctx context.Context, b *Batch) error
	// Uncopied returns the number of the store's rows of each kind that no
	// copy carries, by the kind's name in the plural: "events", "handler
	// positions", "upload reservations" and "pending deletions" (0 for
	// none). A copy refuses a destination that holds any, as it refuses
	// one that holds rows of a Kind, unless it resumes into it: they are
	// another store's (its event feed, its handlers' positions in it, its
	// uploads under way, the deletions of its bucket's objects), which the
	// copy would take for its own.
	Uncopied(ctx context.Context) (map[string]int64, error)
}
