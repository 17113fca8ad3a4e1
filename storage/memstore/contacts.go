package memstore

import (
	"context"
	"strconv"
	"time"

	"github.com/parleychat/parley/messaging"
)

// PutContact inserts c, or replaces every field of the contact with c's ID.
// It returns an error matching messaging.ErrConflict if another contact has
// c's Username.
func (s *store) PutContact(ctx context.Context, c messaging.Contact) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if other, ok := s.usernames[c.Username]; ok && other != c.ID {
		return conflict("the username " + strconv.Quote(c.Username) + " is taken by another contact")
	}
	if old, ok := s.contacts[c.ID]; ok {
		delete(s.usernames, old.Username)
	}
	c.CreatedAt = norm(c.CreatedAt)
	c.LastActiveAt = norm(c.LastActiveAt)
	s.contacts[c.ID] = c
	s.usernames[c.Username] = c.ID
	return nil
}

// GetContact returns the contact, or an error matching messaging.ErrNotFound.
func (s *store) GetContact(ctx context.Context, id string) (messaging.Contact, error) {
	if err := ctx.Err(); err != nil {
		return messaging.Contact{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.contacts[id]
	if !ok {
		return messaging.Contact{}, notFound("contact", id)
	}
	return c, nil
}

// ContactByUsername returns the contact with that username, or an error
// matching messaging.ErrNotFound.
func (s *store) ContactByUsername(ctx context.Context, username string) (messaging.Contact, error) {
	if err := ctx.Err(); err != nil {
		return messaging.Contact{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.usernames[username]
	if !ok {
		return messaging.Contact{}, notFound("contact with username", username)
	}
	return s.contacts[id], nil
}

// TouchContact moves the contact's LastActiveAt forward to at, never back,
// or returns an error matching messaging.ErrNotFound.
func (s *store) TouchContact(ctx context.Context, id string, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.contacts[id]
	if !ok {
		return notFound("contact", id)
	}
	if at = norm(at); at.After(c.LastActiveAt) {
		c.LastActiveAt = at
		s.contacts[id] = c
	}
	return nil
}
