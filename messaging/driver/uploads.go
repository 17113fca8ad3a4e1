package driver

import (
	"context"
	"time"
)

// Reservation is an upload reserved for a client that sends a file's
// bytes straight to the blob store (attachments.Service.Reserve), until it
// is completed into an attachment or expires.
type Reservation struct {
	// ID is made by the server ("upl_…").
	ID string
	// AttachmentID is the id the attachment will have once completed.
	AttachmentID string
	// UploaderID is the contact who reserved it; only they may complete it.
	UploaderID string
	// ConversationID and MessageID are those of the attachment to be, as
	// for an upload ("" when not given).
	ConversationID, MessageID string
	// Filename is the cleaned file name.
	Filename string
	// FileType is the type the object is stored with.
	FileType string
	// FileSize and SHA256 (hex) are what the client said it will send.
	FileSize int64
	SHA256   string
	// Key is the object's key in the blob store: the attachment's to be.
	Key string
	// Checked reports whether the blob store itself refuses bytes of
	// another SHA-256 (a signed URL carrying the digest).
	Checked bool
	// CreatedAt is when it was reserved; ExpiresAt when it ends.
	CreatedAt, ExpiresAt time.Time
}

// ReservationStore is an optional interface of an AttachmentStore that
// keeps upload reservations (direct uploads). A store without it gives
// no direct uploads (attachments.Service.Reserve returns ErrUnimplemented).
//
// A store that has it must also count the Key of every reservation it
// holds as in use in AttachmentStore.KeysInUse, so that Reconcile never
// takes the object of a reservation under way for an orphan.
type ReservationStore interface {
	// CreateReservation stores r. Errors: ErrConflict if its id exists.
	CreateReservation(ctx context.Context, r Reservation) error

	// CreateReservationKeyed is CreateReservation that also stores done,
	// the record of an idempotency key, in its transaction (see
	// IdempotencyStore, Keyed writes): on any error, neither is stored.
	CreateReservationKeyed(ctx context.Context, r Reservation, done IdempotencyRecord) error

	// GetReservation returns the reservation. If none exists, it must
	// return an error for which errors.Is(err, ErrNotFound) is true.
	GetReservation(ctx context.Context, id string) (Reservation, error)

	// CompleteReservation stores a, the attachment that the reservation
	// id completes (a.MessageID is ""), as CreateAttachment does, with
	// done when not nil (as CreateAttachmentKeyed does), and removes the
	// reservation, in one transaction. If the reservation does not exist,
	// it stores nothing and returns an error for which errors.Is(err,
	// ErrNotFound) is true. (MessageChange.Reservation does the same for
	// an attachment stored linked to a message.)
	CompleteReservation(ctx context.Context, id string, a Attachment, rec Recorder, done *IdempotencyRecord) error

	// DeleteReservation removes the reservation; one that does not exist
	// is no error.
	DeleteReservation(ctx context.Context, id string) error

	// ExpiredReservations returns up to limit reservations whose
	// ExpiresAt is not after now, oldest expiry first.
	ExpiredReservations(ctx context.Context, now time.Time, limit int) ([]Reservation, error)
}
