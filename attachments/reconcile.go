package attachments

import (
	"context"
	"errors"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/parleychat/parley/internal/domain"
	"github.com/parleychat/parley/messaging/driver"
)

// ReconcileReport says what Reconcile did and found.
type ReconcileReport struct {
	// Deleted counts the pending deletions carried out.
	Deleted int
	// Orphans counts the objects of this database without a row, older
	// than Options.OrphanGrace, that were moved aside (under OrphanPrefix).
	Orphans int
	// Purged counts the objects moved aside more than
	// Options.OrphanRetention ago that were deleted.
	Purged int
	// Unowned counts the objects without a row, older than
	// Options.OrphanGrace, that Reconcile may not touch: another
	// database's, from before installation prefixes, or every one when the
	// claim refused the sweep. They are left as they are.
	Unowned int
	// Missing counts the attachment rows whose object is not in the blob
	// store; their keys are logged at ERROR. (Only when the storage is
	// a KeyLister and the BlobStore a Lister.)
	Missing int
	// Failed counts the objects that could not be removed or moved (they
	// stay for the next run).
	Failed int
	// Expired counts the upload reservations removed after their expiry,
	// with their objects where no attachment was made of them.
	Expired int
}

// Reconcile finishes what failures left behind, and reports what it cannot
// mend:
//
//   - it removes the upload reservations expired more than
//     Options.FinishTimeout ago, and their objects when no attachment was
//     made of them (see Reserve);
//   - it removes the objects of pending deletions (rows deleted, objects
//     not yet);
//   - when the BlobStore is a Lister and the claim of the blob store is
//     this database's (see Claim), it moves aside the objects under this
//     database's own prefix that no row names and that are older than
//     Options.OrphanGrace (uploads whose row could not be written), and
//     deletes those moved aside longer than Options.OrphanRetention ago.
//     An object without a row that is not provably this database's is
//     never touched, only counted;
//   - when the storage is also a driver.KeyLister, it counts (and logs) the
//     rows whose object is missing.
//
// When the claim is another database's, or the database is older than the
// claim (restored from a backup), Reconcile still does the rest, and
// returns the report with an error of kind ErrConflict that says why no
// object was moved. Run it periodically (the example server does, every
// few minutes).
func (s *Service) Reconcile(ctx context.Context) (ReconcileReport, error) {
	var rep ReconcileReport
	if err := s.sweepReservations(ctx, &rep); err != nil {
		return rep, domain.Wrap("attachments.Reconcile", err)
	}
	if err := s.finishDeletions(ctx, &rep); err != nil {
		return rep, domain.Wrap("attachments.Reconcile", err)
	}
	lister, ok := s.blobs.(driver.Lister)
	if !ok {
		return rep, nil
	}
	own, claimErr := s.claim(ctx, true)
	if claimErr != nil && driver.KindOf(claimErr) != driver.ErrConflict && driver.KindOf(claimErr) != driver.ErrUnimplemented {
		return rep, domain.Wrap("attachments.Reconcile", claimErr)
	}
	seen, err := s.sweep(ctx, lister, own, &rep)
	if err == nil && own != "" {
		err = s.purge(ctx, lister, own, &rep)
	}
	if err == nil {
		err = s.findMissing(ctx, seen, &rep)
	}
	if err != nil {
		return rep, domain.Wrap("attachments.Reconcile", err)
	}
	if driver.KindOf(claimErr) == driver.ErrConflict {
		return rep, domain.Wrap("attachments.Reconcile", claimErr)
	}
	return rep, nil
}

// finishDeletions removes the objects of pending deletions and forgets them.
func (s *Service) finishDeletions(ctx context.Context, rep *ReconcileReport) error {
	r, err := s.rights(ctx, true)
	if err != nil {
		return err
	}
	for {
		keys, err := s.repo.PendingDeletions(ctx, 100)
		if err != nil {
			return err
		}
		progress := false
		for _, key := range keys {
			kept := !s.mayDelete(ctx, r, key) // not this database's alone: forget it all the same
			if !kept {
				if err := s.deleteObject(ctx, key); err != nil {
					rep.Failed++
					continue
				}
			}
			if err := s.repo.ForgetDeletion(ctx, key); err != nil {
				return err
			}
			if !kept {
				rep.Deleted++
			}
			progress = true
		}
		if len(keys) < 100 || !progress {
			return nil
		}
	}
}

// keySet is a set of keys kept as 64-bit hashes: 8 bytes a key, whatever
// its length. A false "present" (two keys of one hash, about one chance in
// 2^64 per pair) only hides a missing object from the report.
type keySet struct {
	seed   maphash.Seed
	hashes []uint64
}

func newKeySet() *keySet { return &keySet{seed: maphash.MakeSeed()} }

func (k *keySet) add(key string) { k.hashes = append(k.hashes, maphash.String(k.seed, key)) }

func (k *keySet) has(key string) bool {
	_, ok := slices.BinarySearch(k.hashes, maphash.String(k.seed, key))
	return ok
}

// sweep lists the objects under KeyPrefix, moves aside those under own
// (this database's prefix; "" for none) that no row names and that are
// older than the grace period, and counts the others without a row. It
// returns the set of the keys it saw.
func (s *Service) sweep(ctx context.Context, lister driver.Lister, own string, rep *ReconcileReport) (*keySet, error) {
	seen := newKeySet()
	cutoff := s.opts.Now().Add(-s.opts.OrphanGrace)
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		objects := make([]string, len(batch)) // a preview's object
		for i, key := range batch {
			objects[i] = objectOf(key)
		}
		used, err := s.repo.KeysInUse(ctx, objects)
		if err != nil {
			return err
		}
		for i, key := range batch {
			switch {
			case used[objects[i]]:
			case own == "" || !strings.HasPrefix(key, own):
				rep.Unowned++
			case s.moveAside(ctx, key) != nil:
				rep.Failed++
			default:
				rep.Orphans++
			}
		}
		batch = batch[:0]
		return nil
	}
	err := lister.List(ctx, KeyPrefix, func(o driver.Object) error {
		seen.add(o.Key)
		if o.ModTime.After(cutoff) {
			return nil
		}
		batch = append(batch, o.Key)
		if len(batch) == 100 {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	slices.Sort(seen.hashes)
	return seen, err
}

// moveAside copies the object at key to OrphanPrefix + key, then deletes
// it. Should the copy fail, the object stays where it is.
func (s *Service) moveAside(ctx context.Context, key string) error {
	r, err := s.blobs.Open(ctx, key)
	if errors.Is(err, driver.ErrNotFound) {
		return nil // gone meanwhile
	}
	if err != nil {
		s.opts.Logger.WarnContext(ctx, "attachments: cannot read an orphan to move it aside", "key", key, "err", err)
		return err
	}
	err = s.blobs.Put(ctx, OrphanPrefix+key, "application/octet-stream", r)
	_ = r.Close()
	if err != nil {
		s.opts.Logger.WarnContext(ctx, "attachments: cannot move an orphan aside", "key", key, "err", err)
		return err
	}
	if err := s.blobs.Delete(ctx, key); err != nil && !errors.Is(err, driver.ErrNotFound) {
		s.opts.Logger.WarnContext(ctx, "attachments: cannot remove an orphan moved aside", "key", key, "err", err)
		return err
	}
	s.opts.Logger.InfoContext(ctx, "attachments: an object without a row was moved aside", "key", key, "to", OrphanPrefix+key)
	return nil
}

// purge deletes the objects moved aside from under own longer than
// Options.OrphanRetention ago.
func (s *Service) purge(ctx context.Context, lister driver.Lister, own string, rep *ReconcileReport) error {
	cutoff := s.opts.Now().Add(-s.opts.OrphanRetention)
	return lister.List(ctx, OrphanPrefix+own, func(o driver.Object) error {
		if o.ModTime.After(cutoff) {
			return nil
		}
		if err := s.blobs.Delete(ctx, o.Key); err != nil && !errors.Is(err, driver.ErrNotFound) {
			rep.Failed++
			return nil
		}
		rep.Purged++
		return nil
	})
}

// findMissing counts (and logs) the rows whose object is neither in seen
// nor in the store now.
func (s *Service) findMissing(ctx context.Context, seen *keySet, rep *ReconcileReport) error {
	kl, ok := s.repo.(driver.KeyLister)
	if !ok {
		return nil
	}
	after := ""
	for {
		keys, err := kl.AttachmentKeys(ctx, after, 500)
		if err != nil {
			return err
		}
		for _, key := range keys {
			if seen.has(key) {
				continue
			}
			// Stored after the listing passed its place, or missing.
			r, err := s.blobs.Open(ctx, key)
			if err == nil {
				_ = r.Close()
				continue
			}
			if !errors.Is(err, driver.ErrNotFound) {
				return err
			}
			rep.Missing++
			s.opts.Logger.ErrorContext(ctx, "attachments: an attachment's object is missing from the blob store", "key", key)
		}
		if len(keys) < 500 {
			return nil
		}
		after = keys[len(keys)-1]
	}
}
