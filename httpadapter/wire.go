package httpadapter

import (
	"strconv"

	"github.com/parleychat/parley/messaging"
)

// This file holds the JSON of /v1: the domain's values as the API shows
// them (Unix seconds, "object" members, null for unset times and ids).

// appendContact appends c as the API shows it: the members id,
// username, phone_number, avatar_url, last_active_at (null while unset)
// and created_at, in that order.
func appendContact(b []byte, c messaging.Contact) []byte {
	b = appendKey(append(b, '{'), "id", true)
	b = appendString(b, c.ID)
	b = appendKey(b, "username", false)
	b = appendString(b, c.Username)
	b = appendKey(b, "phone_number", false)
	b = appendString(b, c.PhoneNumber)
	b = appendKey(b, "avatar_url", false)
	b = appendString(b, c.AvatarURL)
	b = appendKey(b, "last_active_at", false)
	b = appendUnixOrNull(b, c.LastActiveAt)
	b = appendKey(b, "created_at", false)
	b = appendUnix(b, c.CreatedAt)
	return append(b, '}')
}

// attachmentJSON is an Attachment as the API shows it, with the URL of its
// bytes.
type attachmentJSON struct {
	a       messaging.Attachment
	fileURL string
}

// MarshalJSON writes the attachment: timestamps in Unix seconds, null
// message_id while unlinked.
func (x attachmentJSON) MarshalJSON() ([]byte, error) {
	return x.appendJSON(make([]byte, 0, 384))
}

// appendJSON appends the attachment: the members id, object, message_id,
// conversation_id (each null while unset), filename, file_url, file_type,
// file_size, sha256, for an image image_width and image_height, and
// created_at, in that order.
func (x attachmentJSON) appendJSON(b []byte) ([]byte, error) {
	a := x.a
	b = appendKey(append(b, '{'), "id", true)
	b = appendString(b, a.ID)
	b = append(b, `,"object":"attachment"`...)
	b = appendKey(b, "message_id", false)
	b = appendStringOrNull(b, a.MessageID)
	b = appendKey(b, "conversation_id", false)
	b = appendStringOrNull(b, a.ConversationID)
	b = appendKey(b, "filename", false)
	b = appendString(b, a.Filename)
	b = appendKey(b, "file_url", false)
	b = appendString(b, x.fileURL)
	b = appendKey(b, "file_type", false)
	b = appendString(b, a.FileType)
	b = appendKey(b, "file_size", false)
	b = strconv.AppendInt(b, a.FileSize, 10)
	b = appendKey(b, "sha256", false)
	b = appendString(b, a.SHA256)
	if a.ImageWidth > 0 {
		b = appendKey(b, "image_width", false)
		b = strconv.AppendInt(b, int64(a.ImageWidth), 10)
		b = appendKey(b, "image_height", false)
		b = strconv.AppendInt(b, int64(a.ImageHeight), 10)
	}
	b = appendKey(b, "created_at", false)
	b = appendUnix(b, a.CreatedAt)
	return append(b, '}'), nil
}

// messageJSON is a Message as the API shows it, with the URLs of its
// attachments' bytes (fileURLs[i] is that of m.Attachments[i]).
type messageJSON struct {
	m        messaging.Message
	fileURLs []string
}

// MarshalJSON writes the message: empty arrays rather than null, Unix
// seconds, null read_at and updated_at while unset.
func (x messageJSON) MarshalJSON() ([]byte, error) {
	return x.appendJSON(make([]byte, 0, 512+reactionsSize(x.m.Reactions)+len(x.m.Attachments)*384))
}

// reactionsSize is about the room the reactions take in JSON (their names
// twice, quoted, and the embedded reactors, quoted, each with a comma), so
// that a message with 100 reactors of a reaction is written into one
// buffer instead of growing it two or three times.
func reactionsSize(rs []messaging.Reaction) int {
	n := 0
	for _, r := range rs {
		n += 2*len(r.Name) + 16
		for _, who := range r.Reactors {
			n += len(who) + 3
		}
	}
	return n
}

// appendJSON appends the message. The members are id, object,
// conversation_id, contact, message, reactions (at most the first
// messaging.MaxEmbeddedReactors reactors of each), reaction_counts (each
// reaction's total), attachments, read_at, created_at, updated_at, in that
// order.
func (x messageJSON) appendJSON(b []byte) ([]byte, error) {
	m := x.m
	if m.Deleted {
		return appendTombstone(b, m), nil
	}
	b = appendKey(append(b, '{'), "id", true)
	b = appendString(b, m.ID)
	b = append(b, `,"object":"message"`...)
	b = appendKey(b, "conversation_id", false)
	b = appendString(b, m.ConversationID)
	b = appendKey(b, "contact", false)
	b = appendContact(b, m.Contact)
	b = appendKey(b, "message", false)
	b = appendString(b, m.Text)
	b = append(b, `,"reactions":[`...)
	for i, r := range m.Reactions {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendReaction(b, r)
	}
	b = append(b, `],"reaction_counts":{`...)
	for i, r := range m.Reactions {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, r.Name)
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
		b, _ = attachmentJSON{a, u}.appendJSON(b)
	}
	b = append(b, ']')
	b = appendKey(b, "read_at", false)
	b = appendUnixOrNull(b, m.ReadAt)
	b = appendKey(b, "created_at", false)
	b = appendUnix(b, m.CreatedAt)
	b = appendKey(b, "updated_at", false)
	b = appendUnixOrNull(b, m.UpdatedAt)
	b = appendKey(b, "parent_id", false)
	b = appendStringOrNull(b, m.ParentID)
	b = appendKey(b, "reply_count", false)
	b = strconv.AppendInt(b, m.ReplyCount, 10)
	b = appendKey(b, "last_reply_at", false)
	b = appendUnixOrNull(b, m.LastReplyAt)
	return append(b, '}'), nil
}

// appendTombstone appends the tombstone of a deleted root that still has
// replies: id, object, deleted, conversation_id, reply_count,
// last_reply_at, and nothing of what was deleted.
func appendTombstone(b []byte, m messaging.Message) []byte {
	b = appendKey(append(b, '{'), "id", true)
	b = appendString(b, m.ID)
	b = append(b, `,"object":"message","deleted":true`...)
	b = appendKey(b, "conversation_id", false)
	b = appendString(b, m.ConversationID)
	b = appendKey(b, "reply_count", false)
	b = strconv.AppendInt(b, m.ReplyCount, 10)
	b = appendKey(b, "last_reply_at", false)
	b = appendUnixOrNull(b, m.LastReplyAt)
	return append(b, '}')
}

// reactionCount is the number of r's reactors: its Count, or, from a
// result kept before counts were (an idempotency record), its reactors.
func reactionCount(r messaging.Reaction) int {
	return max(r.Count, len(r.Reactors))
}

// appendReaction appends a reaction as a one-key object,
// {"name": [reactors]}, to b.
func appendReaction(b []byte, r messaging.Reaction) []byte {
	b = appendString(append(b, '{'), r.Name)
	b = append(b, ':', '[')
	for i, who := range r.Reactors {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, who)
	}
	return append(b, ']', '}')
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
