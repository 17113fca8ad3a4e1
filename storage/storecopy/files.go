package storecopy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/claim"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// checkBucket checks that dstFiles may receive the files of src, the
// snapshot of the store whose installation is in, for the destination
// database whose installation is to: it is not claimed by another
// database than in (or to, when the copy resumes), and, unless the bucket
// is claimed, it holds no file under attachments.KeyPrefix or, as
// attachments.Service.Claim decides, files of which at least one (of a
// sample of 1,000) is under in's own prefix or named by a row of src: the
// source's own bucket, or a copy of it; or, when the copy resumes, under
// to's own prefix. A resumed copy that put files in an unclaimed bucket
// put them in the source's (a database-only move): an exclusive copy
// claims its bucket before its first file. shared is true when the bucket
// is the source's (claimed by it, or holding its files), or may be: an
// unclaimed bucket without files, when srcFiles is one too (see bare), is
// one the copy cannot tell from the source's. The source may go on using
// it.
func checkBucket(ctx context.Context, dstFiles, srcFiles attachments.BlobStore, src Snapshot, in Installation, to string, resume bool, batch int) (shared bool, err error) {
	claim, found, err := readClaim(ctx, dstFiles)
	if err != nil {
		return false, fmt.Errorf("storecopy: read the destination bucket's claim: %w", err)
	}
	if found && claim != in.ID && (claim != to || !resume) {
		if ok, err := sharesWith(ctx, dstFiles, in.ID, claim); err != nil || ok {
			return ok, err // the source's own bucket, claimed by the database it shares it with
		}
		return false, &messaging.Error{Kind: messaging.ErrConflict, Op: "storecopy.Copy", Message: fmt.Sprintf(
			"the destination bucket belongs to another Parley database (installation %s, not the source's %s): copy into an empty bucket or folder",
			claim, in.ID)}
	}
	if found {
		return claim == in.ID, nil
	}
	lister, ok := dstFiles.(driver.Lister)
	if !ok {
		return false, nil
	}
	sample := map[string]struct{}{}
	errEnough := errors.New("enough")
	err = lister.List(ctx, attachments.KeyPrefix, func(o driver.Object) error {
		sample[o.Key] = struct{}{}
		if len(sample) == 1000 {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return false, fmt.Errorf("storecopy: list the destination bucket: %w", err)
	}
	if len(sample) == 0 {
		return bare(ctx, srcFiles)
	}
	own := attachments.KeyPrefix + in.ID + "/"
	for k := range sample {
		if strings.HasPrefix(k, own) {
			return true, nil
		}
	}
	for b, err := range src.Rows(ctx, Attachments, batch) {
		if err != nil {
			return false, fmt.Errorf("storecopy: read the source's attachments: %w", err)
		}
		for _, a := range b.Attachments {
			if _, ok := sample[a.Key]; ok {
				return true, nil
			}
		}
	}
	if resume {
		mine := attachments.KeyPrefix + to + "/"
		for k := range sample {
			if strings.HasPrefix(k, mine) {
				return false, nil // the copy's own new files
			}
		}
	}
	keys := slices.Sorted(maps.Keys(sample))
	more := ""
	if len(sample) == 1000 {
		more = " or more"
	}
	return false, &messaging.Error{Kind: messaging.ErrConflict, Op: "storecopy.Copy", Message: fmt.Sprintf(
		"the destination bucket holds %d%s files and none is the source's (such as %s): copy into an empty bucket or folder, or the source's own",
		len(keys), more, keys[0])}
}

// bare reports whether b, the source's bucket, is unclaimed and holds no
// file under attachments.KeyPrefix (or cannot be listed).
func bare(ctx context.Context, b attachments.BlobStore) (bool, error) {
	_, _, found, err := claim.Load(ctx, b)
	if found || errors.Is(err, claim.ErrMalformed) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("storecopy: read the source bucket's claim: %w", err)
	}
	l, ok := b.(driver.Lister)
	if !ok {
		return true, nil
	}
	err = l.List(ctx, attachments.KeyPrefix, func(driver.Object) error { return errFound })
	if errors.Is(err, errFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("storecopy: list the source bucket: %w", err)
	}
	return true, nil
}

// errFound ends a listing at its first object.
var errFound = errors.New("found")

// sharesWith reports whether a shared handover in b (a database-only
// copy, from or to the installation id) shares b's files between id and
// the installation other, as attachments.Service.Claim decides: a bucket
// that id serves although other claimed it.
func sharesWith(ctx context.Context, b attachments.BlobStore, id, other string) (bool, error) {
	hs, err := claim.LoadHandovers(ctx, b)
	if err != nil {
		return false, fmt.Errorf("storecopy: read the destination bucket's handovers: %w", err)
	}
	return slices.Contains(claim.RightsOf(hs, attachments.KeyPrefix, id).SharedWith, other), nil
}

// readClaim returns the installation id that the claim of the bucket
// names, if it has a claim.
func readClaim(ctx context.Context, b attachments.BlobStore) (string, bool, error) {
	c, _, found, err := claim.Load(ctx, b)
	if errors.Is(err, claim.ErrMalformed) {
		return "", false, &messaging.Error{Kind: messaging.ErrConflict, Op: "storecopy.Copy",
			Message: "the destination bucket's claim " + attachments.ClaimKey + " cannot be read", Err: err}
	}
	return c.Installation, found, err
}

// handOver writes the handover of the source's files (installation from,
// its files in srcFiles) to the copy (installation to) in dstFiles, unless
// it is there: the prefixes of the files the source made or was handed.
// A shared handover (dstFiles is the source's bucket) freezes them for
// both; an exclusive one makes them the copy's, and the copy claims
// dstFiles, unless it is claimed.
//
// A shared handover is written before the first row is copied, so that a
// live source deletes none of the files the copy's rows name (writing it
// after the rows were checked would leave them to the source for as long
// as the rows take to copy). When handOver wrote one, it returns the
// function that removes it again: a copy that fails does, so that the
// source, whose files it froze, deletes its own files again.
func handOver(ctx context.Context, dstFiles, srcFiles attachments.BlobStore, from, to string, shared bool, now time.Time) (undo func() error, err error) {
	key := claim.HandoverKey(from, to)
	if r, err := dstFiles.Open(ctx, key); err == nil {
		_ = r.Close()
		return nil, nil
	} else if !errors.Is(err, messaging.ErrNotFound) {
		return nil, fmt.Errorf("storecopy: read the handover %s: %w", key, err)
	}
	hs, err := claim.LoadHandovers(ctx, srcFiles)
	if err != nil {
		return nil, fmt.Errorf("storecopy: read the source bucket's handovers: %w", err)
	}
	h := claim.Handover{Note: claim.HandoverNote, From: from, To: to, Shared: shared, At: now.UTC(),
		Prefixes: claim.RightsOf(hs, attachments.KeyPrefix, from).Served}
	data, err := h.Marshal()
	if err != nil {
		return nil, err
	}
	if !shared {
		if _, found, err := readClaim(ctx, dstFiles); err != nil {
			return nil, fmt.Errorf("storecopy: read the destination bucket's claim: %w", err)
		} else if !found {
			c, err := claim.Doc{Note: claim.Note, Installation: to, ClaimedAt: now.UTC()}.Marshal()
			if err != nil {
				return nil, err
			}
			if err := dstFiles.Put(ctx, attachments.ClaimKey, "application/json", bytes.NewReader(c)); err != nil {
				return nil, fmt.Errorf("storecopy: write the destination bucket's claim: %w", err)
			}
		}
	}
	if err := dstFiles.Put(ctx, key, "application/json", bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("storecopy: write the handover %s: %w", key, err)
	}
	if !shared {
		return nil, nil // the copy's bucket, not the source's
	}
	return func() error {
		// Also when the caller's context ended: an interrupted copy gives
		// the source its files back too.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
		defer cancel()
		if err := dstFiles.Delete(ctx, key); err != nil && !errors.Is(err, messaging.ErrNotFound) {
			return fmt.Errorf("storecopy: remove the handover %s that the failed copy wrote, which keeps the source from deleting its own files (run the copy again to finish it, or delete the object): %w", key, err)
		}
		return nil
	}, nil
}

// undoTimeout bounds the removal of the handover of a copy that failed.
const undoTimeout = 30 * time.Second

// fileResult is what was done with the file of one attachment row.
type fileResult struct {
	copied bool
	bytes  int64
	diff   string // a difference found, or ""
	err    error  // an error that ends the work
}

// eachFile runs fn on the attachment rows of snap, o.FileWorkers at a
// time, and adds their results to rep; it returns the differences found.
func eachFile(ctx context.Context, snap Snapshot, o *Options, stage Stage, rep *Report, fn func(ctx context.Context, a messaging.Attachment) fileResult) ([]string, error) {
	total, err := snap.Count(ctx, Attachments)
	if err != nil {
		return nil, fmt.Errorf("storecopy: count the source's attachments: %w", err)
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan messaging.Attachment, o.FileWorkers)
	results := make(chan fileResult, o.FileWorkers)
	var readErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(jobs)
		for b, err := range snap.Rows(ctx, Attachments, o.BatchSize) {
			if err != nil {
				readErr = fmt.Errorf("storecopy: read the source's attachments: %w", err)
				return
			}
			for _, a := range b.Attachments {
				select {
				case jobs <- a:
				case <-ctx.Done():
					return
				}
			}
		}
	})
	var workers sync.WaitGroup
	for range o.FileWorkers {
		workers.Go(func() {
			for a := range jobs {
				results <- fn(ctx, a)
			}
		})
	}
	go func() { workers.Wait(); close(results) }()
	p := newProgress(o, stage, Attachments)
	p.FilesTotal = total
	var diffs []string
	var firstErr error
	for r := range results {
		if r.err != nil && firstErr == nil {
			firstErr = r.err
			cancel()
		}
		if r.diff != "" {
			diffs = addDiff(diffs, r.diff)
		}
		p.Files++
		p.Bytes += r.bytes
		if stage == StageFiles {
			rep.Files++
			if r.copied {
				rep.Copied++
				rep.Bytes += r.bytes
			}
		}
		p.tick(false)
	}
	wg.Wait()
	if err := parent.Err(); err != nil {
		return diffs, fmt.Errorf("storecopy: %s: %w", stage, err)
	}
	if firstErr != nil {
		return diffs, firstErr
	}
	if readErr != nil {
		return diffs, readErr
	}
	p.tick(true)
	return diffs, nil
}

// copyFiles copies the file of every attachment row of snap that dstFiles
// does not hold whole, and the previews of images that the source holds
// (attachments.PreviewKey) and dstFiles does not.
func copyFiles(ctx context.Context, dstFiles attachments.BlobStore, snap Snapshot, srcFiles attachments.BlobStore, o *Options, rep *Report) ([]string, error) {
	return eachFile(ctx, snap, o, StageFiles, rep, func(ctx context.Context, a messaging.Attachment) fileResult {
		if err := copyPreviews(ctx, dstFiles, srcFiles, a); err != nil {
			return fileResult{err: err}
		}
		sum, n, err := hashObject(ctx, dstFiles, a.Key)
		switch {
		case err == nil && sum == a.SHA256 && n == a.FileSize:
			return fileResult{bytes: n} // in place
		case err != nil && !errors.Is(err, messaging.ErrNotFound):
			return fileResult{err: fmt.Errorf("storecopy: read the destination's file %s: %w", a.Key, err)}
		}
		r, err := srcFiles.Open(ctx, a.Key)
		if errors.Is(err, messaging.ErrNotFound) {
			return fileResult{diff: fmt.Sprintf("files: the file of attachment %q (%s) is missing from the source bucket", a.ID, a.Key)}
		}
		if err != nil {
			return fileResult{err: fmt.Errorf("storecopy: open the source's file %s: %w", a.Key, err)}
		}
		defer r.Close()
		h := sha256.New()
		cr := &countReader{r: io.TeeReader(r, h)}
		if err := dstFiles.Put(ctx, a.Key, a.FileType, cr); err != nil {
			return fileResult{err: fmt.Errorf("storecopy: write the destination's file %s: %w", a.Key, err)}
		}
		res := fileResult{copied: true, bytes: cr.n}
		if got := hex.EncodeToString(h.Sum(nil)); got != a.SHA256 {
			res.diff = fmt.Sprintf("files: the source's file of attachment %q (%s) has SHA-256 %s, its row says %s", a.ID, a.Key, got, a.SHA256)
		}
		return res
	})
}

// copyPreviews copies the previews of an image attachment that srcFiles
// holds and dstFiles does not. A preview is made again when it is missing,
// so one that is not in the source is no difference.
func copyPreviews(ctx context.Context, dstFiles, srcFiles attachments.BlobStore, a messaging.Attachment) error {
	if a.ImageWidth <= 0 {
		return nil
	}
	for _, size := range attachments.PreviewSizes {
		key := attachments.PreviewKey(a.Key, size)
		if r, err := dstFiles.Open(ctx, key); err == nil {
			_ = r.Close()
			continue
		} else if !errors.Is(err, messaging.ErrNotFound) {
			return fmt.Errorf("storecopy: read the destination's preview %s: %w", key, err)
		}
		r, err := srcFiles.Open(ctx, key)
		if errors.Is(err, messaging.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("storecopy: open the source's preview %s: %w", key, err)
		}
		br := bufio.NewReader(r)
		head, _ := br.Peek(512)
		err = dstFiles.Put(ctx, key, http.DetectContentType(head), br)
		_ = r.Close()
		if err != nil {
			return fmt.Errorf("storecopy: write the destination's preview %s: %w", key, err)
		}
	}
	return nil
}

// verifyFiles checks the file of every attachment row of snap in dstFiles,
// and in srcFiles when it is set, against the row's SHA-256 and size.
func verifyFiles(ctx context.Context, dstFiles attachments.BlobStore, snap Snapshot, srcFiles attachments.BlobStore, o *Options, rep *Report) ([]string, error) {
	var files int64
	var mu sync.Mutex
	diffs, err := eachFile(ctx, snap, o, StageVerify, rep, func(ctx context.Context, a messaging.Attachment) fileResult {
		mu.Lock()
		files++
		mu.Unlock()
		var res fileResult
		for _, side := range []struct {
			name  string
			files attachments.BlobStore
		}{{"destination", dstFiles}, {"source", srcFiles}} {
			if side.files == nil {
				continue
			}
			sum, n, err := hashObject(ctx, side.files, a.Key)
			res.bytes += n
			switch {
			case errors.Is(err, messaging.ErrNotFound):
				res.diff = fmt.Sprintf("files: the file of attachment %q (%s) is missing from the %s bucket", a.ID, a.Key, side.name)
			case err != nil:
				res.err = fmt.Errorf("storecopy: read the %s's file %s: %w", side.name, a.Key, err)
			case sum != a.SHA256 || n != a.FileSize:
				res.diff = fmt.Sprintf("files: the %s's file of attachment %q (%s) has SHA-256 %s and %d bytes, its row says %s and %d",
					side.name, a.ID, a.Key, sum, n, a.SHA256, a.FileSize)
			default:
				continue
			}
			return res
		}
		return res
	})
	if rep.Files == 0 {
		rep.Files = files
	}
	return diffs, err
}

// hashObject returns the hex SHA-256 and the size of the object key.
func hashObject(ctx context.Context, b attachments.BlobStore, key string) (string, int64, error) {
	r, err := b.Open(ctx, key)
	if err != nil {
		return "", 0, err
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return "", n, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
