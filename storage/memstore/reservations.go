package memstore

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

var _ driver.ReservationStore = (*store)(nil)

// CreateReservation stores r; an existing id is an ErrConflict.
func (s *store) CreateReservation(ctx context.Context, r driver.Reservation) error {
	return s.createReservation(ctx, r, nil)
}

// CreateReservationKeyed is CreateReservation that also stores done; on any
// error neither is stored.
func (s *store) CreateReservationKeyed(ctx context.Context, r driver.Reservation, done driver.IdempotencyRecord) error {
	return s.createReservation(ctx, r, &done)
}

func (s *store) createReservation(ctx context.Context, r driver.Reservation, done *driver.IdempotencyRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.reserved[r.ID]; ok {
		return conflict("a reservation with the id " + strconv.Quote(r.ID) + " already exists")
	}
	if err := s.holds(done); err != nil {
		return err
	}
	defer s.keep(done)
	if s.reserved == nil {
		s.reserved = make(map[string]driver.Reservation)
	}
	r.CreatedAt, r.ExpiresAt = norm(r.CreatedAt), norm(r.ExpiresAt)
	s.reserved[r.ID] = r
	return nil
}

// GetReservation returns the reservation, or an error matching
// messaging.ErrNotFound.
func (s *store) GetReservation(ctx context.Context, id string) (driver.Reservation, error) {
	if err := ctx.Err(); err != nil {
		return driver.Reservation{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.reserved[id]
	if !ok {
		return driver.Reservation{}, &messaging.Error{Kind: messaging.ErrNotFound, Message: "no such reservation: " + id}
	}
	return r, nil
}

// CompleteReservation stores a (CreateAttachment), with done when not nil,
// and removes the reservation id; if it does not exist, it stores nothing
// and returns an error matching messaging.ErrNotFound.
func (s *store) CompleteReservation(ctx context.Context, id string, a driver.Attachment, rec driver.Recorder, done *driver.IdempotencyRecord) error {
	return s.createAttachment(ctx, a, rec, done, id)
}

// reservedFor checks, under s.mu, that the reservation id that a write
// completes exists; "" is none.
func (s *store) reservedFor(id string) error {
	if _, ok := s.reserved[id]; id != "" && !ok {
		return notFound("reservation", id)
	}
	return nil
}

// DeleteReservation removes the reservation, if it exists.
func (s *store) DeleteReservation(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.reserved, id)
	return nil
}

// ExpiredReservations returns up to limit reservations expired at now,
// oldest expiry first.
func (s *store) ExpiredReservations(ctx context.Context, now time.Time, limit int) ([]driver.Reservation, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []driver.Reservation{}
	for _, r := range s.reserved {
		if !r.ExpiresAt.After(now) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b driver.Reservation) int {
		if c := a.ExpiresAt.Compare(b.ExpiresAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out[:min(limit, len(out))], nil
}
