package messaging

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/parleychat/parley/internal/domain"
	"github.com/parleychat/parley/messaging/driver"
)

// Idempotency makes a write safe to retry: the first call with Key from a
// caller is carried out and its result kept (for Options.IdempotencyKeyTTL,
// 24 hours by default); a later call from the same caller with the same
// Key and the same arguments returns the kept result and changes nothing.
// See "Retries" in the package documentation.
type Idempotency = driver.Idempotency

// setReplayed sets *idem.Replayed, if any, to v.
func setReplayed(idem Idempotency, v bool) {
	if idem.Replayed != nil {
		*idem.Replayed = v
	}
}

func keyReused(key string) error {
	return &Error{Kind: ErrInvalid, Code: CodeKeyReused,
		Message: "idempotency key " + strconv.Quote(key) + " was first used with other parameters; use a new key for a new request"}
}

func keyInUse(key string) error {
	return &Error{Kind: ErrConflict, Code: CodeKeyInUse,
		Message: "a request with idempotency key " + strconv.Quote(key) + " is still being processed; retry later"}
}

// Defaults and bounds of idempotency keys.
const (
	defaultKeyTTL         = 24 * time.Hour
	defaultKeyLockTimeout = time.Minute
	// pruneEvery is how often, at most, a Service prunes expired keys on
	// its own; pruneBatch how many records one statement removes.
	pruneEvery = time.Hour
	pruneBatch = 1000
)

// keyParam is the parameter name of an idempotency key in errors.
const keyParam = "idempotency_key"

// fingerprint returns the hex SHA-256 of a write's operation and arguments,
// each written with its length, so that no two lists of arguments share
// one.
func fingerprint(parts ...string) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, p := range parts {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(p)))])
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// list encodes a list of strings as one argument of a fingerprint.
func list(ss []string) string {
	b := []byte(strconv.Itoa(len(ss)))
	var n [binary.MaxVarintLen64]byte
	for _, s := range ss {
		b = append(b, n[:binary.PutUvarint(n[:], uint64(len(s)))]...)
		b = append(b, s...)
	}
	return string(b)
}

// optional encodes an optional argument of a fingerprint.
func optional(s *string) string {
	if s == nil {
		return "-"
	}
	return "+" + *s
}

// newLock returns a random claim token.
func newLock() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// hold marks key of scope as held by a call of this Service until release
// is called, or fails with ErrConflict (CodeKeyInUse) when another call of
// this Service holds it: a retry that reaches the process running the
// first call is refused at once, before it reads or writes anything.
func (s *Service) hold(scope, key string) (release func(), err error) {
	k := scope + "\x00" + key
	if _, held := s.inflight.LoadOrStore(k, struct{}{}); held {
		return nil, keyInUse(key)
	}
	return func() { s.inflight.Delete(k) }, nil
}

// newRecord returns the record of a keyed write of scope that begins now.
func (s *Service) newRecord(scope, key, fp string) driver.IdempotencyRecord {
	now := s.now()
	return driver.IdempotencyRecord{Scope: scope, Key: key, Fingerprint: fp, Lock: newLock(),
		CreatedAt: now, ExpiresAt: now.Add(s.opts.IdempotencyKeyTTL)}
}

// once carries out write once for idem.Key of scope (see Retries), write
// being a short write whose keyed repository call stores its record, done,
// in its transaction. The first call with a key writes at once: a single
// write, with no claim before it. When write fails, and the key turns out
// to answer an earlier call (the write failed because the key's record was
// in its way, or because the change is done already), the resource the
// key answered is read again by reread, given its id (replayed true), or
// the error is that of a key reused with other arguments, or under way.
func (s *Service) once(ctx context.Context, scope string, idem Idempotency, fp string, reread func(id string) error, write func(done driver.IdempotencyRecord) error) (replayed bool, err error) {
	release, err := s.hold(scope, idem.Key)
	if err != nil {
		return false, err
	}
	defer release()
	s.prunePeriodically(ctx)
	done := s.newRecord(scope, idem.Key, fp)
	err = write(done)
	if err == nil {
		setReplayed(idem, false)
		return false, nil
	}
	rec, rerr := s.repo.GetIdempotencyKey(ctx, scope, idem.Key)
	switch {
	case errors.Is(rerr, ErrNotFound) || rerr == nil && !rec.ExpiresAt.After(done.CreatedAt):
		if errors.Is(err, driver.ErrKeyTaken) { // answered meanwhile, then pruned
			return false, keyInUse(idem.Key)
		}
		return false, err // the write's own failure
	case rerr != nil:
		return false, err
	case rec.Lock == "":
		id, err := replay(rec, fp)
		if err != nil {
			return false, err
		}
		if err := reread(id); err != nil {
			return false, err
		}
		setReplayed(idem, true)
		return true, nil
	case rec.CreatedAt.Before(done.CreatedAt.Add(-s.opts.IdempotencyLockTimeout)):
		// The stale claim of a call that died (an upload): take it over,
		// and write once more under it.
		claim, ok, cerr := s.repo.ClaimIdempotencyKey(ctx, done, done.CreatedAt.Add(-s.opts.IdempotencyLockTimeout))
		if cerr != nil || !ok {
			return false, keyInUse(idem.Key)
		}
		if err := write(claim); err != nil {
			s.releaseKey(ctx, claim)
			if errors.Is(err, driver.ErrKeyTaken) {
				return false, keyInUse(idem.Key)
			}
			return false, err
		}
		setReplayed(idem, false)
		return false, nil
	default:
		return false, keyInUse(idem.Key) // claimed by a call under way
	}
}

// keyed is once for a write that returns its result, which get reads
// again on a replay.
func keyed[T any](ctx context.Context, s *Service, scope string, idem Idempotency, fp string, get func(id string) (T, error), write func(done driver.IdempotencyRecord) (T, error)) (T, error) {
	var v T
	reread := func(id string) (err error) {
		v, err = get(id)
		return err
	}
	_, err := s.once(ctx, scope, idem, fp, reread, func(done driver.IdempotencyRecord) error {
		var err error
		v, err = write(done)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// claimKey claims key of scope for a long write with fingerprint fp, in the
// store, so that a retry on any instance sees it under way. It returns the
// claim, which the write must complete or the caller release; or, with
// done true, the record of the write the key already answered (whose
// fingerprint the caller compares). A key claimed by a call under way is
// an error of kind ErrConflict (CodeKeyInUse).
func (s *Service) claimKey(ctx context.Context, scope, key, fp string) (rec driver.IdempotencyRecord, done bool, err error) {
	rec = s.newRecord(scope, key, fp)
	got, ok, err := s.repo.ClaimIdempotencyKey(ctx, rec, rec.CreatedAt.Add(-s.opts.IdempotencyLockTimeout))
	if err != nil {
		return driver.IdempotencyRecord{}, false, err
	}
	if ok {
		return rec, false, nil
	}
	if got.Lock != "" {
		return driver.IdempotencyRecord{}, false, keyInUse(key)
	}
	return got, true, nil
}

// releaseKey gives up a claim whose write failed, so that a retry is
// carried out anew. A claim that cannot be released now is taken over by a
// retry after Options.IdempotencyLockTimeout.
func (s *Service) releaseKey(ctx context.Context, rec driver.IdempotencyRecord) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.repo.ReleaseIdempotencyKey(ctx, rec.Scope, rec.Key, rec.Lock); err != nil {
		s.opts.Logger.WarnContext(ctx, "messaging: cannot release an idempotency key; a retry takes it over later", "key", rec.Key, "err", err)
	}
}

// replay returns the id of the resource that rec, the record of a done
// write, answered, or the error of a key reused with other arguments
// (fingerprint fp).
//
// A record keeps only that id, not the answer: a replay reads the resource
// again, as the caller may see it now, so that records stay small (a
// no-op PUT would otherwise keep a whole message for a day) and a replay
// after the caller lost access to it, or after it was deleted, answers
// what a fresh request would.
func replay(rec driver.IdempotencyRecord, fp string) (string, error) {
	if rec.Fingerprint != fp {
		return "", keyReused(rec.Key)
	}
	return string(rec.Result), nil
}

// PruneIdempotencyKeys removes the records of idempotency keys that expired
// (Options.IdempotencyKeyTTL after their first use), in batches, and
// returns how many it removed. The Service also prunes on its own, at most
// once an hour, in the background after a keyed write; a host may call this
// from its own schedule instead or as well.
func (s *Service) PruneIdempotencyKeys(ctx context.Context) (int, error) {
	return s.pruneKeys(ctx, s.now())
}

// pruneKeys removes the records that expired at or before before.
func (s *Service) pruneKeys(ctx context.Context, before time.Time) (int, error) {
	total := 0
	for {
		n, err := s.repo.PruneIdempotencyKeys(ctx, before, pruneBatch)
		total += n
		if err != nil {
			return total, wrapErr("messaging.PruneIdempotencyKeys", err)
		}
		if n < pruneBatch {
			return total, nil
		}
	}
}

// prunePeriodically starts PruneIdempotencyKeys in the background when the
// last run (or the Service's start) is pruneEvery ago, one run at a time.
func (s *Service) prunePeriodically(ctx context.Context) {
	now := s.now()
	last := s.lastPrune.Load()
	if now.UnixNano()-last < int64(pruneEvery) || !s.lastPrune.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if n, err := s.pruneKeys(ctx, now); err != nil {
			s.opts.Logger.WarnContext(ctx, "messaging: cannot prune expired idempotency keys", "err", err)
		} else if n > 0 {
			s.opts.Logger.DebugContext(ctx, "messaging: pruned expired idempotency keys", "removed", n)
		}
	}()
}

// files is what the attachments Service built with this one needs of it
// beyond its rules (domain.Files): the protocol of idempotency keys, so
// that one set of rules and one store of records serve both services, and
// the messages uploads are linked to.
type files struct{ s *Service }

// Get returns the message if the caller may see it (Service.Get) and it
// is no tombstone, which takes no attachments: ErrNotFound then.
func (f files) Get(ctx context.Context, caller Contact, id string) (Message, error) {
	m, err := f.s.Get(ctx, caller, id)
	if err == nil && m.Deleted {
		return Message{}, wrapErr("messaging.Get "+strconv.Quote(id), notFound(id))
	}
	return m, err
}

// Hold holds key of scope in this process (hold).
func (f files) Hold(scope, key string) (func(), error) { return f.s.hold(scope, key) }

// Claim claims key of scope in the store for a long write (claimKey).
func (f files) Claim(ctx context.Context, scope, key, fp string) (driver.IdempotencyRecord, bool, error) {
	f.s.prunePeriodically(ctx)
	return f.s.claimKey(ctx, scope, key, fp)
}

// Release gives up a claim whose write failed with err, and returns the
// error to report.
func (f files) Release(ctx context.Context, rec driver.IdempotencyRecord, err error) error {
	f.s.releaseKey(ctx, rec)
	if errors.Is(err, driver.ErrKeyTaken) {
		return keyInUse(rec.Key)
	}
	return err
}

// Once carries out a short write once per key (once).
func (f files) Once(ctx context.Context, scope string, idem Idempotency, fp string, reread func(id string) error, write func(done driver.IdempotencyRecord) error) (bool, error) {
	return f.s.once(ctx, scope, idem, fp, reread, write)
}

// Replay returns the id of the resource rec answered (replay).
func (f files) Replay(rec driver.IdempotencyRecord, fp string) (string, error) {
	return replay(rec, fp)
}

// Fingerprint returns the fingerprint of a write's arguments.
func (f files) Fingerprint(parts ...string) string { return fingerprint(parts...) }

// MaxAttachments is Options.MaxAttachments, so that an upload to a full
// message is refused before its file is read.
func (f files) MaxAttachments() int { return f.s.opts.MaxAttachments }

// Attach stores a, a new attachment, linked to the message of caller (its
// sender) in one transaction, with done when not nil, and removes the
// upload reservation that a completes unless "", and returns the message.
// Errors: those of Update adding an attachment, but domain.ErrMessageFull
// for a message that has its most attachments; ErrNotFound also when the
// reservation is gone.
func (f files) Attach(ctx context.Context, caller Contact, messageID string, a Attachment, done *driver.IdempotencyRecord, reservation string) (Message, error) {
	s := f.s
	m, err := s.lookupLive(ctx, caller, messageID)
	if err != nil {
		return Message{}, err
	}
	if m.SenderID != caller.ID {
		return Message{}, &Error{Kind: ErrPermission, Message: "only the sender may edit a message or add attachments"}
	}
	now := s.now()
	full := func(before, after driver.MessageCounts) error {
		if s.checkCounts(before, after) != nil {
			return domain.ErrMessageFull // the attachment is all the change adds
		}
		return nil
	}
	ch := driver.MessageChange{NewAttachment: &a, Reservation: reservation, UpdatedAt: now, Check: full, Done: done,
		// The file is created linked: attachment.created shows it so, and
		// message.updated the message it joins.
		Record: s.recorder(func(c driver.Change) []Event {
			var out []Event
			for i := range c.Message.Attachments {
				if got := c.Message.Attachments[i]; got.ID == a.ID {
					e := domain.NewEvent(EventAttachmentCreated, got.ConversationID, got.UploaderID, now)
					e.Attachment = &got
					out = append(out, e)
				}
			}
			return append(out, messageEvent(EventMessageUpdated, *c.Message, now))
		}),
	}
	out, err := s.repo.UpdateMessage(ctx, messageID, ch)
	switch {
	case errors.Is(err, ErrNotFound):
		return Message{}, notFound(messageID)
	case errors.Is(err, ErrConflict) && !errors.Is(err, driver.ErrKeyTaken):
		return Message{}, &Error{Kind: ErrConflict, Message: "an attachment with this id exists", Err: err}
	case err != nil:
		return Message{}, err
	}
	s.notify()
	return out, nil
}
