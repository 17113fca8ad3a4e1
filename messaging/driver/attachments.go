package driver

import (
	"context"
)

// AttachmentStore stores attachment rows. Implementations must be safe for
// concurrent use. The storetest package checks every obligation below.
//
// The writes take a Recorder, whose events they store in their
// transaction, as AttachmentStore's writes do.
//
// Times are stored with at least microsecond precision and returned in UTC.
type AttachmentStore interface {
	// CreateAttachment stores a new attachment row. a.MessageID is "" (the
	// Service links attachments through AttachmentStore). rec's
	// Change.Attachments holds the row as stored.
	CreateAttachment(ctx context.Context, a Attachment, rec Recorder) error

	// GetAttachment returns the attachment. If none exists, it must return an
	// error for which errors.Is(err, ErrNotFound) is true.
	GetAttachment(ctx context.Context, id string) (Attachment, error)

	// ListAttachments returns up to q.Limit attachments matching q, newest
	// first (CreatedAt, then ID, descending), and whether more exist beyond
	// them in the direction of travel (older for After or none, newer for
	// Before).
	ListAttachments(ctx context.Context, q AttachmentQuery) (items []Attachment, hasMore bool, err error)

	// RenameAttachment sets the file name and returns the updated row, or an
	// error matching ErrNotFound. rec's Change.Attachments holds
	// the updated row.
	RenameAttachment(ctx context.Context, id, filename string, rec Recorder) (Attachment, error)

	// DeleteAttachment removes the row and, in the same transaction, records
	// its Key as a pending deletion (see PendingDeletions). It returns an
	// error matching ErrNotFound if there is no such row. rec's
	// Change.Removed holds the removed row and, when it was linked,
	// Change.Message its message after the removal (as GetMessage would
	// return it then).
	DeleteAttachment(ctx context.Context, id string, rec Recorder) (Attachment, error)

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
	// whose UploaderID is uploaderID, and over its upload reservations
	// where the store keeps them (ReservationStore), 0 when there are
	// none: the bytes an Options.UploadQuota counts. It sees every row
	// committed before it was called. Its cost may grow with that
	// contact's rows, not with anyone else's (an index on the uploader
	// with the size in it serves it).
	UploadedBytes(ctx context.Context, uploaderID string) (int64, error)

	// CreateAttachmentKeyed is CreateAttachment that also stores done, the
	// record of an idempotency key, in its transaction (see
	// IdempotencyStore, Keyed writes): on any error, neither
	// the row nor the record is stored.
	CreateAttachmentKeyed(ctx context.Context, a Attachment, rec Recorder, done IdempotencyRecord) error

	// RenameAttachmentKeyed is RenameAttachment that also stores done in
	// its transaction.
	RenameAttachmentKeyed(ctx context.Context, id, filename string, rec Recorder, done IdempotencyRecord) (Attachment, error)
}

// Installation is an optional interface of an AttachmentStore: the identity of
// its database. A Service whose AttachmentStore has it keys its objects by the
// installation id (KeyPrefix + id + "/" + attachment id), claims the blob
// store for the database (Service.Claim), and lets Reconcile move aside the
// objects under its own prefix that no row names. Without it, Claim fails
// with ErrUnimplemented and Reconcile never touches an object that no row
// names: it only counts it.
type Installation interface {
	// InstallationID returns the database's id: made once, when the
	// schema is created, kept in the database, and the same for every
	// process that uses it. It is 1 to 64 letters, digits, '_' or '-'.
	InstallationID(ctx context.Context) (string, error)

	// Epoch returns the database's reconcile epoch: 0 at first, then the
	// value of the last AdvanceEpoch. A database restored from a backup
	// returns the epoch it had when the backup was made.
	Epoch(ctx context.Context) (int64, error)

	// AdvanceEpoch adds one to the epoch, atomically, and returns the new
	// value.
	AdvanceEpoch(ctx context.Context) (int64, error)
}

// KeyLister is an optional interface of an AttachmentStore that lists the blob
// keys of its attachment rows, so that Reconcile can report rows whose
// object is missing.
type KeyLister interface {
	// AttachmentKeys returns up to limit keys of attachment rows that sort
	// after after (byte order; "" for the first), in ascending order.
	AttachmentKeys(ctx context.Context, after string, limit int) ([]string, error)
}
