package storecopy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/claim"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// Options configure Copy and Verify. A nil *Options means all defaults.
type Options struct {
	// BatchSize is the most rows read, and loaded in one transaction, at
	// a time. Default: 1000. sqlstore also ends a batch at 8 MiB of rows,
	// so that a copy holds some 30 MiB of rows at most.
	BatchSize int
	// FileWorkers is how many files are copied or hashed at once.
	// Default: 8.
	FileWorkers int
	// Progress, when set, is called with the progress of the work, at
	// most every ProgressEvery and once at the end of each stage, from
	// one goroutine at a time.
	Progress func(Progress)
	// ProgressEvery is how often Progress is called. Default: 1 second.
	ProgressEvery time.Duration
	// Now returns the current time, which decides the idempotency records
	// still in force. Default: time.Now.
	Now func() time.Time
	// MaxTextChars is the most characters of a message's (or revision's)
	// text that Copy accepts from its source: set it to the destination's
	// messaging.Options.MaxMessageChars when that is above the default.
	// Default: 4000, messaging's default.
	MaxTextChars int
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 1000
	}
	if c.FileWorkers <= 0 {
		c.FileWorkers = 8
	}
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxTextChars <= 0 {
		c.MaxTextChars = 4000
	}
	return c
}

// Stage is a step of a copy.
type Stage string

// The stages of a copy, in order; Verify has the last only.
const (
	StageRows   Stage = "rows"
	StageFiles  Stage = "files"
	StageVerify Stage = "verify"
)

// Progress is how far a copy or a verification has come.
type Progress struct {
	// Stage is the stage under way.
	Stage Stage
	// Kind is the kind of rows being copied or compared.
	Kind Kind
	// Rows is the number of rows copied (or compared) so far, of
	// RowsTotal.
	Rows, RowsTotal int64
	// Files is the number of files copied, found in place, or hashed so
	// far, of FilesTotal; Bytes is the number of bytes they hold.
	Files, FilesTotal int64
	Bytes             int64
	// Elapsed is the time since the start of the stage.
	Elapsed time.Duration
	// Done is true in the last call of a stage.
	Done bool
}

// Report says what a copy or a verification did.
type Report struct {
	// Rows counts the rows of each kind in the source's snapshot
	// (idempotency records: those in force).
	Rows map[Kind]int64
	// Files is the number of files, one per attachment row; Copied of
	// them were copied and the others found in place, whole.
	Files, Copied int64
	// Bytes is the number of bytes copied.
	Bytes int64
	// Verified is true when every row and file of the destination was
	// found equal to the source's.
	Verified bool
	// Took is how long the work took: RowsTook to copy the rows,
	// FilesTook the files, VerifyTook to verify.
	Took, RowsTook, FilesTook, VerifyTook time.Duration
}

// ErrMismatch is matched by the error of a verification that found the
// destination different from its source: errors.Is(err, ErrMismatch). The
// error is a *MismatchError.
var ErrMismatch = errors.New("storecopy: the destination differs from its source")

// MismatchError names the differences a verification found, up to 20
// of them, and counts the rows of each side that differ in number.
type MismatchError struct {
	// Differences describe, one per line, what differs.
	Differences []string
}

// Error lists the differences, one per line.
func (e *MismatchError) Error() string {
	return "the destination differs from its source:\n  " + strings.Join(e.Differences, "\n  ")
}

// Is reports whether target is ErrMismatch.
func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }

// Copy copies every row of src, and every file of its attachments from
// srcFiles, to dst and dstFiles, then verifies the copy (see Verify). The
// files may be nil together, to copy the rows only.
//
// The rows are those of one snapshot of src (see Source), read in
// batches and loaded in batches, each batch in one transaction of dst:
// memory stays bounded whatever the size. Copy never writes to src.
//
// dst gets an installation id of its own (see CopyID), never src's, and,
// with the files, is handed src's: Copy writes a handover object in
// dstFiles (under attachments.HandoverPrefix) naming both databases and
// the key prefixes of src's files. Into another bucket the handover is
// exclusive: the files are dst's. Into src's own bucket (a database-only
// move) it is shared: both databases serve the files they both name, and
// neither deletes or moves one aside; src makes its new files under a
// new prefix, dst under its own, and each reconciles its own prefix only.
// An unclaimed bucket without files, when srcFiles is one too, cannot be
// told from src's own (a source without files that never claimed its
// bucket): Copy takes it for src's, hands over shared and claims nothing,
// since src may still use it (the server that starts first over it claims
// it, and the other shares it).
// The shared handover is written before the first row is copied, so that
// src, if it is live, deletes none of the files that the copy's rows
// name; a copy that then fails (a refused row, an error, its context
// ended) removes the handover it wrote, and src deletes its own files
// again. A copy killed outright leaves it until it is run again.
//
// Copy is resumable and idempotent: a row or file that dst holds already
// is skipped (a file when its SHA-256 is its row's), so a copy that was
// interrupted finishes when run again, and a copy run again on a finished
// copy changes nothing. It refuses a destination that holds rows of
// another store (an installation not made by CopyID(src): src itself, or a
// restore of it, neither), those it would not copy included (see
// Sink.Uncopied), or a bucket claimed
// by another database, or unclaimed and holding files none of which is
// src's (as attachments.Service.Claim decides; src's own bucket is
// welcome, and its files are found in place): the error matches
// messaging.ErrConflict and says what the destination holds.
//
// Copy validates every row of src as the API validates input (ids and
// names of at most 256 bytes of UTF-8, texts within
// Options.MaxTextChars, attachment keys that the source made or was
// handed, see attachments.KeyPrefix) and refuses the first bad row, by
// its kind and id, with an error matching messaging.ErrInvalid. A src
// whose installation id is none that package attachments takes (1 to 64
// ASCII letters, digits, '_' or '-') is refused so too, before anything
// is written.
//
// A verification that finds differences returns a *MismatchError
// (errors.Is(err, ErrMismatch)). A file of a row that srcFiles does not
// hold, or whose bytes are not its row's, is such a difference.
//
// The Driver of dst must be a Sink, and that of src a Source; if not, Copy
// fails with an error matching messaging.ErrUnimplemented.
func Copy(ctx context.Context, dst messaging.Storage, dstFiles attachments.BlobStore, src messaging.Storage, srcFiles attachments.BlobStore, opts *Options) (rep Report, err error) {
	sink, source, err := ends(dst, src)
	if err != nil {
		return Report{}, err
	}
	o := opts.withDefaults()
	start := time.Now()
	rep = Report{Rows: map[Kind]int64{}}
	if (dstFiles == nil) != (srcFiles == nil) {
		return rep, &messaging.Error{Kind: messaging.ErrInvalid, Op: "storecopy.Copy", Message: "give both blob stores, or neither"}
	}
	snap, err := source.Snapshot(ctx)
	if err != nil {
		return rep, fmt.Errorf("storecopy: open the source's snapshot: %w", err)
	}
	defer snap.Close()
	cut := o.Now()
	in, err := snap.Installation(ctx)
	if err != nil {
		return rep, fmt.Errorf("storecopy: read the source's installation: %w", err)
	}
	if !claim.ValidInstallationID(in.ID) {
		return rep, &messaging.Error{Kind: messaging.ErrInvalid, Op: "storecopy.Copy", Message: fmt.Sprintf(
			"the source's installation id %q is not 1 to 64 letters, digits, '_' or '-': no Parley serves the files of such a database, and a copy names the source's files by it; nothing was copied",
			in.ID)}
	}
	undo, err := prepare(ctx, sink, dstFiles, srcFiles, snap, in, o.BatchSize, cut)
	if err != nil {
		return rep, err
	}
	if undo != nil {
		defer func() {
			if err != nil {
				err = errors.Join(err, undo())
			}
		}()
	}
	rules := &rowRules{maxText: o.MaxTextChars, rights: claim.RightsOf(nil, attachments.KeyPrefix, in.ID), noBucket: srcFiles == nil}
	if srcFiles != nil {
		hs, err := claim.LoadHandovers(ctx, srcFiles)
		if err != nil {
			return rep, fmt.Errorf("storecopy: read the source bucket's handovers: %w", err)
		}
		rules.rights = claim.RightsOf(hs, attachments.KeyPrefix, in.ID)
	}
	for _, k := range Kinds() {
		if err := copyRows(ctx, k, sink, snap, &o, cut, rules); err != nil {
			return rep, err
		}
	}
	rep.RowsTook = time.Since(start)
	var diffs []string
	if srcFiles != nil {
		var err error
		if diffs, err = copyFiles(ctx, dstFiles, snap, srcFiles, &o, &rep); err != nil {
			return rep, err
		}
	}
	rep.FilesTook = time.Since(start) - rep.RowsTook
	err = verify(ctx, sink, dstFiles, snap, nil, &o, cut, &rep, diffs)
	rep.Took = time.Since(start)
	rep.VerifyTook = rep.Took - rep.RowsTook - rep.FilesTook
	return rep, err
}

// Verify compares dst with src, the destination of a copy with its
// source: every row of every kind, field by field (reactions by their
// order, not their sequence numbers), and the SHA-256 of the file of every
// attachment row in both blob stores (which may be nil together, to
// compare the rows only). It changes nothing. Differences are reported as
// a *MismatchError (errors.Is(err, ErrMismatch)); other errors are those
// of reading either side.
func Verify(ctx context.Context, dst messaging.Storage, dstFiles attachments.BlobStore, src messaging.Storage, srcFiles attachments.BlobStore, opts *Options) (Report, error) {
	sink, source, err := ends(dst, src)
	if err != nil {
		return Report{}, err
	}
	o := opts.withDefaults()
	start := time.Now()
	rep := Report{Rows: map[Kind]int64{}}
	snap, err := source.Snapshot(ctx)
	if err != nil {
		return rep, fmt.Errorf("storecopy: open the source's snapshot: %w", err)
	}
	defer snap.Close()
	if dstFiles == nil {
		srcFiles = nil
	}
	err = verify(ctx, sink, dstFiles, snap, srcFiles, &o, o.Now(), &rep, nil)
	rep.Took = time.Since(start)
	rep.VerifyTook = rep.Took
	return rep, err
}

// prepare checks that dst (and dstFiles) may receive a copy of src, the
// snapshot of the store whose installation is in, gives dst an identity of
// its own (see CopyID), and, with the files, hands it the source's files
// (see handOver). It returns, when it wrote a shared handover, the
// function that removes it, for a copy that fails.
func prepare(ctx context.Context, dst Sink, dstFiles, srcFiles attachments.BlobStore, src Snapshot, in Installation, batch int, now time.Time) (undo func() error, err error) {
	snap, err := dst.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("storecopy: open the destination: %w", err)
	}
	defer snap.Close()
	have, err := snap.Installation(ctx)
	if err != nil {
		return nil, fmt.Errorf("storecopy: read the destination's installation: %w", err)
	}
	// A destination of the source's own id (the source itself, or a
	// restore of its backup) is no copy to resume: it is refused if it
	// holds rows, and given an id of its own if not.
	resume := IsCopyOf(have.ID, in.ID)
	if !resume {
		var held []string
		for _, k := range Kinds() {
			n, err := snap.Count(ctx, k)
			if err != nil {
				return nil, fmt.Errorf("storecopy: count the destination's %s: %w", k, err)
			}
			if n > 0 {
				held = append(held, fmt.Sprintf("%d %s", n, k))
			}
		}
		more, err := dst.Uncopied(ctx)
		if err != nil {
			return nil, fmt.Errorf("storecopy: count the destination's rows: %w", err)
		}
		for _, k := range slices.Sorted(maps.Keys(more)) {
			if more[k] > 0 {
				held = append(held, fmt.Sprintf("%d %s", more[k], k))
			}
		}
		if len(held) > 0 && have.ID == in.ID {
			return nil, &messaging.Error{Kind: messaging.ErrConflict, Op: "storecopy.Copy", Message: fmt.Sprintf(
				"the destination database has the source's own installation id %s, so it is the source itself or a restore of it: %s; copy into an empty database",
				in.ID, strings.Join(held, ", "))}
		}
		if len(held) > 0 {
			return nil, &messaging.Error{Kind: messaging.ErrConflict, Op: "storecopy.Copy", Message: fmt.Sprintf(
				"the destination database holds another store's data (installation %s, not a copy of the source's %s): %s; copy into an empty database",
				have.ID, in.ID, strings.Join(held, ", "))}
		}
		have = Installation{ID: CopyID(in.ID)}
	}
	var shared bool
	if dstFiles != nil {
		if shared, err = checkBucket(ctx, dstFiles, srcFiles, src, in, have.ID, resume, batch); err != nil {
			return nil, err
		}
	}
	if !resume {
		if err := dst.SetInstallation(ctx, have); err != nil {
			return nil, fmt.Errorf("storecopy: set the destination's installation: %w", err)
		}
	}
	if dstFiles != nil && have.ID != in.ID {
		return handOver(ctx, dstFiles, srcFiles, in.ID, have.ID, shared, now)
	}
	return nil, nil
}

// CopyID returns a new installation id for a copy of the database whose
// installation id is src: "ins_", 16 hex digits of the SHA-256 of src, "_"
// and a new id's random part. A copy never takes its source's id: two
// databases of one id over one bucket would each take the other's new
// files for orphans. The id names its source (see IsCopyOf), so that a
// copy resumes into the database it began.
func CopyID(src string) string {
	return copyIDPrefix(src) + strings.TrimPrefix(ids.New("x"), "x")
}

// IsCopyOf reports whether id was made by CopyID(src): it begins as
// CopyID(src) does, and is an installation id that package attachments
// takes.
func IsCopyOf(id, src string) bool {
	return src != "" && strings.HasPrefix(id, copyIDPrefix(src)) && claim.ValidInstallationID(id)
}

func copyIDPrefix(src string) string {
	sum := sha256.Sum256([]byte(src))
	return "ins_" + hex.EncodeToString(sum[:8]) + "_"
}

// copyRows copies the rows of kind k: a goroutine reads the source's
// batches while the caller's loads the one before.
func copyRows(ctx context.Context, k Kind, dst Sink, snap Snapshot, o *Options, cut time.Time, rules *rowRules) error {
	total, err := snap.Count(ctx, k)
	if err != nil {
		return fmt.Errorf("storecopy: count the source's %s: %w", k, err)
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan *Batch, 1)
	var readErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(batches)
		for b, err := range snap.Rows(ctx, k, o.BatchSize) {
			if err != nil {
				readErr = fmt.Errorf("storecopy: read the source's %s: %w", k, err)
				return
			}
			if k == IdempotencyKeys {
				b.IdempotencyKeys = inForce(b.IdempotencyKeys, cut)
			}
			if err := validate(b, rules); err != nil {
				readErr = err
				return
			}
			select {
			case batches <- b:
			case <-ctx.Done():
				return
			}
		}
	})
	p := newProgress(o, StageRows, k)
	p.RowsTotal = total
	var loadErr error
	for b := range batches {
		if loadErr != nil {
			continue // drain
		}
		if b.Len() == 0 {
			continue
		}
		if err := dst.Load(ctx, b); err != nil {
			loadErr = fmt.Errorf("storecopy: load %s: %w", k, err)
			cancel()
			continue
		}
		p.Rows += int64(b.Len())
		p.tick(false)
	}
	wg.Wait()
	if err := parent.Err(); err != nil {
		// The caller's: say so, whatever the driver made of it.
		return fmt.Errorf("storecopy: copy %s: %w", k, err)
	}
	if loadErr != nil {
		return loadErr
	}
	if readErr != nil {
		return readErr
	}
	p.tick(true)
	return nil
}

// inForce returns the records of rs that expire after cut.
func inForce(rs []driver.IdempotencyRecord, cut time.Time) []driver.IdempotencyRecord {
	out := rs[:0]
	for _, r := range rs {
		if r.ExpiresAt.After(cut) {
			out = append(out, r)
		}
	}
	return out
}

// verify compares dst with snap (rows, and dst's files against their rows
// and, when srcFiles is set, srcFiles's), adding earlier to the
// differences.
func verify(ctx context.Context, dst Sink, dstFiles attachments.BlobStore, snap Snapshot, srcFiles attachments.BlobStore, o *Options, cut time.Time, rep *Report, earlier []string) error {
	dsnap, err := dst.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("storecopy: open the destination's snapshot: %w", err)
	}
	defer dsnap.Close()
	diffs := earlier
	for _, k := range Kinds() {
		p := newProgress(o, StageVerify, k)
		nSrc, nDst, d, err := compareRows(ctx, k, snap, dsnap, o.BatchSize, cut)
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("storecopy: verify: %w", cerr)
		}
		if err != nil {
			return fmt.Errorf("storecopy: verify: %w", err)
		}
		rep.Rows[k] = nSrc
		if nSrc != nDst {
			diffs = addDiff(diffs, fmt.Sprintf("%s: %d in the source, %d in the destination", k, nSrc, nDst))
		}
		for _, x := range d {
			diffs = addDiff(diffs, x)
		}
		p.Rows, p.RowsTotal = nSrc, nSrc
		p.tick(true)
	}
	if dstFiles != nil {
		d, err := verifyFiles(ctx, dstFiles, snap, srcFiles, o, rep)
		if err != nil {
			return err
		}
		for _, x := range d {
			diffs = addDiff(diffs, x)
		}
	}
	if len(diffs) > 0 {
		return &MismatchError{Differences: diffs}
	}
	rep.Verified = true
	return nil
}

// progress calls Options.Progress at most every ProgressEvery.
type progress struct {
	Progress
	o     *Options
	start time.Time
	last  time.Time
}

func newProgress(o *Options, s Stage, k Kind) *progress {
	now := time.Now()
	return &progress{Progress: Progress{Stage: s, Kind: k}, o: o, start: now, last: now}
}

func (p *progress) tick(done bool) {
	if p.o.Progress == nil {
		return
	}
	now := time.Now()
	if !done && now.Sub(p.last) < p.o.ProgressEvery {
		return
	}
	p.last = now
	p.Elapsed, p.Done = now.Sub(p.start), done
	p.o.Progress(p.Progress)
}

// ends returns the Sink of dst and the Source of src: the contracts of a
// copy, which a backend implements beside driver.Store.
func ends(dst, src messaging.Storage) (Sink, Source, error) {
	sink, ok := dst.Driver().(Sink)
	if !ok {
		return nil, nil, &messaging.Error{Kind: messaging.ErrUnimplemented, Op: "storecopy", Message: fmt.Sprintf("the destination's backend (%T) cannot receive a copy", dst)}
	}
	source, ok := src.Driver().(Source)
	if !ok {
		return nil, nil, &messaging.Error{Kind: messaging.ErrUnimplemented, Op: "storecopy", Message: fmt.Sprintf("the source's backend (%T) cannot be copied", src)}
	}
	return sink, source, nil
}
