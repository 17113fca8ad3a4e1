package driver

import "time"

// Contact is a person who sends messages: the caller, as the host's
// authenticator identifies it.
//
// A host that has users of its own may store each as a Contact under an ID
// of its choosing (its own user id, say): SaveContact keeps any non-empty
// ID, and every call takes the caller as a Contact whose ID is that id.
type Contact struct {
	// ID identifies the contact: made by the server ("ctc_…") when
	// SaveContact is given none, else the host's own (1 to 64 bytes of
	// printable characters).
	ID string
	// Username is unique among contacts; it names the contact as a reactor.
	Username string
	// PhoneNumber is the contact's phone number, as the host gives it.
	PhoneNumber string
	// AvatarURL is the URL of the contact's picture, as the host gives it.
	AvatarURL string
	// LastActiveAt is when the contact last made an authenticated request
	// (updated at most once a minute); zero while never active.
	LastActiveAt time.Time
	// CreatedAt is when the contact was first stored.
	CreatedAt time.Time
}

// Reaction is one reaction name, the usernames of the first who reacted
// with it, in the order they came, and how many did.
type Reaction struct {
	// Name is 1 to 64 characters with no white space, brackets or slashes,
	// such as "thumbs_up" or "👍".
	Name string
	// Reactors are the usernames (as stored now) of the first who reacted,
	// at most MaxEmbeddedReactors of them, in the order they came; the
	// Service's Reactors lists them all.
	Reactors []string
	// Count is the number of all who reacted.
	Count int
}

// MaxEmbeddedReactors is the most reactors a Message carries of each
// reaction, so that a popular message costs no more to send, read or react
// to than any other. Service.Reactors pages through all of them.
const MaxEmbeddedReactors = 100

// Reactor is one who reacted with a reaction name, and when.
type Reactor struct {
	// ContactID is the id of the contact who reacted.
	ContactID string
	// Username is the contact's username as stored now ("" for a contact
	// that is not stored).
	Username string
	// ReactedAt is when the contact reacted with the name.
	ReactedAt time.Time
}

// Message is a unit of a conversation.
type Message struct {
	// ID is made by the server ("msg_…").
	ID string
	// ConversationID is chosen by the client; it never holds a slash
	// (the Service's rule), which a backend may use to keep ids of its own
	// apart.
	ConversationID string
	// Contact is the sender as stored now.
	Contact Contact
	// Text is the content.
	Text string
	// Reactions in the order each name was first used.
	Reactions []Reaction
	// Attachments linked to the message, oldest first.
	Attachments []Attachment
	// ReadAt is when the message was first marked read; zero while unread.
	ReadAt time.Time
	// CreatedAt is when the message was sent.
	CreatedAt time.Time
	// UpdatedAt is when the text was last edited or a reaction or an
	// attachment added; zero while never updated.
	UpdatedAt time.Time

	// ParentID is the root of the thread a reply is in; "" for a message
	// that is not a reply (see ThreadStore).
	ParentID string
	// ReplyCount is the number of a root's replies; 0 for a reply.
	ReplyCount int64
	// LastReplyAt is when the newest of a root's replies was sent; zero
	// without replies.
	LastReplyAt time.Time
	// Deleted marks the tombstone of a deleted root that still has
	// replies: it keeps ID, ConversationID, Contact.ID, CreatedAt and the
	// thread's counts, and nothing of its text, reactions or attachments.
	Deleted bool
}

// Attachment is a file shared in a conversation, possibly linked to a
// message. Package attachments uploads, serves, renames and deletes them;
// a Message carries those linked to it.
type Attachment struct {
	// ID is made by the server ("att_…").
	ID string
	// MessageID is the message the attachment is linked to; "" while unlinked.
	MessageID string
	// ConversationID is the conversation the file was uploaded to or linked
	// into; "" for an upload that names none and is not linked yet (such an
	// attachment is seen by its uploader only).
	ConversationID string
	// UploaderID is the contact who uploaded the file; only they may rename
	// or delete it.
	UploaderID string
	// Filename is the cleaned base name of the file; it is authoritative.
	Filename string
	// FileType is the MIME type: as declared by the uploader when specific,
	// otherwise sniffed from the content.
	FileType string
	// FileSize is the number of bytes stored, counted by the server.
	FileSize int64
	// SHA256 is the hex SHA-256 of the bytes, computed while they streamed.
	SHA256 string
	// ImageWidth and ImageHeight are the size in pixels of a JPEG, PNG, GIF
	// or WebP image, as its header says (read when the upload finished);
	// 0 for any other file.
	ImageWidth, ImageHeight int
	// Key is the object's key in the blob store. It is made by the server,
	// never from user input, and is not shown to clients.
	Key string
	// CreatedAt is when the upload finished.
	CreatedAt time.Time
}

// Conversation is a conversation as one caller sees it. A conversation
// exists from its first message or filed attachment; its ID is the
// conversation id the clients chose.
type Conversation struct {
	// ID is the conversation id.
	ID string
	// CreatedAt is when the conversation's first message or filed
	// attachment was stored.
	CreatedAt time.Time
	// UpdatedAt is the time of the newest message, or CreatedAt while it
	// has none.
	UpdatedAt time.Time
	// MessageCount is the number of messages.
	MessageCount int64
	// LastMessage is the newest message; nil while there is none.
	LastMessage *Message
	// UnreadCount is the caller's own: the messages newer than the
	// caller's read position that others sent.
	UnreadCount int64
	// LastReadMessageID is the message the caller has read through; ""
	// while it has read none. It may name a message deleted since.
	LastReadMessageID string
}

// Member is a contact's membership of a conversation.
type Member struct {
	// ConversationID is the conversation.
	ConversationID string
	// ContactID is the member.
	ContactID string
	// JoinedAt is when the contact was added.
	JoinedAt time.Time
}

// Revision is an earlier text of an edited message: every edit that
// changes a message's text keeps the text it replaced as a Revision.
type Revision struct {
	// ID is made by the server ("rev_…").
	ID string
	// MessageID is the edited message.
	MessageID string
	// Text is the text the edit replaced.
	Text string
	// CreatedAt is when the edit replaced it.
	CreatedAt time.Time
}

// Idempotency makes a write safe to retry: the first call with Key from a
// caller is carried out and its result kept (messaging.Options.
// IdempotencyKeyTTL); a later call from the same caller with the same Key
// and the same arguments returns the kept result and changes nothing. See
// "Retries" in the documentation of package messaging.
type Idempotency struct {
	// Key names the write among the caller's writes: 1 to 255 characters,
	// no control characters. Empty: the write is carried out every time.
	Key string
	// Replayed, when not nil, is set when the call succeeds: true when it
	// returned the kept result of an earlier call with Key (and changed
	// nothing), false when it carried the write out.
	Replayed *bool
}
