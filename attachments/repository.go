package attachments

import (
	"context"
	"io"
	"time"

	"github.com/parleychat/parley/messaging"
)

// This file holds the contract of a storage backend: what a Repository and
// a BlobStore implement and the values they are handed. Applications never
// need these; they call the Service.

// AttachmentQuery selects a page of attachments, for backends.
type AttachmentQuery struct {
	// ConversationIDs restricts the list to attachments of these
	// conversations. When All is true it is ignored.
	ConversationIDs []string
	// MemberID, when set, also lists the attachments of the conversations
	// this contact is a member of.
	MemberID string
	// All lists attachments of every conversation.
	All bool
	// UploaderID, when set, also lists the attachments that this contact
	// uploaded without a conversation (ConversationID "").
	UploaderID string
	// Limit is the page size, at least 1.
	Limit int
	// After, when set, selects the Limit items just older than it.
	After *messaging.Cursor
	// Before, when set, selects the Limit items just newer than it; they are
	// still returned newest first. After and Before are never both set.
	Before *messaging.Cursor
}

// Repository stores attachment rows. Implementations must be safe for
// concurrent use. The storetest package checks every obligation below.
//
// The writes take a messaging.Recorder, whose events they store in their
// transaction, as messaging.Repository's writes do.
//
// Times are stored with at least microsecond precision and returned in UTC.
type Repository interface {
	// CreateAttachment stores a new attachment row. a.MessageID is "" (the
	// Service links attachments through messaging.Repository). rec's
	// Change.Attachments holds the row as stored.
	CreateAttachment(ctx context.Context, a messaging.Attachment, rec messaging.Recorder) error

	// GetAttachment returns the attachment. If none exists, it must return an
	// error for which errors.Is(err, messaging.ErrNotFound) is true.
	GetAttachment(ctx context.Context, id string) (messaging.Attachment, error)

	// ListAttachments returns up to q.Limit attachments matching q, newest
	// first (CreatedAt, then ID, descending), and whether more exist beyond
	// them in the direction of travel (older for After or none, newer for
	// Before).
	ListAttachments(ctx context.Context, q AttachmentQuery) (items []messaging.Attachment, hasMore bool, err error)

	// RenameAttachment sets the file name and returns the updated row, or an
	// error matching messaging.ErrNotFound. rec's Change.Attachments holds
	// the updated row.
	RenameAttachment(ctx context.Context, id, filename string, rec messaging.Recorder) (messaging.Attachment, error)

	// DeleteAttachment removes the row and, in the same transaction, records
	// its Key as a pending deletion (see PendingDeletions). It returns an
	// error matching messaging.ErrNotFound if there is no such row. rec's
	// Change.Removed holds the removed row and, when it was linked,
	// Change.Message its message after the removal (as GetMessage would
	// return it then).
	DeleteAttachment(ctx context.Context, id string, rec messaging.Recorder) (messaging.Attachment, error)

	// PendingDeletions returns up to limit blob keys whose rows are gone but
	// whose objects may still exist, oldest first.
	PendingDeletions(ctx context.Context, limit int) ([]string, error)

	// ForgetDeletion removes key from the pending deletions. Forgetting a key
	// that is not pending is not an error.
	ForgetDeletion(ctx context.Context, key string) error

	// KeysInUse reports which of keys belong to an attachment row or a
	// pending deletion, for reconciliation against the blob store.
	KeysInUse(ctx context.Context, keys []string) (map[string]bool, error)

	// UploadedBytes returns the sum of FileSize over the attachment rows
	// whose UploaderID is uploaderID, 0 when there are none: the bytes an
	// Options.UploadQuota counts. It sees every row committed before it
	// was called. Its cost may grow with that contact's rows, not with
	// anyone else's (an index on the uploader with the size in it serves
	// it).
	UploadedBytes(ctx context.Context, uploaderID string) (int64, error)

	// CreateAttachmentKeyed is CreateAttachment that also stores done, the
	// record of an idempotency key, in its transaction (see
	// messaging.IdempotencyRepository, Keyed writes): on any error, neither
	// the row nor the record is stored.
	CreateAttachmentKeyed(ctx context.Context, a messaging.Attachment, rec messaging.Recorder, done messaging.IdempotencyRecord) error

	// RenameAttachmentKeyed is RenameAttachment that also stores done in
	// its transaction, its Result the attachment it returns unless set.
	RenameAttachmentKeyed(ctx context.Context, id, filename string, rec messaging.Recorder, done messaging.IdempotencyRecord) (messaging.Attachment, error)
}

// BlobStore stores the bytes of attachments under keys that the Service
// makes. Implementations must be safe for concurrent use.
type BlobStore interface {
	// Put writes all of r under key. If r returns an error, or ctx is done,
	// before io.EOF, Put must return an error and leave no object under key.
	Put(ctx context.Context, key, contentType string, r io.Reader) error

	// Open returns a reader of the object's bytes that can seek (for Range
	// requests). If there is no object, it must return an error for which
	// errors.Is(err, messaging.ErrNotFound) is true.
	Open(ctx context.Context, key string) (io.ReadSeekCloser, error)

	// Delete removes the object. Deleting a key that does not exist returns
	// nil or an error matching messaging.ErrNotFound.
	Delete(ctx context.Context, key string) error
}

// Object describes one object of a blob store, for reconciliation.
type Object struct {
	// Key is the object's key.
	Key string
	// ModTime is when the object was last written.
	ModTime time.Time
}

// Lister is an optional interface of a BlobStore that can list its
// objects; Reconcile needs it to find orphaned objects.
type Lister interface {
	// List calls fn for every object whose key starts with prefix, stopping
	// at the first error fn returns.
	List(ctx context.Context, prefix string, fn func(Object) error) error
}

// URLSigner is an optional interface of a BlobStore that can make signed,
// expiring URLs of its objects.
type URLSigner interface {
	// SignedURL returns a URL that serves the object for expiry, with
	// Content-Type contentType and Content-Disposition
	// ContentDisposition(contentType, filename) in its response headers
	// where the store supports it.
	SignedURL(ctx context.Context, key, filename, contentType string, expiry time.Duration) (string, error)
}
