package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// The records of idempotency keys, and the claims of uploads: DESIGN.md §4.8.

// keyRow is a row of idempotency_keys; its fields are
// driver.IdempotencyRecord's, in order, so that one converts to the other.
type keyRow struct {
	Scope       string    `bun:"scope"`
	Key         string    `bun:"client_key"`
	Fingerprint string    `bun:"fingerprint"`
	Lock        string    `bun:"lock_token"`
	Result      []byte    `bun:"result"`
	CreatedAt   time.Time `bun:"created_at"`
	ExpiresAt   time.Time `bun:"expires_at"`
}

const (
	keyCols = "scope, client_key, fingerprint, lock_token, result, created_at, expires_at"
	keySQL  = "SELECT " + keyCols + " FROM idempotency_keys WHERE scope = ? AND client_key = ?"
)

func (r keyRow) record() driver.IdempotencyRecord {
	rec := driver.IdempotencyRecord(r)
	rec.CreatedAt, rec.ExpiresAt = utc(r.CreatedAt), utc(r.ExpiresAt)
	return rec
}

// GetIdempotencyKey returns the record of the key, or an error matching
// ErrNotFound.
func (s *store) GetIdempotencyKey(ctx context.Context, scope, key string) (driver.IdempotencyRecord, error) {
	r, err := readOne[keyRow](ctx, s.read, "idempotency key", keySQL, scope, key)
	return r.record(), wrapErr("sqlstore.GetIdempotencyKey", err)
}

// ClaimIdempotencyKey: the first claim of a key is one INSERT that does
// nothing when the key is there; only then does a transaction read the
// record in the way, and replace it if it is expired or stale.
func (s *store) ClaimIdempotencyKey(ctx context.Context, rec driver.IdempotencyRecord, staleBefore time.Time) (_ driver.IdempotencyRecord, _ bool, err error) {
	defer wrapTo("sqlstore.ClaimIdempotencyKey", &err)
	rec.Result = nil
	for {
		inserted, err := s.exec(ctx, s.sql.claimKey, rec.Scope, rec.Key, rec.Fingerprint, rec.Lock, rec.CreatedAt.UTC(), rec.ExpiresAt.UTC())
		if err != nil {
			return driver.IdempotencyRecord{}, false, err
		}
		if inserted > 0 {
			return rec, true, nil
		}
		// The key is there: replace it if it expired or its claim is stale.
		out, claimed := rec, false
		err = s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
			r, err := readOne[keyRow](ctx, txQuery(tx), "idempotency key", keySQL+s.sql.forUpdate, rec.Scope, rec.Key)
			if cur := r.record(); err != nil || cur.ExpiresAt.After(rec.CreatedAt) && (cur.Lock == "" || !cur.CreatedAt.Before(staleBefore)) {
				out, claimed = cur, false
				return err
			}
			_, err = tx.ExecContext(ctx, `UPDATE idempotency_keys SET fingerprint = ?, lock_token = ?, result = NULL, created_at = ?, expires_at = ?
				WHERE scope = ? AND client_key = ?`, rec.Fingerprint, rec.Lock, rec.CreatedAt.UTC(), rec.ExpiresAt.UTC(), rec.Scope, rec.Key)
			out, claimed = rec, err == nil
			return err
		})
		if errors.Is(err, messaging.ErrNotFound) {
			continue // pruned or released meanwhile: claim it anew
		}
		if err != nil {
			return driver.IdempotencyRecord{}, false, err
		}
		return out, claimed, nil
	}
}

// ReleaseIdempotencyKey removes the record of the key if lock claims it.
func (s *store) ReleaseIdempotencyKey(ctx context.Context, scope, key, lock string) error {
	_, err := s.exec(ctx, "DELETE FROM idempotency_keys WHERE scope = ? AND client_key = ? AND lock_token = ? AND lock_token <> ''", scope, key, lock)
	return wrapErr("sqlstore.ReleaseIdempotencyKey", err)
}

// PruneIdempotencyKeys removes up to limit records that expired at or
// before before, oldest expiry first, in one statement.
func (s *store) PruneIdempotencyKeys(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, wrapErr("sqlstore.PruneIdempotencyKeys", invalid("limit must be at least 1"))
	}
	n, err := s.exec(ctx, fmt.Sprintf(s.sql.pruneKeys, limit), []any{before.UTC(), before.UTC()}[:s.sql.pruneKeyArgs]...)
	return int(n), wrapErr("sqlstore.PruneIdempotencyKeys", err)
}

// storeKey stores done, the record of a keyed write, in the write's
// transaction (see driver.IdempotencyStore, Keyed writes). A record in
// the way fails the transaction with ErrKeyTaken.
func (s *store) storeKey(ctx context.Context, tx bun.Tx, done driver.IdempotencyRecord) error {
	taken := fmt.Errorf("sqlstore: idempotency key %q: %w", done.Key, driver.ErrKeyTaken)
	return s.eng.storeKey(ctx, s, tx, done, taken)
}

// upsertKey stores a keyed write's record, on PostgreSQL and SQLite: it
// inserts it, or replaces an expired row or the claim of its lock; any
// other row stays, and no row is affected.
const upsertKey = `INSERT INTO idempotency_keys AS k (scope, client_key, fingerprint, lock_token, result, created_at, expires_at)
	VALUES (?, ?, ?, '', ?, ?, ?)
	ON CONFLICT (scope, client_key) DO UPDATE SET fingerprint = excluded.fingerprint, lock_token = '',
		result = excluded.result, created_at = excluded.created_at, expires_at = excluded.expires_at
	WHERE k.expires_at <= excluded.created_at OR (k.lock_token <> '' AND k.lock_token = ?)`

// CreateMessageKeyed is CreateMessage that also stores done (storeKey).
func (s *store) CreateMessageKeyed(ctx context.Context, m messaging.Message, attachmentIDs []string, rec driver.Recorder, done driver.IdempotencyRecord) error {
	return wrapErr("sqlstore.CreateMessage", s.createMessage(ctx, m, attachmentIDs, rec, &done))
}

// RenameAttachmentKeyed is RenameAttachment that also stores done (storeKey).
func (s *store) RenameAttachmentKeyed(ctx context.Context, id, filename string, rec driver.Recorder, done driver.IdempotencyRecord) (messaging.Attachment, error) {
	return s.renameAttachment(ctx, id, filename, rec, &done)
}
