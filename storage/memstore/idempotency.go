package memstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// keyID is the key of an idempotency record: its scope and key.
type keyID struct{ scope, key string }

// GetIdempotencyKey returns the record of the key, or an error matching
// messaging.ErrNotFound.
func (s *store) GetIdempotencyKey(ctx context.Context, scope, key string) (driver.IdempotencyRecord, error) {
	if err := ctx.Err(); err != nil {
		return driver.IdempotencyRecord{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.keys[keyID{scope, key}]
	if !ok {
		return driver.IdempotencyRecord{}, fmt.Errorf("memstore: no idempotency key %q: %w", key, messaging.ErrNotFound)
	}
	return copyRecord(r), nil
}

// ClaimIdempotencyKey stores rec unless an unexpired record of its key is
// done, or claimed at or after staleBefore; it reports whether it stored
// rec, and returns the record in the way when it did not.
func (s *store) ClaimIdempotencyKey(ctx context.Context, rec driver.IdempotencyRecord, staleBefore time.Time) (driver.IdempotencyRecord, bool, error) {
	if err := ctx.Err(); err != nil {
		return driver.IdempotencyRecord{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := keyID{rec.Scope, rec.Key}
	if cur, ok := s.keys[k]; ok && cur.ExpiresAt.After(norm(rec.CreatedAt)) && (cur.Lock == "" || !cur.CreatedAt.Before(norm(staleBefore))) {
		return copyRecord(cur), false, nil
	}
	rec = copyRecord(rec)
	rec.Result = nil
	rec.CreatedAt, rec.ExpiresAt = norm(rec.CreatedAt), norm(rec.ExpiresAt)
	s.keys[k] = rec
	return copyRecord(rec), true, nil
}

// ReleaseIdempotencyKey removes the record of the key if it is claimed with
// lock.
func (s *store) ReleaseIdempotencyKey(ctx context.Context, scope, key, lock string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := keyID{scope, key}
	if cur, ok := s.keys[k]; ok && lock != "" && cur.Lock == lock {
		delete(s.keys, k)
	}
	return nil
}

// CreateMessageKeyed is CreateMessage that also stores done, the record of
// an idempotency key; on any error nothing is stored.
func (s *store) CreateMessageKeyed(ctx context.Context, m messaging.Message, attachmentIDs []string, rec driver.Recorder, done driver.IdempotencyRecord) error {
	return s.createMessage(ctx, m, attachmentIDs, rec, &done)
}

// PruneIdempotencyKeys removes up to limit records that expired at or
// before before, oldest expiry first.
func (s *store) PruneIdempotencyKeys(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var expired []driver.IdempotencyRecord
	for _, r := range s.keys {
		if !r.ExpiresAt.After(before) {
			expired = append(expired, r)
		}
	}
	slices.SortFunc(expired, func(a, b driver.IdempotencyRecord) int { return a.ExpiresAt.Compare(b.ExpiresAt) })
	if limit > 0 && len(expired) > limit {
		expired = expired[:limit]
	}
	for _, r := range expired {
		delete(s.keys, keyID{r.Scope, r.Key})
	}
	return len(expired), nil
}

// holds checks, under s.mu, that done (when not nil) may be stored: its key
// has no record, an expired one, or the claim of done.Lock. Otherwise the
// error matches driver.ErrKeyTaken.
func (s *store) holds(done *driver.IdempotencyRecord) error {
	if done == nil {
		return nil
	}
	cur, ok := s.keys[keyID{done.Scope, done.Key}]
	if ok && cur.ExpiresAt.After(norm(done.CreatedAt)) && (cur.Lock == "" || cur.Lock != done.Lock) {
		return fmt.Errorf("memstore: idempotency key %q: %w", done.Key, driver.ErrKeyTaken)
	}
	return nil
}

// keep stores done (when not nil; see holds) as the done record of its
// key.
func (s *store) keep(done *driver.IdempotencyRecord) {
	if done == nil {
		return
	}
	rec := copyRecord(*done)
	rec.Lock = ""
	rec.CreatedAt, rec.ExpiresAt = norm(rec.CreatedAt), norm(rec.ExpiresAt)
	s.keys[keyID{rec.Scope, rec.Key}] = rec
}

func copyRecord(r driver.IdempotencyRecord) driver.IdempotencyRecord {
	r.Result = slices.Clone(r.Result)
	return r
}
