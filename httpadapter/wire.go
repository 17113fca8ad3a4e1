package httpadapter

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/parleychat/parley/messaging"
)

// This file holds the JSON of /v1: the domain's values as the API shows
// them (Unix seconds, "object" members, null for unset times and ids).

// contactJSON is a Contact as the API shows it.
type contactJSON struct {
	ID           string `json:"id"`
	Username     string `json:"username"`
	PhoneNumber  string `json:"phone_number"`
	AvatarURL    string `json:"avatar_url"`
	LastActiveAt *int64 `json:"last_active_at"`
	CreatedAt    int64  `json:"created_at"`
}

func wireContact(c messaging.Contact) contactJSON {
	return contactJSON{
		ID:           c.ID,
		Username:     c.Username,
		PhoneNumber:  c.PhoneNumber,
		AvatarURL:    c.AvatarURL,
		LastActiveAt: unixOrNull(c.LastActiveAt),
		CreatedAt:    c.CreatedAt.Unix(),
	}
}

// attachmentJSON is an Attachment as the API shows it, with the URL of its
// bytes.
type attachmentJSON struct {
	a       messaging.Attachment
	fileURL string
}

type attachmentFields struct {
	ID             string  `json:"id"`
	Object         string  `json:"object"`
	MessageID      *string `json:"message_id"`
	ConversationID *string `json:"conversation_id"`
	Filename       string  `json:"filename"`
	FileURL        string  `json:"file_url"`
	FileType       string  `json:"file_type"`
	FileSize       int64   `json:"file_size"`
	SHA256         string  `json:"sha256"`
	CreatedAt      int64   `json:"created_at"`
}

// MarshalJSON writes the attachment: timestamps in Unix seconds, null
// message_id while unlinked.
func (x attachmentJSON) MarshalJSON() ([]byte, error) {
	a := x.a
	return json.Marshal(attachmentFields{
		ID:             a.ID,
		Object:         "attachment",
		MessageID:      nullable(a.MessageID),
		ConversationID: nullable(a.ConversationID),
		Filename:       a.Filename,
		FileURL:        x.fileURL,
		FileType:       a.FileType,
		FileSize:       a.FileSize,
		SHA256:         a.SHA256,
		CreatedAt:      a.CreatedAt.Unix(),
	})
}

// messageJSON is a Message as the API shows it, with the URLs of its
// attachments' bytes (fileURLs[i] is that of m.Attachments[i]).
type messageJSON struct {
	m        messaging.Message
	fileURLs []string
}

// messageHead and messageTail are the members of a message's JSON before
// and after its reactions and attachments.
type messageHead struct {
	ID             string      `json:"id"`
	Object         string      `json:"object"`
	ConversationID string      `json:"conversation_id"`
	Contact        contactJSON `json:"contact"`
	Message        string      `json:"message"`
}

type messageTail struct {
	ReadAt    *int64 `json:"read_at"`
	CreatedAt int64  `json:"created_at"`
	UpdatedAt *int64 `json:"updated_at"`
}

// MarshalJSON writes the message: empty arrays rather than null, Unix
// seconds, null read_at and updated_at while unset.
//
// The members are id, object, conversation_id, contact, message,
// reactions (at most the first messaging.MaxEmbeddedReactors reactors of
// each), reaction_counts (each reaction's total), attachments, read_at,
// created_at, updated_at, in that order.
// The reactions and attachments are spliced in as written here, rather
// than marshaled as nested json.Marshalers, which encoding/json would check
// and compact once more: that doubled the cost of a message.
func (x messageJSON) MarshalJSON() ([]byte, error) {
	m := x.m
	head, err := json.Marshal(messageHead{
		ID:             m.ID,
		Object:         "message",
		ConversationID: m.ConversationID,
		Contact:        wireContact(m.Contact),
		Message:        m.Text,
	})
	if err != nil {
		return nil, err
	}
	tail, err := json.Marshal(messageTail{
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
		if b, err = appendReaction(b, r); err != nil {
			return nil, err
		}
	}
	b = append(b, `],"reaction_counts":{`...)
	for i, r := range m.Reactions {
		if i > 0 {
			b = append(b, ',')
		}
		name, err := json.Marshal(r.Name)
		if err != nil {
			return nil, err
		}
		b = append(b, name...)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(reactionCount(r)), 10)
	}
	b = append(b, `},"attachments":[`...)
	for i, a := range m.Attachments {
		if i > 0 {
			b = append(b, ',')
		}
		var u string
		if i < len(x.fileURLs) {
			u = x.fileURLs[i]
		}
		ab, err := attachmentJSON{a, u}.MarshalJSON()
		if err != nil {
			return nil, err
		}
		b = append(b, ab...)
	}
	b = append(b, "],"...)
	return append(b, tail[1:]...), nil // without the opening brace
}

// reactionCount is the number of r's reactors: its Count, or, from a
// result kept before counts were (an idempotency record), its reactors.
func reactionCount(r messaging.Reaction) int {
	return max(r.Count, len(r.Reactors))
}

// appendReaction appends a reaction as a one-key object,
// {"name": [reactors]}, to b.
func appendReaction(b []byte, r messaging.Reaction) ([]byte, error) {
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

func unixOrNull(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	u := t.Unix()
	return &u
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
