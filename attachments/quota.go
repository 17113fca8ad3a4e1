package attachments

import (
	"context"
	"strconv"
	"sync"

	"github.com/parleychat/parley/messaging/driver"
)

// CodeQuotaExceeded is the Code of the ErrTooLarge error of an upload that
// would take its caller's files beyond Options.UploadQuota.
const CodeQuotaExceeded = "upload_quota_exceeded"

// quotaExceeded is the error of an upload beyond the caller's quota, which
// held used bytes when it began.
func (s *Service) quotaExceeded(used int64) error {
	q := s.opts.UploadQuota
	return &driver.Error{Kind: driver.ErrTooLarge, Code: CodeQuotaExceeded, Param: "file",
		Message: "this upload would take your files beyond your quota of " + strconv.FormatInt(q, 10) +
			" bytes (" + strconv.FormatInt(min(used, q), 10) + " in use): delete files to make room"}
}

// uploads counts, per caller, the bytes of the uploads under way in this
// process, so that concurrent uploads of one caller cannot together pass
// its quota: each checks, as its bytes arrive, what the repository held
// when it began (driver.AttachmentStore.UploadedBytes), plus the bytes every upload of
// the caller under way here has read so far, plus those of the uploads
// here that were stored after it began (which what it read at its start
// may not hold). Within one process the quota is never passed. Uploads
// under way on other instances are not seen: over I instances a caller
// can pass its quota by at most (I-1) times what was left of it, each
// instance's uploads being bounded by that.
type uploads struct {
	mu      sync.Mutex
	callers map[string]*callerUploads
}

// callerUploads are one caller's uploads under way in this process.
type callerUploads struct {
	seq    uint64           // counts the uploads stored
	open   map[*upload]bool // the uploads under way
	stored []storedUpload   // the uploads stored since the oldest open one began
}

type storedUpload struct {
	seq uint64
	n   int64
}

// upload is one upload under way, with its share of its caller's quota.
type upload struct {
	u      *uploads
	caller string
	c      *callerUploads
	quota  int64
	begun  uint64 // c.seq when it began
	used   int64  // the caller's stored bytes, read after it began
	n      int64  // bytes read so far
}

// begin registers an upload of caller; used must then be set, from the
// repository, before any byte is read.
func (u *uploads) begin(caller string, quota int64) *upload {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.callers == nil {
		u.callers = map[string]*callerUploads{}
	}
	c := u.callers[caller]
	if c == nil {
		c = &callerUploads{open: map[*upload]bool{}}
		u.callers[caller] = c
	}
	up := &upload{u: u, caller: caller, c: c, quota: quota, begun: c.seq}
	c.open[up] = true
	return up
}

// inUse is the caller's bytes as up sees them; u.mu is held.
func (up *upload) inUse() int64 {
	total := up.used
	for o := range up.c.open {
		total += o.n
	}
	for _, st := range up.c.stored {
		if st.seq > up.begun {
			total += st.n
		}
	}
	return total
}

// full reports whether the caller has no room left, before any byte is
// read, and the bytes in use.
func (up *upload) full() (bool, int64) {
	up.u.mu.Lock()
	defer up.u.mu.Unlock()
	n := up.inUse()
	return n >= up.quota, n
}

// add counts n more bytes read, and reports whether they fit. When they
// do not, the upload fails and stores nothing: its bytes count no more.
func (up *upload) add(n int64) bool {
	up.u.mu.Lock()
	defer up.u.mu.Unlock()
	up.n += n
	if up.inUse() > up.quota {
		up.n = 0
		return false
	}
	return true
}

// end unregisters the upload; stored tells whether its row was (or may
// have been) written, so that the uploads that began before it count its
// bytes.
func (up *upload) end(stored bool) {
	up.u.mu.Lock()
	defer up.u.mu.Unlock()
	c := up.c
	delete(c.open, up)
	if stored && len(c.open) > 0 {
		c.seq++
		c.stored = append(c.stored, storedUpload{seq: c.seq, n: up.n})
	}
	if len(c.open) == 0 {
		delete(up.u.callers, up.caller)
		return
	}
	// Forget what every open upload's start already saw.
	oldest := c.seq
	for o := range c.open {
		oldest = min(oldest, o.begun)
	}
	i := 0
	for i < len(c.stored) && c.stored[i].seq <= oldest {
		i++
	}
	c.stored = c.stored[i:]
}

// beginQuota starts the quota's watch of an upload of caller, or returns
// nil when there is no quota. It fails with the quota's error when the
// caller has no room left, before anything is read.
func (s *Service) beginQuota(ctx context.Context, caller driver.Contact) (*upload, error) {
	if s.opts.UploadQuota <= 0 {
		return nil, nil
	}
	up := s.uploads.begin(caller.ID, s.opts.UploadQuota)
	used, err := s.repo.UploadedBytes(ctx, caller.ID)
	if err != nil {
		up.end(false)
		return nil, err
	}
	up.used = used
	if full, n := up.full(); full {
		up.end(false)
		return nil, s.quotaExceeded(n)
	}
	return up, nil
}
