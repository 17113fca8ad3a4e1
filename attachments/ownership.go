package attachments

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/parleychat/parley/internal/claim"
	"github.com/parleychat/parley/internal/domain"
	"github.com/parleychat/parley/messaging/driver"
)

// This file holds how a Service proves which objects of a bucket are its
// own: its database's installation id, the key prefix made of it, and the
// claim object that names the database a bucket belongs to. See "Which
// files are whose" in the package documentation.

// ClaimKey is the key of the object by which a database claims a blob
// store: a small JSON document naming its installation id. It lies outside
// KeyPrefix.
const ClaimKey = claim.Key

// OrphanPrefix is where Reconcile moves the objects of this database that
// no row names: the object at key K moves to OrphanPrefix + K, and is
// deleted once it has been there for Options.OrphanRetention.
const OrphanPrefix = "orphans/"

// owner is what a Service knows of its database's identity, found once.
type owner struct {
	mu     sync.Mutex
	id     string        // the installation id; "" until found
	prefix string        // KeyPrefix + id + "/"
	rights *claim.Rights // what the bucket's handovers leave it; nil until read
}

// rights returns what the handovers of the blob store (see
// storage/storecopy) leave to this database: the prefix of its new files,
// the prefixes it serves, those under which it may delete. fresh reads
// the handovers again; otherwise those read last serve. Without an
// installation id, every key is its own.
func (s *Service) rights(ctx context.Context, fresh bool) (claim.Rights, error) {
	id, err := s.installationID(ctx)
	if err != nil {
		return claim.Rights{}, err
	}
	if id == "" {
		return claim.Rights{Own: KeyPrefix, Legacy: true}, nil
	}
	s.own.mu.Lock()
	r := s.own.rights
	s.own.mu.Unlock()
	if r != nil && !fresh {
		return *r, nil
	}
	hs, err := claim.LoadHandovers(ctx, s.blobs)
	if errors.Is(err, claim.ErrMalformed) {
		return claim.Rights{}, &driver.Error{Kind: driver.ErrConflict, Message: err.Error(), Err: err}
	}
	if err != nil {
		return claim.Rights{}, err
	}
	rs := claim.RightsOf(hs, KeyPrefix, id)
	s.own.mu.Lock()
	s.own.rights = &rs
	s.own.mu.Unlock()
	return rs, nil
}

// installationID returns the database's installation id, or "" when the
// storage has none.
func (s *Service) installationID(ctx context.Context) (string, error) {
	inst, ok := s.repo.(driver.Installation)
	if !ok {
		return "", nil
	}
	s.own.mu.Lock()
	defer s.own.mu.Unlock()
	if s.own.id != "" {
		return s.own.id, nil
	}
	id, err := inst.InstallationID(ctx)
	if err != nil {
		return "", err
	}
	if !claim.ValidInstallationID(id) {
		return "", fmt.Errorf("attachments: the repository's installation id %q is not 1 to 64 letters, digits, '_' or '-'", id)
	}
	s.own.id, s.own.prefix = id, KeyPrefix+id+"/"
	return id, nil
}

// keyPrefix returns the prefix of the keys of new objects: KeyPrefix plus
// the installation id and "/", or KeyPrefix alone without an Installation.
//
// After a database-only copy (a shared handover, see storage/storecopy)
// the prefix is KeyPrefix, the id, "/g", a number and "/": the files
// under the id's prefix are shared with the copy and frozen.
func (s *Service) keyPrefix(ctx context.Context) (string, error) {
	r, err := s.rights(ctx, false)
	if err != nil {
		return KeyPrefix, err
	}
	return r.Own, nil
}

// isKeyOf reports whether a.Key is a key the Service gave, or was handed,
// the file of a.ID: KeyPrefix, this database's installation id and "/" (or
// a prefix a copy handed it; or, for a file stored before installation
// ids, nothing), then the id. Keys are made only by the upload (see
// keyPrefix), never from user input.
func (s *Service) isKeyOf(ctx context.Context, a driver.Attachment) bool {
	if a.Key == KeyPrefix+a.ID {
		return true
	}
	r, err := s.rights(ctx, false)
	return err == nil && r.Own != KeyPrefix && r.Serves(KeyPrefix, a.Key, a.ID)
}

// mayDelete reports whether the Service may delete the object at key:
// one under its own prefix, or handed to it alone, never one it shares
// with another database or did not make. r is from rights(ctx, true).
func (s *Service) mayDelete(ctx context.Context, r claim.Rights, key string) bool {
	if r.MayDelete(KeyPrefix, key) {
		return true
	}
	legacy := !strings.Contains(strings.TrimPrefix(key, KeyPrefix), "/")
	if claim.Under(key, r.Frozen) || legacy && len(r.SharedWith) > 0 {
		s.opts.Logger.InfoContext(ctx, "attachments: the object of a deleted attachment is kept: a copy of this database (a database-only move) may still serve it, so neither database deletes it",
			"key", key, "shared_with", r.SharedWith)
	} else {
		s.opts.Logger.WarnContext(ctx, "attachments: the object of a deleted attachment is kept: its key is not one this database made or was handed", "key", key)
	}
	return false
}

// Claim makes sure that the blob store belongs to this Service's database,
// and claims it (writes ClaimKey) when it belongs to no one: when it holds
// no object under KeyPrefix, or only objects that this database knows (a
// bucket from before claims). Call it once at start, before serving: the
// example server does, and refuses to start when it fails.
//
// Errors: ErrConflict when another database claimed the bucket, or when
// the bucket holds files that this database does not know (a new database
// over another's files: a mistyped database address, or two databases
// pointed at one folder); ErrUnimplemented when the storage is not a driver.
// Installation. The message says what to do.
func (s *Service) Claim(ctx context.Context) error {
	_, err := s.claim(ctx, false)
	return domain.Wrap("attachments.Claim", err)
}

// claim checks (and, for a bucket without one, writes) the claim. With
// sweep, it also checks that the database is not older than the bucket (a
// database restored from a backup, which knows fewer files than the bucket
// holds), and advances the epoch, recording it in the claim. It returns
// the prefix of the objects that Reconcile may move aside.
func (s *Service) claim(ctx context.Context, sweep bool) (ownPrefix string, err error) {
	id, err := s.installationID(ctx)
	if err != nil {
		return "", err
	}
	if id == "" {
		return "", &driver.Error{Kind: driver.ErrUnimplemented,
			Message: "the repository does not name its database (driver.Installation): the blob store cannot be claimed"}
	}
	inst := s.repo.(driver.Installation)
	r, err := s.rights(ctx, true)
	if err != nil {
		return "", err
	}
	own := r.Own
	c, found, err := s.readClaim(ctx)
	if err != nil {
		return "", err
	}
	if found && c.Installation != id {
		if slices.Contains(r.SharedWith, c.Installation) {
			// A database-only copy of the claim's database (or its source):
			// the bucket is shared by a handover. Each database sweeps its
			// own prefix only; the files they share are frozen.
			if !sweep {
				s.opts.Logger.InfoContext(ctx, "attachments: this database shares the blob store with another by a copy's handover: "+
					"the files handed over stay in place for both, neither deletes them; this database's new files go under its own prefix",
					"installation", id, "shared_with", r.SharedWith, "own_prefix", own, "frozen", r.Frozen)
			}
			return own, nil
		}
		return "", &driver.Error{Kind: driver.ErrConflict, Message: fmt.Sprintf(
			"the blob store belongs to another Parley database (installation %s; this database is %s): "+
				"use the database that owns these files, or another bucket or folder for this one; "+
				"to move a database, copy it with storecopy (server copy), which hands its files over", c.Installation, id)}
	}
	if !found {
		if err := s.mayAdopt(ctx, KeyPrefix+id+"/"); err != nil {
			return "", err
		}
	}
	epoch, err := inst.Epoch(ctx)
	if err != nil {
		return "", err
	}
	if found && epoch < c.Epoch {
		if !sweep {
			return own, nil // serving is safe; only the sweep is not
		}
		return "", &driver.Error{Kind: driver.ErrConflict, Message: fmt.Sprintf(
			"the database is older than its blob store (reconcile epoch %d, the bucket's claim says %d): "+
				"it was restored from a backup and does not know every file, so objects without a row are left alone; "+
				"once the files it lost are dealt with, delete the object %s from the bucket to let this database claim it again",
			epoch, c.Epoch, ClaimKey)}
	}
	if found && !sweep {
		return own, nil
	}
	if sweep {
		if epoch, err = inst.AdvanceEpoch(ctx); err != nil {
			return "", err
		}
	}
	if err := s.writeClaim(ctx, claim.Doc{Note: claim.Note, Installation: id, Epoch: epoch, ClaimedAt: s.opts.Now().UTC()}); err != nil {
		return "", err
	}
	if !found {
		// Another database may have claimed the bucket at the same moment:
		// the claim that stayed decides.
		c, found, err := s.readClaim(ctx)
		if err != nil {
			return "", err
		}
		if !found || c.Installation != id {
			return "", &driver.Error{Kind: driver.ErrConflict,
				Message: "another Parley database claimed the blob store at the same time: use another bucket or folder for this one"}
		}
	}
	return own, nil
}

// readClaim returns the claim of the blob store, if it has one.
func (s *Service) readClaim(ctx context.Context) (claim.Doc, bool, error) {
	c, _, found, err := claim.Load(ctx, s.blobs)
	if errors.Is(err, claim.ErrMalformed) {
		return claim.Doc{}, false, &driver.Error{Kind: driver.ErrConflict,
			Message: "the blob store's claim " + ClaimKey + " cannot be read: restore it, or delete it if this database owns the bucket",
			Err:     err}
	}
	if err != nil {
		return claim.Doc{}, false, fmt.Errorf("read the claim %s: %w", ClaimKey, err)
	}
	return c, found, nil
}

func (s *Service) writeClaim(ctx context.Context, c claim.Doc) error {
	data, err := c.Marshal()
	if err != nil {
		return err
	}
	if err := s.blobs.Put(ctx, ClaimKey, "application/json", bytes.NewReader(data)); err != nil {
		return fmt.Errorf("write the claim %s: %w", ClaimKey, err)
	}
	return nil
}

// adoptSample is how many objects mayAdopt looks at.
const adoptSample = 1000

// errEnough stops a List early.
var errEnough = errors.New("enough")

// mayAdopt decides whether a database may claim a blob store without a
// claim: yes when the store holds no object under KeyPrefix, or objects of
// which at least one is under the database's own prefix or named by one of
// its rows (a bucket it used before claims existed); no when every object
// it holds is unknown to the database.
func (s *Service) mayAdopt(ctx context.Context, own string) error {
	lister, ok := s.blobs.(driver.Lister)
	if !ok {
		return nil // nothing to look at; Reconcile cannot sweep either
	}
	var keys []string
	err := lister.List(ctx, KeyPrefix, func(o driver.Object) error {
		keys = append(keys, o.Key)
		if len(keys) == adoptSample {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	for _, k := range keys {
		if strings.HasPrefix(k, own) {
			return nil
		}
	}
	for i, k := range keys {
		keys[i] = objectOf(k) // a preview's object
	}
	used, err := s.repo.KeysInUse(ctx, keys)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if used[k] {
			return nil
		}
	}
	more := ""
	if len(keys) == adoptSample {
		more = " or more"
	}
	return &driver.Error{Kind: driver.ErrConflict, Message: fmt.Sprintf(
		"the blob store holds %d%s files that this database does not know: it is another Parley database's "+
			"(or this database is new, or was restored from an old backup): use the database that owns these files, "+
			"or another bucket or folder for this one", len(keys), more)}
}
