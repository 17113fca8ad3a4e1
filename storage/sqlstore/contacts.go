package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/parleychat/parley/messaging"
)

// contactRow is a row of contacts; its fields are messaging.Contact's, in
// order, so that one converts to the other.
type contactRow struct {
	ID           string    `bun:"id"`
	Username     string    `bun:"username"`
	PhoneNumber  string    `bun:"phone_number"`
	AvatarURL    string    `bun:"avatar_url"`
	LastActiveAt time.Time `bun:"last_active_at"`
	CreatedAt    time.Time `bun:"created_at"`
}

func (r contactRow) contact() messaging.Contact {
	c := messaging.Contact(r)
	c.LastActiveAt, c.CreatedAt = utc(r.LastActiveAt), utc(r.CreatedAt)
	return c
}

// utc returns t in UTC, and the zero time (a NULL) as it is.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

// ts is the argument for a timestamp column: NULL for the zero time.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}

// nullable is the argument for a nullable text column: NULL for "".
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

const contactCols = "id, username, phone_number, avatar_url, last_active_at, created_at"

var errUsernameTaken = fmt.Errorf("sqlstore: username taken: %w", messaging.ErrConflict)

// PutContact inserts the contact, or replaces every field of the contact
// with the same ID. Errors: ErrConflict if another contact has the username.
func (s *store) PutContact(ctx context.Context, c messaging.Contact) error {
	args := []any{c.ID, c.Username, c.PhoneNumber, c.AvatarURL, ts(c.LastActiveAt), c.CreatedAt.UTC()}
	return wrapErr("sqlstore.PutContact", s.eng.putContact(ctx, s, args))
}

// GetContact returns the contact, or an error matching ErrNotFound.
func (s *store) GetContact(ctx context.Context, id string) (messaging.Contact, error) {
	return s.contactWhere(ctx, "id = ?", id)
}

// ContactByUsername returns the contact with that username, or an error
// matching ErrNotFound.
func (s *store) ContactByUsername(ctx context.Context, username string) (messaging.Contact, error) {
	return s.contactWhere(ctx, "username = ?", username)
}

func (s *store) contactWhere(ctx context.Context, where string, arg string) (messaging.Contact, error) {
	r, err := readOne[contactRow](ctx, s.readPrepared, "contact", "SELECT "+contactCols+" FROM contacts WHERE "+where, arg)
	return r.contact(), wrapErr("sqlstore.GetContact", err)
}

// TouchContact moves the contact's LastActiveAt forward to at, never back,
// or returns an error matching ErrNotFound.
func (s *store) TouchContact(ctx context.Context, id string, at time.Time) error {
	n, err := s.exec(ctx, "UPDATE contacts SET last_active_at = ? WHERE id = ? AND (last_active_at IS NULL OR last_active_at < ?)", ts(at), id, ts(at))
	if err == nil && n == 0 {
		// Touched later already, or missing.
		_, err = readOne[string](ctx, txQuery(s.w), "contact", "SELECT id FROM contacts WHERE id = ?", id)
	}
	return wrapErr("sqlstore.TouchContact", err)
}
