package attachments

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"iter"
	"log/slog"
	"mime"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/parleychat/parley/internal/check"
	"github.com/parleychat/parley/internal/domain"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/internal/paging"
	"github.com/parleychat/parley/internal/preview"
	"github.com/parleychat/parley/messaging/driver"
)

// KeyPrefix is the prefix of every blob key the Service makes.
const KeyPrefix = "attachments/"

// Options configure a Service. A nil *Options means all defaults.
type Options struct {
	// MaxUploadBytes is the largest file accepted. Default: 25 MiB.
	MaxUploadBytes int64
	// OrphanGrace is how old an object without a row must be before
	// Reconcile removes it, so that uploads under way are left alone.
	// Default: 1 hour.
	OrphanGrace time.Duration
	// FinishTimeout bounds the steps that must finish together once begun
	// (an upload's row and link once its file is stored, the removal of a
	// deleted attachment's file), which run whatever the caller's context
	// does: a client that hangs up cannot cut them half-way. A host that
	// gives requests a deadline sets it no longer than that. Default: 30
	// seconds.
	FinishTimeout time.Duration
	// UploadQuota, when > 0, is the most bytes the files a caller uploaded
	// may hold at once (driver.AttachmentStore.UploadedBytes: the sizes of its
	// attachments that exist, wherever they are linked, and of its upload
	// reservations (Reserve); a deleted file frees its bytes). An upload that would pass it fails with
	// ErrTooLarge, Code CodeQuotaExceeded, and stores nothing: at once,
	// before its file is read, when the caller has no room left, else as
	// soon as its bytes pass what is left. Concurrent uploads of a caller
	// on one instance never pass the quota together; over several
	// instances, they may pass it by at most (instances - 1) times what was
	// left when they began (see uploads in quota.go). Each upload costs
	// one more read of the repository. Default: 0, no quota.
	UploadQuota int64
	// OrphanRetention is how long Reconcile keeps an object it moved aside
	// (under OrphanPrefix) before it deletes it. Default: 30 days.
	OrphanRetention time.Duration
	// UploadExpiry is how long a reservation of a direct upload (Reserve)
	// and its signed URL last; Reconcile removes one not completed by
	// then, and its object. The URL stays valid after Complete, until
	// then, but replaces no stored object (see the package doc).
	// Default: 1 hour.
	UploadExpiry time.Duration
	// MaxImagePixels is the largest width × height of an image that gets
	// previews (Service.Preview); a larger one is refused from its header,
	// before any decoding, and costs no more memory than its header.
	// Default: 50 million.
	MaxImagePixels int64
	// MaxPreviewDecodes is how many images are decoded at once to make
	// previews; more first requests wait their turn. Default:
	// runtime.GOMAXPROCS(0).
	MaxPreviewDecodes int
	// Now returns the current time. Default: time.Now.
	Now func() time.Time
	// Logger receives failures that are not returned to the caller (a blob
	// left for reconciliation). Default: slog.Default().
	Logger *slog.Logger
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.MaxUploadBytes <= 0 {
		c.MaxUploadBytes = 25 << 20
	}
	if c.OrphanGrace <= 0 {
		c.OrphanGrace = time.Hour
	}
	if c.FinishTimeout <= 0 {
		c.FinishTimeout = 30 * time.Second
	}
	if c.OrphanRetention <= 0 {
		c.OrphanRetention = 30 * 24 * time.Hour
	}
	if c.UploadExpiry <= 0 {
		c.UploadExpiry = time.Hour
	}
	if c.MaxImagePixels <= 0 {
		c.MaxImagePixels = preview.DefaultMaxPixels
	}
	if c.MaxPreviewDecodes <= 0 {
		c.MaxPreviewDecodes = runtime.GOMAXPROCS(0)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Service is the attachments API: upload, list, get, open, rename and
// delete files, with validation, limits and ownership rules.
// It is safe for concurrent use.
type Service struct {
	repo    driver.AttachmentStore
	blobs   BlobStore
	m       domain.Messaging // the messaging Service's rules
	msgsAPI domain.Files     // its messages and idempotency keys
	opts    Options
	own     owner   // the database's installation id, once known
	uploads uploads // the uploads under way, per caller, for the quota

	previewer *preview.Maker
	thumbs    singleflight.Group // first requests of previews, by object key
}

// New returns a Service over the given repository and blob store. It is
// for messaging.New, which builds the Service with the messaging Service
// over the same storage (see messaging.Service.Files): files follow its
// conversation Policy and page size limit, an upload can be linked to one
// of its messages at once, and it removes the files of the messages it
// deletes with the FileRemover that New returns.
func New(m domain.Messaging, repo driver.AttachmentStore, blobs BlobStore, opts *Options) (*Service, domain.FileRemover) {
	s := &Service{repo: repo, blobs: blobs, m: m, msgsAPI: m.Files, opts: opts.withDefaults()}
	s.previewer = preview.New(&preview.Options{MaxPixels: s.opts.MaxImagePixels, MaxDecodes: s.opts.MaxPreviewDecodes})
	return s, s.removeFiles
}

// MaxUploadBytes returns the configured upload size limit.
func (s *Service) MaxUploadBytes() int64 { return s.opts.MaxUploadBytes }

// Upload describes a file to add.
type Upload struct {
	// Filename is the uploaded file's name; it is cleaned (see the package
	// documentation).
	Filename string
	// ContentType is the declared MIME type. When empty or
	// application/octet-stream the type is sniffed from the content.
	ContentType string
	// ConversationID optionally files the attachment in a conversation.
	ConversationID string
	// MessageID optionally links the attachment at once to a message of
	// the caller's; the attachment takes the message's conversation (a
	// ConversationID, if given, must be the same).
	MessageID string
	// Body is read to its end; it is never buffered whole.
	Body io.Reader
	// Idempotency, when its Key is set, makes the call safe to retry: a
	// retry with the same key, fields and file bytes (compared by their
	// SHA-256) returns the first call's attachment and stores nothing, not
	// even the file (see messaging's Retries).
	Idempotency driver.Idempotency
}

// Upload streams u.Body into the blob store and records the attachment,
// linked to u.MessageID when given. It fails with ErrInvalid for a bad name
// or conversation, ErrNotFound for a conversation or message the caller may
// not see, ErrPermission for a message of another sender, ErrInvalid
// (param message_id) when that message has its most attachments already
// (checked before u.Body is read, and again when the link is written), and
// ErrTooLarge beyond
// MaxUploadBytes; on any failure no row and no object are left. With an
// idempotency key: ErrInvalid (messaging.CodeKeyReused) for a key first
// used with other fields or bytes, ErrConflict (messaging.CodeKeyInUse)
// while a call with the key is under way.
func (s *Service) Upload(ctx context.Context, caller driver.Contact, u Upload) (driver.Attachment, error) {
	const op = "attachments.Upload"
	a, err := s.upload(ctx, caller, u)
	return a, domain.Wrap(op, err)
}

func (s *Service) upload(ctx context.Context, caller driver.Contact, u Upload) (driver.Attachment, error) {
	name, err := check.Filename("filename", u.Filename)
	if err != nil {
		return driver.Attachment{}, err
	}
	if u.Idempotency.Key != "" {
		return s.uploadKeyed(ctx, caller, u, name)
	}
	return s.store(ctx, caller, u, name, nil)
}

// store stores the upload u, whose file name is name (cleaned): its checks,
// the file, then the row, linked to u.MessageID when given. With a claim of
// an idempotency key (done, whose Fingerprint is that of the fields), the
// row is stored with the record: the fingerprint completed with the file's
// SHA-256, the result the attachment.
func (s *Service) store(ctx context.Context, caller driver.Contact, u Upload, name string, done *driver.IdempotencyRecord) (driver.Attachment, error) {
	if u.MessageID != "" {
		m, err := s.msgsAPI.Get(ctx, caller, u.MessageID)
		if driver.KindOf(err) == driver.ErrNotFound {
			return driver.Attachment{}, noMessage(u.MessageID)
		}
		if err != nil {
			return driver.Attachment{}, err
		}
		if m.Contact.ID != caller.ID {
			return driver.Attachment{}, &driver.Error{Kind: driver.ErrPermission, Param: "message_id", Message: "only the sender may add attachments to a message"}
		}
		if u.ConversationID != "" && u.ConversationID != m.ConversationID {
			return driver.Attachment{}, check.BadParam("conversation_id", "conversation_id differs from the message's conversation")
		}
		if len(m.Attachments) >= s.msgsAPI.MaxAttachments() {
			// Refused before the file is read; Attach checks again, in the
			// transaction that links it.
			return driver.Attachment{}, s.messageFull()
		}
		u.ConversationID = m.ConversationID
	}
	if u.ConversationID != "" {
		if err := check.ConversationID("conversation_id", u.ConversationID); err != nil {
			return driver.Attachment{}, err
		}
		if err := s.mustView(ctx, caller, u.ConversationID); err != nil {
			return driver.Attachment{}, err
		}
	}
	if u.Body == nil {
		return driver.Attachment{}, check.Missing("file")
	}
	// The quota, too, is checked before the file is read.
	quota, err := s.beginQuota(ctx, caller)
	if err != nil {
		return driver.Attachment{}, err
	}
	stored := false
	if quota != nil {
		defer func() { quota.end(stored) }()
	}
	body := bufio.NewReaderSize(u.Body, 512)
	head, err := body.Peek(512)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return driver.Attachment{}, err
	}
	ctype := declaredType(u.ContentType)
	if ctype == "" {
		ctype = http.DetectContentType(head)
	}
	magic := preview.Sniff(head) != "" // an image's, whose size is read once stored

	prefix, err := s.keyPrefix(ctx)
	if err != nil {
		return driver.Attachment{}, err
	}
	now := s.now()
	id := ids.NewAt(ids.Attachment, now)
	a := driver.Attachment{
		ID:             id,
		ConversationID: u.ConversationID,
		UploaderID:     caller.ID,
		Filename:       name,
		FileType:       ctype,
		Key:            prefix + id,
	}
	cr := newCountingReader(body, s.opts.MaxUploadBytes)
	cr.quota = quota
	defer cr.Close()
	if err := s.blobs.Put(ctx, a.Key, ctype, cr); err != nil {
		s.removeBlob(ctx, a.Key) // the store should have left nothing; make sure
		if cr.tooLarge {
			return driver.Attachment{}, s.tooLarge()
		}
		if cr.overQuota {
			return driver.Attachment{}, s.quotaExceeded(quota.used)
		}
		return driver.Attachment{}, err
	}
	// From here the upload's bytes count as stored for the uploads of the
	// caller under way: its row is written, or may be, or it fails and
	// they count its bytes until they end (never too few).
	stored = true
	a.FileSize = cr.n
	a.SHA256 = cr.Sum()
	if magic {
		ictx, cancel := s.finishing(ctx)
		a.ImageWidth, a.ImageHeight = s.imageSize(ictx, a.Key)
		cancel()
	}
	a.CreatedAt = s.now()
	out := a
	if u.MessageID != "" {
		out.MessageID = u.MessageID
	}
	if done != nil {
		done.Fingerprint = s.msgsAPI.Fingerprint(done.Fingerprint, a.SHA256)
		done.Result = []byte(a.ID)
	}

	// The object is stored: its row (and its link) must now be written, or
	// the object removed. These steps finish together, whatever the
	// caller's context does (a client that hangs up), within a deadline of
	// their own.
	fctx, cancel := s.finishing(ctx)
	defer cancel()
	m, err := s.writeRow(fctx, caller, a, u.MessageID, done, "")
	if u.MessageID == "" {
		if err != nil {
			got, ok := s.settleRow(fctx, a, err)
			if !ok {
				return driver.Attachment{}, err
			}
			a = got // the row was written after all
		}
		s.notify()
		return a, nil
	}
	// A linked row is written in one transaction with the link (and the
	// record): a failure leaves neither.
	if err != nil {
		if got, ok := s.settleRow(fctx, a, err); ok {
			return got, nil // stored, linked, after all
		}
		if driver.KindOf(err) == driver.ErrNotFound {
			return driver.Attachment{}, noMessage(u.MessageID)
		}
		if errors.Is(err, domain.ErrMessageFull) {
			return driver.Attachment{}, s.messageFull() // filled meanwhile
		}
		return driver.Attachment{}, err
	}
	if done == nil {
		for _, got := range m.Attachments {
			if got.ID == a.ID {
				return got, nil
			}
		}
	}
	return out, nil
}

// uploadKeyed is upload with an idempotency key (see Upload.Idempotency).
// The key is claimed in the store before the file is read, since an upload
// is long: a retry while the first is under way, on any instance, is
// refused before its file is read; a retry of an upload that is done reads
// the file only to hash it, and stores no object.
func (s *Service) uploadKeyed(ctx context.Context, caller driver.Contact, u Upload, name string) (driver.Attachment, error) {
	idem := u.Idempotency
	if err := check.IdempotencyKey("idempotency_key", idem.Key); err != nil {
		return driver.Attachment{}, err
	}
	if u.Body == nil {
		return driver.Attachment{}, check.Missing("file")
	}
	release, err := s.msgsAPI.Hold(caller.ID, idem.Key)
	if err != nil {
		return driver.Attachment{}, err
	}
	defer release()
	// The fingerprint of the fields; the file's SHA-256 completes it.
	fields := s.msgsAPI.Fingerprint("attachments.upload", u.Filename, u.ContentType, u.ConversationID, u.MessageID)
	rec, done, err := s.msgsAPI.Claim(ctx, caller.ID, idem.Key, fields)
	if err != nil {
		return driver.Attachment{}, err
	}
	if done {
		cr := newCountingReader(u.Body, s.opts.MaxUploadBytes)
		_, err := io.Copy(io.Discard, cr)
		sum := cr.Sum()
		if cr.tooLarge {
			return driver.Attachment{}, s.tooLarge()
		}
		if err != nil {
			return driver.Attachment{}, err
		}
		id, err := s.msgsAPI.Replay(rec, s.msgsAPI.Fingerprint(fields, sum))
		if err != nil {
			return driver.Attachment{}, err
		}
		a, err := s.get(ctx, caller, id)
		if err != nil {
			return driver.Attachment{}, err
		}
		setReplayed(idem, true)
		return a, nil
	}
	a, err := s.store(ctx, caller, u, name, &rec)
	if err != nil {
		return driver.Attachment{}, s.msgsAPI.Release(ctx, rec, err)
	}
	setReplayed(idem, false)
	return a, nil
}

func setReplayed(idem driver.Idempotency, v bool) {
	if idem.Replayed != nil {
		*idem.Replayed = v
	}
}

func (s *Service) tooLarge() error {
	return &driver.Error{Kind: driver.ErrTooLarge, Param: "file",
		Message: "the file is larger than the limit of " + strconv.FormatInt(s.opts.MaxUploadBytes, 10) + " bytes"}
}

// writeRow writes the row of a, a stored file, with done unless nil:
// filed when messageID is "", else linked to the caller's message in the
// same transaction (messaging's Attach), which it returns. When a
// completes the upload reservation reserved (not ""), the row is written
// only with it, which goes in the same transaction: ErrNotFound when it is
// gone.
func (s *Service) writeRow(ctx context.Context, caller driver.Contact, a driver.Attachment, messageID string, done *driver.IdempotencyRecord, reserved string) (driver.Message, error) {
	if messageID != "" {
		return s.msgsAPI.Attach(ctx, caller, messageID, a, done, reserved)
	}
	rec := s.recorder(func(c driver.Change) []driver.Event {
		return attachmentEvents(driver.EventAttachmentCreated, c.Attachments, a.CreatedAt)
	})
	switch {
	case reserved != "":
		return driver.Message{}, s.repo.(driver.ReservationStore).CompleteReservation(ctx, reserved, a, rec, done)
	case done != nil:
		return driver.Message{}, s.repo.CreateAttachmentKeyed(ctx, a, rec, *done)
	}
	return driver.Message{}, s.repo.CreateAttachment(ctx, a, rec)
}

// settleRow decides what a failed CreateAttachment of a leaves: when the
// row is there after all (a driver may commit and still report an error,
// such as the caller's cancellation), it returns the row and true; when it
// is certainly not there, it removes the object. When the outcome cannot
// be known (the database cannot be reached, or did not answer in time),
// the object stays for Reconcile, which removes it after Options.
// OrphanGrace if no row names it by then.
func (s *Service) settleRow(ctx context.Context, a driver.Attachment, err error) (driver.Attachment, bool) {
	uncertain := func(why error) (driver.Attachment, bool) {
		s.opts.Logger.WarnContext(ctx, "attachments: an upload's row may or may not be stored; its object is left for Reconcile",
			"attachment", a.ID, "key", a.Key, "err", err, "check", why)
		return driver.Attachment{}, false
	}
	if driver.KindOf(err) == driver.ErrUnavailable || errors.Is(err, context.DeadlineExceeded) {
		return uncertain(err)
	}
	got, gerr := s.repo.GetAttachment(ctx, a.ID)
	switch {
	case gerr == nil:
		return got, true
	case errors.Is(gerr, driver.ErrNotFound):
		s.removeBlob(ctx, a.Key)
		return driver.Attachment{}, false
	default:
		return uncertain(gerr)
	}
}

// finishing returns the context of steps that must finish together once
// begun: not canceled with ctx (a client that hangs up), but bounded by
// Options.FinishTimeout, so that a backend that does not answer cannot
// hold them forever.
func (s *Service) finishing(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.opts.FinishTimeout)
}

// messageFull is the error of an upload to a message that has its most
// attachments.
func (s *Service) messageFull() error {
	return check.BadParam("message_id", "the message has its most attachments already ("+strconv.Itoa(s.msgsAPI.MaxAttachments())+")")
}

func noMessage(id string) error {
	return &driver.Error{Kind: driver.ErrNotFound, Param: "message_id", Message: "no such message: " + id}
}

// maxTypeLen bounds a stored content type.
const maxTypeLen = 127

// declaredType returns the declared content type when it is specific and
// well-formed, else "". Of its parameters only charset is kept.
func declaredType(ct string) string {
	if ct == "" {
		return ""
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt == "application/octet-stream" {
		return ""
	}
	var keep map[string]string
	if cs, ok := params["charset"]; ok {
		keep = map[string]string{"charset": cs}
	}
	t := mime.FormatMediaType(mt, keep)
	if len(t) > maxTypeLen {
		return ""
	}
	return t
}

// countingReader counts what passes and fails past max bytes, or past the
// caller's quota when quota is not nil (each chunk is counted there before
// it is passed on). It hashes the bytes on a goroutine of its own, so that
// hashing overlaps reading the request and writing the object; Sum waits
// for it. Close must be called (Sum does) so the goroutine ends.
type countingReader struct {
	r         io.Reader
	n, max    int64
	tooLarge  bool
	quota     *upload
	overQuota bool

	h      hash.Hash
	chunks chan []byte // filled chunks, to hash
	free   chan []byte // hashed chunks, to fill again
	done   chan struct{}
	closed bool
}

// hashDepth is how many chunks may wait to be hashed.
const hashDepth = 4

func newCountingReader(r io.Reader, max int64) *countingReader {
	c := &countingReader{
		r: r, max: max, h: sha256.New(),
		chunks: make(chan []byte, hashDepth),
		free:   make(chan []byte, hashDepth+1),
		done:   make(chan struct{}),
	}
	for range hashDepth + 1 {
		c.free <- nil
	}
	go func() {
		defer close(c.done)
		for b := range c.chunks {
			c.h.Write(b)
			c.free <- b
		}
	}()
	return c
}

var (
	errTooLarge  = errors.New("upload exceeds the size limit")
	errOverQuota = errors.New("upload exceeds the caller's quota")
)

func (c *countingReader) Read(p []byte) (int, error) {
	// Fill p as far as the source allows: a multipart part yields a few
	// KiB a call, and every chunk costs a hand-off to the hasher and,
	// downstream, a write to the store.
	n, err := 0, error(nil)
	for n < len(p) && err == nil {
		var k int
		k, err = c.r.Read(p[n:])
		n += k
	}
	c.n += int64(n)
	if c.n > c.max {
		c.tooLarge = true
		return 0, errTooLarge
	}
	if c.quota != nil && n > 0 && !c.quota.add(int64(n)) {
		c.overQuota = true
		return 0, errOverQuota
	}
	if n > 0 {
		b := <-c.free
		c.chunks <- append(b[:0], p[:n]...)
	}
	return n, err
}

// Close stops the hashing goroutine; it is safe to call more than once.
func (c *countingReader) Close() {
	if !c.closed {
		c.closed = true
		close(c.chunks)
		<-c.done
	}
}

// Sum returns the hex SHA-256 of everything read.
func (c *countingReader) Sum() string {
	c.Close()
	return hex.EncodeToString(c.h.Sum(nil))
}

// removeBlob deletes an object, leaving it to Reconcile when it cannot.
func (s *Service) removeBlob(ctx context.Context, key string) {
	ctx, cancel := s.finishing(ctx)
	defer cancel()
	if err := s.blobs.Delete(ctx, key); err != nil && !errors.Is(err, driver.ErrNotFound) {
		s.opts.Logger.ErrorContext(ctx, "attachments: cannot remove object; Reconcile will retry", "key", key, "err", err)
	}
}

// Get returns the attachment, or ErrNotFound if it does not exist or the
// caller may not see it.
func (s *Service) Get(ctx context.Context, caller driver.Contact, id string) (driver.Attachment, error) {
	a, err := s.get(ctx, caller, id)
	return a, domain.Wrap("attachments.Get "+strconv.Quote(id), err)
}

func (s *Service) get(ctx context.Context, caller driver.Contact, id string) (driver.Attachment, error) {
	if !ids.Valid(ids.Attachment, id) {
		return driver.Attachment{}, notFound(id)
	}
	a, err := s.repo.GetAttachment(ctx, id)
	if errors.Is(err, driver.ErrNotFound) {
		return driver.Attachment{}, notFound(id)
	}
	if err != nil {
		return driver.Attachment{}, err
	}
	ok, err := s.canView(ctx, caller, a)
	if err != nil {
		return driver.Attachment{}, err
	}
	if !ok {
		return driver.Attachment{}, notFound(id)
	}
	return a, nil
}

func notFound(id string) error {
	return &driver.Error{Kind: driver.ErrNotFound, Message: "no such attachment: " + id}
}

func (s *Service) canView(ctx context.Context, caller driver.Contact, a driver.Attachment) (bool, error) {
	if a.UploaderID == caller.ID {
		return true, nil
	}
	if a.ConversationID == "" {
		return false, nil
	}
	return s.m.CanView(ctx, caller.ID, a.ConversationID)
}

func (s *Service) mustView(ctx context.Context, caller driver.Contact, conversationID string) error {
	ok, err := s.m.CanView(ctx, caller.ID, conversationID)
	if err != nil {
		return err
	}
	if !ok {
		return &driver.Error{Kind: driver.ErrNotFound, Param: "conversation_id", Message: "no such conversation: " + conversationID}
	}
	return nil
}

// Open returns the attachment and a reader of its bytes, which the caller
// must close. Errors as for Get.
func (s *Service) Open(ctx context.Context, caller driver.Contact, id string) (driver.Attachment, io.ReadSeekCloser, error) {
	op := "attachments.Open " + strconv.Quote(id)
	a, err := s.get(ctx, caller, id)
	if err != nil {
		return driver.Attachment{}, nil, domain.Wrap(op, err)
	}
	return s.open(ctx, op, a)
}

// OpenNamed is Open for a request that names the file, as a download URL
// does: when filename is not the attachment's current name (an old URL,
// after a rename), it returns the attachment and a nil reader and reads
// nothing from the blob store, so that the caller can point to the
// current name. Errors as for Get: an attachment the caller may not see is
// not found whatever the name.
func (s *Service) OpenNamed(ctx context.Context, caller driver.Contact, id, filename string) (driver.Attachment, io.ReadSeekCloser, error) {
	op := "attachments.OpenNamed " + strconv.Quote(id)
	a, err := s.get(ctx, caller, id)
	if err != nil {
		return driver.Attachment{}, nil, domain.Wrap(op, err)
	}
	if a.Filename != filename {
		return a, nil, nil
	}
	return s.open(ctx, op, a)
}

func (s *Service) open(ctx context.Context, op string, a driver.Attachment) (driver.Attachment, io.ReadSeekCloser, error) {
	r, err := s.blobs.Open(ctx, a.Key)
	if err != nil {
		return driver.Attachment{}, nil, domain.Wrap(op, err)
	}
	return a, r, nil
}

// SignedURL returns a signed URL of the attachment's bytes in the blob
// store, valid for expiry, for a caller who may see a. a must be as this
// Service returned it (so that a page of attachments is signed without a
// query each): one whose Key is not the key the Service gave the file of
// a.ID is not found. Errors: ErrNotFound when the caller may not see a,
// ErrUnimplemented when the store cannot sign.
func (s *Service) SignedURL(ctx context.Context, caller driver.Contact, a driver.Attachment, expiry time.Duration) (string, error) {
	const op = "attachments.SignedURL"
	if !s.isKeyOf(ctx, a) {
		// Not an attachment as the Service returns it: its key is not the
		// one the Service gave its file.
		return "", domain.Wrap(op, notFound(a.ID))
	}
	if ok, err := s.canView(ctx, caller, a); err != nil || !ok {
		if err == nil {
			err = notFound(a.ID)
		}
		return "", domain.Wrap(op, err)
	}
	signer, ok := s.blobs.(driver.URLSigner)
	if !ok {
		return "", domain.Wrap(op, &driver.Error{Kind: driver.ErrUnimplemented, Message: "the blob store cannot sign URLs"})
	}
	u, err := signer.SignedURL(ctx, a.Key, a.Filename, a.FileType, expiry)
	return u, domain.Wrap(op, err)
}

// Attachments returns a page of the attachments of the conversation, or
// when conversationID is "" of every conversation the caller may see and
// the caller's own uploads that are in no conversation, newest first.
// Errors: ErrInvalid for a bad limit, conversation id or cursor (an id
// that is not in the list).
func (s *Service) Attachments(ctx context.Context, caller driver.Contact, conversationID string, o driver.ListOptions) (driver.Page[driver.Attachment], error) {
	p, err := s.attachments(ctx, caller, conversationID, o)
	return p, domain.Wrap("attachments.Attachments", err)
}

func (s *Service) attachments(ctx context.Context, caller driver.Contact, conversationID string, o driver.ListOptions) (driver.Page[driver.Attachment], error) {
	limit, err := check.Limit(o.Limit, s.m.MaxListLimit)
	if err != nil {
		return driver.Page[driver.Attachment]{}, err
	}
	q := driver.AttachmentQuery{Window: driver.Window{Limit: limit}}
	if conversationID != "" {
		if err := check.ConversationID("conversation_id", conversationID); err != nil {
			return driver.Page[driver.Attachment]{}, err
		}
		ok, err := s.m.CanView(ctx, caller.ID, conversationID)
		if err != nil {
			return driver.Page[driver.Attachment]{}, err
		}
		if !ok {
			return driver.Page[driver.Attachment]{Data: []driver.Attachment{}}, nil
		}
		q.ConversationIDs = []string{conversationID}
	} else {
		all, member, convs, err := s.m.Scope(ctx, caller.ID)
		if err != nil {
			return driver.Page[driver.Attachment]{}, err
		}
		q.All, q.MemberID, q.ConversationIDs, q.UploaderID = all, member, convs, caller.ID
	}
	inList := func(a driver.Attachment) bool {
		if conversationID != "" {
			return a.ConversationID == conversationID
		}
		if a.ConversationID == "" {
			return a.UploaderID == caller.ID
		}
		return true // s.get found it visible: its conversation is in scope
	}
	q.After, q.Before, err = check.Cursors(o.StartingAfter, o.EndingBefore, func(id string) (driver.Cursor, bool, error) {
		a, err := s.get(ctx, caller, id)
		if errors.Is(err, driver.ErrNotFound) {
			return driver.Cursor{}, false, nil
		}
		return driver.Cursor{Time: a.CreatedAt, ID: a.ID}, inList(a), err
	})
	if err != nil {
		return driver.Page[driver.Attachment]{}, err
	}
	items, more, err := s.repo.ListAttachments(ctx, q)
	if err != nil {
		return driver.Page[driver.Attachment]{}, err
	}
	if items == nil {
		items = []driver.Attachment{}
	}
	return driver.Page[driver.Attachment]{Data: items, HasMore: more}, nil
}

// AllAttachments returns an iterator over the attachments that
// Attachments lists, newest first, read page by page (o.Limit a page; 0
// for the largest), from the newest or from just older than
// o.StartingAfter. o.EndingBefore must be empty. The iterator yields the
// first error (with a zero Attachment) and stops; break out of the loop to
// stop early.
func (s *Service) AllAttachments(ctx context.Context, caller driver.Contact, conversationID string, o driver.ListOptions) iter.Seq2[driver.Attachment, error] {
	return paging.All("attachments.AllAttachments", o, s.m.MaxListLimit,
		func(o driver.ListOptions) (driver.Page[driver.Attachment], error) {
			return s.Attachments(ctx, caller, conversationID, o)
		},
		func(a driver.Attachment) string { return a.ID })
}

// Rename changes the attachment's file name (cleaned as on upload); the
// bytes are not copied. Only the uploader may rename: ErrPermission for
// others, ErrNotFound for those who may not see it, ErrInvalid for a bad
// name. It is Update with Filename only.
func (s *Service) Rename(ctx context.Context, caller driver.Contact, id, filename string) (driver.Attachment, error) {
	a, err := s.update(ctx, caller, id, Update{Filename: &filename})
	return a, domain.Wrap("attachments.Rename "+strconv.Quote(id), err)
}

// Update is a change to an attachment. Nil fields change nothing; at least
// one must be set.
type Update struct {
	// Filename renames the file (cleaned as on upload); the bytes are not
	// copied. Only the uploader may rename.
	Filename *string
	// Idempotency, when its Key is set, makes the call safe to retry: a
	// retry with the same key and fields returns the first call's
	// attachment and changes nothing (see messaging's Retries).
	Idempotency driver.Idempotency
}

// Update applies u as caller and returns the attachment as stored. Only
// the uploader may change an attachment: ErrPermission for others,
// ErrNotFound for those who may not see it, ErrInvalid for an empty update
// or a bad name; with an idempotency key, those of Upload.
func (s *Service) Update(ctx context.Context, caller driver.Contact, id string, u Update) (driver.Attachment, error) {
	a, err := s.update(ctx, caller, id, u)
	return a, domain.Wrap("attachments.Update "+strconv.Quote(id), err)
}

func (s *Service) update(ctx context.Context, caller driver.Contact, id string, u Update) (driver.Attachment, error) {
	if u.Filename == nil {
		return driver.Attachment{}, check.Missing("filename")
	}
	name, err := check.Filename("filename", *u.Filename)
	if err != nil {
		return driver.Attachment{}, err
	}
	idem := u.Idempotency
	if idem.Key == "" {
		return s.rename(ctx, caller, id, name, nil)
	}
	if err := check.IdempotencyKey("idempotency_key", idem.Key); err != nil {
		return driver.Attachment{}, err
	}
	var a driver.Attachment
	fp := s.msgsAPI.Fingerprint("attachments.update", id, *u.Filename)
	reread := func(id string) (err error) {
		a, err = s.get(ctx, caller, id)
		return err
	}
	_, err = s.msgsAPI.Once(ctx, caller.ID, idem, fp, reread, func(done driver.IdempotencyRecord) error {
		var err error
		a, err = s.rename(ctx, caller, id, name, &done)
		return err
	})
	if err != nil {
		return driver.Attachment{}, err
	}
	return a, nil
}

// rename sets the attachment's name, checked and cleaned, storing done
// (when not nil) in the same transaction.
func (s *Service) rename(ctx context.Context, caller driver.Contact, id, name string, done *driver.IdempotencyRecord) (driver.Attachment, error) {
	a, err := s.get(ctx, caller, id)
	if err != nil {
		return driver.Attachment{}, err
	}
	if a.UploaderID != caller.ID {
		return driver.Attachment{}, &driver.Error{Kind: driver.ErrPermission, Message: "only the uploader may rename an attachment"}
	}
	now := s.now()
	rec := s.recorder(func(c driver.Change) []driver.Event {
		return attachmentEvents(driver.EventAttachmentUpdated, c.Attachments, now)
	})
	if done != nil {
		done.Result = []byte(id)
		a, err = s.repo.RenameAttachmentKeyed(ctx, id, name, rec, *done)
	} else {
		a, err = s.repo.RenameAttachment(ctx, id, name, rec)
	}
	if errors.Is(err, driver.ErrNotFound) {
		return driver.Attachment{}, notFound(id)
	}
	if err == nil {
		s.notify()
	}
	return a, err
}

// Delete removes the attachment's row and file; it disappears from its
// message. Only the uploader may delete: ErrPermission for others,
// ErrNotFound for those who may not see it.
func (s *Service) Delete(ctx context.Context, caller driver.Contact, id string) error {
	return domain.Wrap("attachments.Delete "+strconv.Quote(id), s.delete(ctx, caller, id))
}

func (s *Service) delete(ctx context.Context, caller driver.Contact, id string) error {
	a, err := s.get(ctx, caller, id)
	if err != nil {
		return err
	}
	if a.UploaderID != caller.ID {
		return &driver.Error{Kind: driver.ErrPermission, Message: "only the uploader may delete an attachment"}
	}
	now := s.now()
	a, err = s.repo.DeleteAttachment(ctx, id, s.recorder(func(c driver.Change) []driver.Event {
		return deleteEvents(c, now)
	}))
	if errors.Is(err, driver.ErrNotFound) {
		return notFound(id)
	}
	if err != nil {
		return err
	}
	s.notify()
	s.removeFiles(ctx, []string{a.Key})
	return nil
}

// removeFiles removes the objects of attachments whose rows are gone (their
// keys are pending deletions) and forgets them. A key whose object cannot be
// removed now stays pending for Reconcile. The messaging Service calls it
// after deleting a message.
func (s *Service) removeFiles(ctx context.Context, keys []string) {
	ctx, cancel := s.finishing(ctx)
	defer cancel()
	r, err := s.rights(ctx, true)
	if err != nil {
		s.opts.Logger.WarnContext(ctx, "attachments: cannot read the blob store's handovers; Reconcile will delete the objects", "keys", len(keys), "err", err)
		return
	}
	for _, key := range keys {
		if !s.mayDelete(ctx, r, key) {
			// Kept: not this database's alone.
		} else if err := s.deleteObject(ctx, key); err != nil {
			s.opts.Logger.WarnContext(ctx, "attachments: object delete failed; Reconcile will retry", "key", key, "err", err)
			continue
		}
		if err := s.repo.ForgetDeletion(ctx, key); err != nil {
			s.opts.Logger.WarnContext(ctx, "attachments: cannot forget a done deletion", "key", key, "err", err)
		}
	}
}
