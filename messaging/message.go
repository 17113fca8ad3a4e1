package messaging

import (
	"encoding/json"
	"time"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/kind"
)

// Contact is a person who sends messages: the caller, as the host's
// authenticator identifies it.
type Contact struct {
	// ID is made by the server ("ctc_…").
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

type contactJSON struct {
	ID           string `json:"id"`
	Username     string `json:"username"`
	PhoneNumber  string `json:"phone_number"`
	AvatarURL    string `json:"avatar_url"`
	LastActiveAt *int64 `json:"last_active_at"`
	CreatedAt    int64  `json:"created_at"`
}

// MarshalJSON writes the contact as the API shows it (Unix seconds).
func (c Contact) MarshalJSON() ([]byte, error) {
	return json.Marshal(c.wire())
}

func (c Contact) wire() contactJSON {
	return contactJSON{
		ID:           c.ID,
		Username:     c.Username,
		PhoneNumber:  c.PhoneNumber,
		AvatarURL:    c.AvatarURL,
		LastActiveAt: unixOrNull(c.LastActiveAt),
		CreatedAt:    c.CreatedAt.Unix(),
	}
}

// Reaction is one reaction name and the usernames of those who reacted with
// it, in the order they came.
type Reaction struct {
	// Name is 1 to 64 characters with no white space, brackets or slashes,
	// such as "thumbs_up" or "👍".
	Name string
	// Reactors are the usernames of those who reacted, in the order they came.
	Reactors []string
}

// MarshalJSON writes the reaction as a one-key object: {"name": [reactors]}.
func (r Reaction) MarshalJSON() ([]byte, error) {
	return r.appendJSON(nil)
}

// appendJSON appends the reaction's JSON to b.
func (r Reaction) appendJSON(b []byte) ([]byte, error) {
	reactors := r.Reactors
	if reactors == nil {
		reactors = []string{}
	}
	name, err := json.Marshal(r.Name)
	if err != nil {
		return nil, err
	}
	who, err := json.Marshal(reactors)
	if err != nil {
		return nil, err
	}
	b = append(b, '{')
	b = append(b, name...)
	b = append(b, ':')
	b = append(b, who...)
	return append(b, '}'), nil
}

// Message is a unit of a conversation.
type Message struct {
	// ID is made by the server ("msg_…").
	ID string
	// ConversationID is chosen by the client.
	ConversationID string
	// Contact is the sender as stored now. Repositories must fill at least
	// Contact.ID; the Service fills the rest.
	Contact Contact
	// Text is the content ("message" in JSON).
	Text string
	// Reactions in the order each name was first used.
	Reactions []Reaction
	// Attachments linked to the message, oldest first.
	Attachments []attachments.Attachment
	// ReadAt is when the message was first marked read; zero while unread.
	ReadAt time.Time
	// CreatedAt is when the message was sent.
	CreatedAt time.Time
	// UpdatedAt is when the text was last edited or a reaction or an
	// attachment added; zero while never updated.
	UpdatedAt time.Time
}

// messageHeadJSON and messageTailJSON are the members of a message's JSON
// before and after its reactions and attachments.
type messageHeadJSON struct {
	ID             string      `json:"id"`
	Object         string      `json:"object"`
	ConversationID string      `json:"conversation_id"`
	Contact        contactJSON `json:"contact"`
	Message        string      `json:"message"`
}

type messageTailJSON struct {
	ReadAt    *int64 `json:"read_at"`
	CreatedAt int64  `json:"created_at"`
	UpdatedAt *int64 `json:"updated_at"`
}

// MarshalJSON writes the message as the API shows it: empty arrays rather
// than null, Unix seconds, null read_at and updated_at while unset.
//
// The members are id, object, conversation_id, contact, message,
// reactions, attachments, read_at, created_at, updated_at, in that order.
// The reactions and attachments are spliced in as their own MarshalJSON
// writes them, rather than marshaled as nested json.Marshalers, which
// encoding/json would check and compact once more: that doubled the cost
// of a message.
func (m Message) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(messageHeadJSON{
		ID:             m.ID,
		Object:         "message",
		ConversationID: m.ConversationID,
		Contact:        m.Contact.wire(),
		Message:        m.Text,
	})
	if err != nil {
		return nil, err
	}
	tail, err := json.Marshal(messageTailJSON{
		ReadAt:    unixOrNull(m.ReadAt),
		CreatedAt: m.CreatedAt.Unix(),
		UpdatedAt: unixOrNull(m.UpdatedAt),
	})
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(head)+len(tail)+64+len(m.Reactions)*32+len(m.Attachments)*384)
	b = append(b, head[:len(head)-1]...) // without the closing brace
	b = append(b, `,"reactions":[`...)
	for i, r := range m.Reactions {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = r.appendJSON(b); err != nil {
			return nil, err
		}
	}
	b = append(b, `],"attachments":[`...)
	for i, a := range m.Attachments {
		if i > 0 {
			b = append(b, ',')
		}
		ab, err := a.MarshalJSON()
		if err != nil {
			return nil, err
		}
		b = append(b, ab...)
	}
	b = append(b, "],"...)
	return append(b, tail[1:]...), nil // without the opening brace
}

func unixOrNull(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	u := t.Unix()
	return &u
}

// The error kinds. They are the same values as attachments', so errors.Is
// works from either package.
var (
	ErrNotFound        = kind.NotFound
	ErrInvalid         = kind.Invalid
	ErrConflict        = kind.Conflict
	ErrPermission      = kind.Permission
	ErrTooLarge        = kind.TooLarge
	ErrUnimplemented   = kind.Unimplemented
	ErrUnauthenticated = kind.Unauthenticated
	ErrUnavailable     = kind.Unavailable
)

// Error is the error type of this package and of attachments: a kind, a
// message safe to show to people, and the parameter at fault, if any.
// Use errors.As to read it.
type Error = kind.Error
