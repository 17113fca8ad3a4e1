package attachments

import (
	"encoding/json"
	"time"

	"github.com/parleychat/parley/internal/kind"
)

// Attachment is a file shared in a conversation, possibly linked to a message.
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
	// FileURL is an absolute URL that serves the bytes. It is filled in by
	// whoever serves the attachment (httpadapter does, for every attachment
	// it returns); the Service and backends leave it empty.
	FileURL string
	// FileType is the MIME type: as declared by the uploader when specific,
	// otherwise sniffed from the content.
	FileType string
	// FileSize is the number of bytes stored, counted by the server.
	FileSize int64
	// SHA256 is the hex SHA-256 of the bytes, computed while they streamed.
	SHA256 string
	// Key is the object's key in the blob store. It is made by the server,
	// never from user input, and is not shown to clients.
	Key string
	// CreatedAt is when the upload finished.
	CreatedAt time.Time
}

type attachmentJSON struct {
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

// MarshalJSON writes the attachment as the API shows it: timestamps in Unix
// seconds, null message_id while unlinked.
func (a Attachment) MarshalJSON() ([]byte, error) {
	return json.Marshal(attachmentJSON{
		ID:             a.ID,
		Object:         "attachment",
		MessageID:      nullable(a.MessageID),
		ConversationID: nullable(a.ConversationID),
		Filename:       a.Filename,
		FileURL:        a.FileURL,
		FileType:       a.FileType,
		FileSize:       a.FileSize,
		SHA256:         a.SHA256,
		CreatedAt:      a.CreatedAt.Unix(),
	})
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// The error kinds. They are the same values as messaging's, so errors.Is
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

// Error is the error type of this package and of messaging: a kind, a
// message safe to show to people, and the parameter at fault, if any.
// Use errors.As to read it.
type Error = kind.Error
