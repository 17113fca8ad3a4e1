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
	Username     string
	PhoneNumber  string
	AvatarURL    string
	LastActiveAt time.Time // zero while never active
	CreatedAt    time.Time
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
	return json.Marshal(contactJSON{
		ID:           c.ID,
		Username:     c.Username,
		PhoneNumber:  c.PhoneNumber,
		AvatarURL:    c.AvatarURL,
		LastActiveAt: unixOrNull(c.LastActiveAt),
		CreatedAt:    c.CreatedAt.Unix(),
	})
}

// Reaction is one reaction name and the usernames of those who reacted with
// it, in the order they came.
type Reaction struct {
	Name     string
	Reactors []string
}

// MarshalJSON writes the reaction as a one-key object: {"name": [reactors]}.
func (r Reaction) MarshalJSON() ([]byte, error) {
	reactors := r.Reactors
	if reactors == nil {
		reactors = []string{}
	}
	return json.Marshal(map[string][]string{r.Name: reactors})
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
	ReadAt      time.Time // zero while unread
	CreatedAt   time.Time
	UpdatedAt   time.Time // zero while never updated
}

type messageJSON struct {
	ID             string                   `json:"id"`
	Object         string                   `json:"object"`
	ConversationID string                   `json:"conversation_id"`
	Contact        Contact                  `json:"contact"`
	Message        string                   `json:"message"`
	Reactions      []Reaction               `json:"reactions"`
	Attachments    []attachments.Attachment `json:"attachments"`
	ReadAt         *int64                   `json:"read_at"`
	CreatedAt      int64                    `json:"created_at"`
	UpdatedAt      *int64                   `json:"updated_at"`
}

// MarshalJSON writes the message as the API shows it: empty arrays rather
// than null, Unix seconds, null read_at and updated_at while unset.
func (m Message) MarshalJSON() ([]byte, error) {
	j := messageJSON{
		ID:             m.ID,
		Object:         "message",
		ConversationID: m.ConversationID,
		Contact:        m.Contact,
		Message:        m.Text,
		Reactions:      m.Reactions,
		Attachments:    m.Attachments,
		ReadAt:         unixOrNull(m.ReadAt),
		CreatedAt:      m.CreatedAt.Unix(),
		UpdatedAt:      unixOrNull(m.UpdatedAt),
	}
	if j.Reactions == nil {
		j.Reactions = []Reaction{}
	}
	if j.Attachments == nil {
		j.Attachments = []attachments.Attachment{}
	}
	return json.Marshal(j)
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
