package sqlstore

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging/driver"
)

var _ driver.ReservationStore = (*store)(nil)

// reservationRow is a row of upload_reservations; its fields are
// driver.Reservation's, in order, so that one converts to the other.
type reservationRow struct {
	ID             string    `bun:"id"`
	AttachmentID   string    `bun:"attachment_id"`
	UploaderID     string    `bun:"uploader_id"`
	ConversationID string    `bun:"conversation_id"`
	MessageID      string    `bun:"message_id"`
	Filename       string    `bun:"filename"`
	FileType       string    `bun:"file_type"`
	FileSize       int64     `bun:"file_size"`
	SHA256         string    `bun:"sha256"`
	Key            string    `bun:"blob_key"`
	Checked        bool      `bun:"checked"`
	CreatedAt      time.Time `bun:"created_at"`
	ExpiresAt      time.Time `bun:"expires_at"`
}

const reservationCols = "id, attachment_id, uploader_id, conversation_id, message_id, filename, file_type, file_size, sha256, blob_key, checked, created_at, expires_at"

func (r reservationRow) reservation() driver.Reservation {
	res := driver.Reservation(r)
	res.CreatedAt, res.ExpiresAt = utc(r.CreatedAt), utc(r.ExpiresAt)
	return res
}

// CreateReservation stores r. Errors: ErrConflict if its id or key exists.
func (s *store) CreateReservation(ctx context.Context, r driver.Reservation) error {
	return wrapErr("sqlstore.CreateReservation", s.retry(ctx, func(ctx context.Context) error {
		return insertReservation(ctx, s.w, r)
	}))
}

// CreateReservationKeyed is CreateReservation that also stores done (storeKey).
func (s *store) CreateReservationKeyed(ctx context.Context, r driver.Reservation, done driver.IdempotencyRecord) error {
	return wrapErr("sqlstore.CreateReservation", s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := s.storeKey(ctx, tx, done); err != nil {
			return err
		}
		return insertReservation(ctx, tx, r)
	}))
}

func insertReservation(ctx context.Context, db bun.IConn, r driver.Reservation) error {
	_, err := db.ExecContext(ctx, "INSERT INTO upload_reservations ("+reservationCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		r.ID, r.AttachmentID, r.UploaderID, r.ConversationID, r.MessageID, r.Filename, r.FileType, r.FileSize, r.SHA256, r.Key,
		r.Checked, r.CreatedAt.UTC(), r.ExpiresAt.UTC())
	if isUniqueViolation(err) {
		return conflict("a reservation with this id or key exists")
	}
	return err
}

// GetReservation returns the reservation, or an error matching ErrNotFound.
func (s *store) GetReservation(ctx context.Context, id string) (driver.Reservation, error) {
	r, err := readOne[reservationRow](ctx, s.read, "reservation", "SELECT "+reservationCols+" FROM upload_reservations WHERE id = ?", id)
	return r.reservation(), wrapErr("sqlstore.GetReservation", err)
}

// CompleteReservation stores a with done and removes the reservation id,
// in one transaction; ErrNotFound when it is gone.
func (s *store) CompleteReservation(ctx context.Context, id string, a driver.Attachment, rec driver.Recorder, done *driver.IdempotencyRecord) error {
	return wrapErr("sqlstore.CompleteReservation", s.createAttachment(ctx, a, rec, done, id))
}

// consumeReservation removes in tx the reservation id ("" for none) that a
// new attachment completes, or fails with ErrNotFound when it is gone.
func consumeReservation(ctx context.Context, tx bun.Tx, id string) error {
	if id == "" {
		return nil
	}
	n, err := affected(tx.ExecContext(ctx, "DELETE FROM upload_reservations WHERE id = ?", id))
	if err == nil && n == 0 {
		err = notFound("reservation")
	}
	return err
}

// DeleteReservation removes the reservation, if it exists.
func (s *store) DeleteReservation(ctx context.Context, id string) error {
	_, err := s.exec(ctx, "DELETE FROM upload_reservations WHERE id = ?", id)
	return wrapErr("sqlstore.DeleteReservation", err)
}

// ExpiredReservations returns up to limit reservations expired at now,
// oldest expiry first (the index upload_reservations_expires).
func (s *store) ExpiredReservations(ctx context.Context, now time.Time, limit int) ([]driver.Reservation, error) {
	if limit < 1 {
		return []driver.Reservation{}, nil
	}
	var rows []reservationRow
	err := s.read(ctx, &rows, "SELECT "+reservationCols+" FROM upload_reservations WHERE expires_at <= ? ORDER BY expires_at, id LIMIT ?", now.UTC(), limit)
	if err != nil {
		return nil, wrapErr("sqlstore.ExpiredReservations", err)
	}
	out := make([]driver.Reservation, len(rows))
	for i, r := range rows {
		out[i] = r.reservation()
	}
	return out, nil
}
