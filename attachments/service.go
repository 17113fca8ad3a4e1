package attachments

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/parleychat/parley/internal/check"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/internal/kind"
)

// KeyPrefix is the prefix of every blob key the Service makes.
const KeyPrefix = "attachments/"

// Options configure a Service. A nil *Options means all defaults.
type Options struct {
	// Policy decides who sees which conversation. Default: Everyone.
	Policy Policy
	// MaxUploadBytes is the largest file accepted. Default: 25 MiB.
	MaxUploadBytes int64
	// MaxListLimit is the largest page size. Default: 100.
	MaxListLimit int
	// OrphanGrace is how old an object without a row must be before
	// Reconcile removes it, so that uploads under way are left alone.
	// Default: 1 hour.
	OrphanGrace time.Duration
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
	if c.Policy == nil {
		c.Policy = Everyone{}
	}
	if c.MaxUploadBytes <= 0 {
		c.MaxUploadBytes = 25 << 20
	}
	if c.MaxListLimit <= 0 {
		c.MaxListLimit = 100
	}
	if c.OrphanGrace <= 0 {
		c.OrphanGrace = time.Hour
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
	repo  Repository
	blobs BlobStore
	opts  Options
}

// New returns a Service over the given repository and blob store.
func New(repo Repository, blobs BlobStore, opts *Options) *Service {
	return &Service{repo: repo, blobs: blobs, opts: opts.withDefaults()}
}

// Policy returns the conversation policy the Service enforces;
// messaging.Service enforces the same one.
func (s *Service) Policy() Policy { return s.opts.Policy }

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
	// Body is read to its end; it is never buffered whole.
	Body io.Reader
}

// Upload streams u.Body into the blob store and records the attachment.
// It fails with ErrInvalid for a bad name or conversation, ErrNotFound for
// a conversation the caller may not see, and ErrTooLarge beyond
// MaxUploadBytes; on any failure no row and no object are left.
func (s *Service) Upload(ctx context.Context, callerID string, u Upload) (Attachment, error) {
	const op = "attachments.Upload"
	a, err := s.upload(ctx, callerID, u)
	return a, kind.Wrap(op, err)
}

func (s *Service) upload(ctx context.Context, callerID string, u Upload) (Attachment, error) {
	name, err := check.Filename("filename", u.Filename)
	if err != nil {
		return Attachment{}, err
	}
	if u.ConversationID != "" {
		if err := check.ConversationID("conversation_id", u.ConversationID); err != nil {
			return Attachment{}, err
		}
		if err := s.mustView(ctx, callerID, u.ConversationID); err != nil {
			return Attachment{}, err
		}
	}
	if u.Body == nil {
		return Attachment{}, kind.Missing("file")
	}
	body := bufio.NewReaderSize(u.Body, 512)
	head, err := body.Peek(512)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return Attachment{}, err
	}
	ctype := declaredType(u.ContentType)
	if ctype == "" {
		ctype = http.DetectContentType(head)
	}

	now := s.opts.Now().UTC().Truncate(time.Microsecond)
	id := ids.NewAt(ids.Attachment, now)
	a := Attachment{
		ID:             id,
		ConversationID: u.ConversationID,
		UploaderID:     callerID,
		Filename:       name,
		FileType:       ctype,
		Key:            KeyPrefix + id,
	}
	cr := newCountingReader(body, s.opts.MaxUploadBytes)
	defer cr.Close()
	if err := s.blobs.Put(ctx, a.Key, ctype, cr); err != nil {
		s.removeBlob(context.WithoutCancel(ctx), a.Key) // the store should have left nothing; make sure
		if cr.tooLarge {
			return Attachment{}, &Error{Kind: ErrTooLarge, Param: "file",
				Message: "the file is larger than the limit of " + strconv.FormatInt(s.opts.MaxUploadBytes, 10) + " bytes"}
		}
		return Attachment{}, err
	}
	a.FileSize = cr.n
	a.SHA256 = cr.Sum()
	a.CreatedAt = s.opts.Now().UTC().Truncate(time.Microsecond)
	if err := s.repo.CreateAttachment(ctx, a); err != nil {
		s.removeBlob(context.WithoutCancel(ctx), a.Key)
		return Attachment{}, err
	}
	return a, nil
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

// countingReader counts what passes and fails past max bytes. It hashes
// the bytes on a goroutine of its own, so that hashing overlaps reading the
// request and writing the object; Sum waits for it. Close must be called
// (Sum does) so the goroutine ends.
type countingReader struct {
	r        io.Reader
	n, max   int64
	tooLarge bool

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

var errTooLarge = errors.New("upload exceeds the size limit")

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
	if err := s.blobs.Delete(ctx, key); err != nil && !errors.Is(err, ErrNotFound) {
		s.opts.Logger.ErrorContext(ctx, "attachments: cannot remove object; Reconcile will retry", "key", key, "err", err)
	}
}

// Get returns the attachment, or ErrNotFound if it does not exist or the
// caller may not see it.
func (s *Service) Get(ctx context.Context, callerID, id string) (Attachment, error) {
	a, err := s.get(ctx, callerID, id)
	return a, kind.Wrap("attachments.Get "+strconv.Quote(id), err)
}

func (s *Service) get(ctx context.Context, callerID, id string) (Attachment, error) {
	if !ids.Valid(ids.Attachment, id) {
		return Attachment{}, notFound(id)
	}
	a, err := s.repo.GetAttachment(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Attachment{}, notFound(id)
	}
	if err != nil {
		return Attachment{}, err
	}
	ok, err := s.canView(ctx, callerID, a)
	if err != nil {
		return Attachment{}, err
	}
	if !ok {
		return Attachment{}, notFound(id)
	}
	return a, nil
}

func notFound(id string) error {
	return &Error{Kind: ErrNotFound, Message: "no such attachment: " + id}
}

func (s *Service) canView(ctx context.Context, callerID string, a Attachment) (bool, error) {
	if a.UploaderID == callerID {
		return true, nil
	}
	if a.ConversationID == "" {
		return false, nil
	}
	return s.opts.Policy.CanView(ctx, callerID, a.ConversationID)
}

func (s *Service) mustView(ctx context.Context, callerID, conversationID string) error {
	ok, err := s.opts.Policy.CanView(ctx, callerID, conversationID)
	if err != nil {
		return err
	}
	if !ok {
		return &Error{Kind: ErrNotFound, Param: "conversation_id", Message: "no such conversation: " + conversationID}
	}
	return nil
}

// Open returns the attachment and a reader of its bytes, which the caller
// must close. Errors as for Get.
func (s *Service) Open(ctx context.Context, callerID, id string) (Attachment, io.ReadSeekCloser, error) {
	op := "attachments.Open " + strconv.Quote(id)
	a, err := s.get(ctx, callerID, id)
	if err != nil {
		return Attachment{}, nil, kind.Wrap(op, err)
	}
	r, err := s.blobs.Open(ctx, a.Key)
	if err != nil {
		return Attachment{}, nil, kind.Wrap(op, err)
	}
	return a, r, nil
}

// SignedURL returns a signed, expiring URL of the attachment's bytes in the
// blob store. It fails with ErrUnimplemented when the store cannot sign.
func (s *Service) SignedURL(ctx context.Context, a Attachment, expiry time.Duration) (string, error) {
	signer, ok := s.blobs.(URLSigner)
	if !ok {
		return "", kind.Wrap("attachments.SignedURL", &Error{Kind: ErrUnimplemented, Message: "the blob store cannot sign URLs"})
	}
	u, err := signer.SignedURL(ctx, a.Key, a.Filename, a.FileType, expiry)
	return u, kind.Wrap("attachments.SignedURL", err)
}

// ListOptions select a page of attachments.
type ListOptions struct {
	// ConversationID restricts the list to one conversation. When empty,
	// every conversation the caller may see is listed, and the caller's own
	// uploads that are in no conversation.
	ConversationID string
	// Limit is the page size: 0 for the default of 10, at most
	// Options.MaxListLimit.
	Limit int
	// StartingAfter is the id of an item of the list; the page holds the
	// items just older than it.
	StartingAfter string
	// EndingBefore is the id of an item of the list; the page holds the items
	// just newer than it, still newest first.
	EndingBefore string
}

// Page is one page of a list.
type Page struct {
	// Data are the attachments of the page, newest first.
	Data []Attachment
	// HasMore reports whether more attachments exist beyond the page in the
	// direction of travel (older, or newer with EndingBefore).
	HasMore bool
}

// List returns a page of the attachments the caller may see, newest first.
// Errors: ErrInvalid for a bad limit, conversation id or cursor (an id that
// is not in the list).
func (s *Service) List(ctx context.Context, callerID string, o ListOptions) (Page, error) {
	p, err := s.list(ctx, callerID, o)
	return p, kind.Wrap("attachments.List", err)
}

func (s *Service) list(ctx context.Context, callerID string, o ListOptions) (Page, error) {
	limit, err := check.Limit(o.Limit, s.opts.MaxListLimit)
	if err != nil {
		return Page{}, err
	}
	q := ListQuery{Limit: limit}
	if o.ConversationID != "" {
		if err := check.ConversationID("conversation_id", o.ConversationID); err != nil {
			return Page{}, err
		}
		ok, err := s.opts.Policy.CanView(ctx, callerID, o.ConversationID)
		if err != nil {
			return Page{}, err
		}
		if !ok {
			return Page{Data: []Attachment{}}, nil
		}
		q.ConversationIDs = []string{o.ConversationID}
	} else {
		convs, all, err := s.opts.Policy.Viewable(ctx, callerID)
		if err != nil {
			return Page{}, err
		}
		q.ConversationIDs, q.All, q.UploaderID = convs, all, callerID
	}
	inList := func(a Attachment) bool {
		if o.ConversationID != "" {
			return a.ConversationID == o.ConversationID
		}
		if a.ConversationID == "" {
			return a.UploaderID == callerID
		}
		return q.All || slices.Contains(q.ConversationIDs, a.ConversationID)
	}
	q.After, q.Before, err = check.Cursors(o.StartingAfter, o.EndingBefore, func(id string) (Cursor, bool, error) {
		a, err := s.get(ctx, callerID, id)
		if errors.Is(err, ErrNotFound) {
			return Cursor{}, false, nil
		}
		return Cursor{CreatedAt: a.CreatedAt, ID: a.ID}, inList(a), err
	})
	if err != nil {
		return Page{}, err
	}
	items, more, err := s.repo.ListAttachments(ctx, q)
	if err != nil {
		return Page{}, err
	}
	if items == nil {
		items = []Attachment{}
	}
	return Page{Data: items, HasMore: more}, nil
}

// Rename changes the attachment's file name (cleaned as on upload); the
// bytes are not copied. Only the uploader may rename: ErrPermission for
// others, ErrNotFound for those who may not see it, ErrInvalid for a bad
// name.
func (s *Service) Rename(ctx context.Context, callerID, id, filename string) (Attachment, error) {
	a, err := s.rename(ctx, callerID, id, filename)
	return a, kind.Wrap("attachments.Rename "+strconv.Quote(id), err)
}

func (s *Service) rename(ctx context.Context, callerID, id, filename string) (Attachment, error) {
	name, err := check.Filename("filename", filename)
	if err != nil {
		return Attachment{}, err
	}
	a, err := s.get(ctx, callerID, id)
	if err != nil {
		return Attachment{}, err
	}
	if a.UploaderID != callerID {
		return Attachment{}, &Error{Kind: ErrPermission, Message: "only the uploader may rename an attachment"}
	}
	return s.repo.RenameAttachment(ctx, id, name)
}

// Delete removes the attachment's row and file; it disappears from its
// message. Only the uploader may delete: ErrPermission for others,
// ErrNotFound for those who may not see it.
func (s *Service) Delete(ctx context.Context, callerID, id string) error {
	return kind.Wrap("attachments.Delete "+strconv.Quote(id), s.delete(ctx, callerID, id))
}

func (s *Service) delete(ctx context.Context, callerID, id string) error {
	a, err := s.get(ctx, callerID, id)
	if err != nil {
		return err
	}
	if a.UploaderID != callerID {
		return &Error{Kind: ErrPermission, Message: "only the uploader may delete an attachment"}
	}
	a, err = s.repo.DeleteAttachment(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return notFound(id)
	}
	if err != nil {
		return err
	}
	s.DeleteFiles(context.WithoutCancel(ctx), []string{a.Key})
	return nil
}

// DeleteFiles removes the objects of attachments whose rows are gone (their
// keys are pending deletions) and forgets them. A key whose object cannot be
// removed now stays pending for Reconcile. messaging calls it after deleting
// a message.
func (s *Service) DeleteFiles(ctx context.Context, keys []string) {
	for _, key := range keys {
		if err := s.blobs.Delete(ctx, key); err != nil && !errors.Is(err, ErrNotFound) {
			s.opts.Logger.WarnContext(ctx, "attachments: object delete failed; Reconcile will retry", "key", key, "err", err)
			continue
		}
		if err := s.repo.ForgetDeletion(ctx, key); err != nil {
			s.opts.Logger.WarnContext(ctx, "attachments: cannot forget a done deletion", "key", key, "err", err)
		}
	}
}

// ReconcileReport says what Reconcile did.
type ReconcileReport struct {
	// Deleted counts the pending deletions carried out.
	Deleted int
	// Orphans counts the objects without a row that were removed.
	Orphans int
	// Failed counts the objects that could not be removed (they stay for
	// the next run).
	Failed int
}

// Reconcile finishes what failures left behind: it removes the objects of
// pending deletions, and, when the blob store is a Lister, objects older
// than Options.OrphanGrace that belong to no attachment. Run it
// periodically (the example server does, every few minutes).
func (s *Service) Reconcile(ctx context.Context) (ReconcileReport, error) {
	var rep ReconcileReport
	for {
		keys, err := s.repo.PendingDeletions(ctx, 100)
		if err != nil {
			return rep, kind.Wrap("attachments.Reconcile", err)
		}
		progress := false
		for _, key := range keys {
			if err := s.blobs.Delete(ctx, key); err != nil && !errors.Is(err, ErrNotFound) {
				rep.Failed++
				continue
			}
			if err := s.repo.ForgetDeletion(ctx, key); err != nil {
				return rep, kind.Wrap("attachments.Reconcile", err)
			}
			rep.Deleted++
			progress = true
		}
		if len(keys) < 100 || !progress {
			break
		}
	}
	lister, ok := s.blobs.(Lister)
	if !ok {
		return rep, nil
	}
	cutoff := s.opts.Now().Add(-s.opts.OrphanGrace)
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		used, err := s.repo.KeysInUse(ctx, batch)
		if err != nil {
			return err
		}
		for _, key := range batch {
			if used[key] {
				continue
			}
			if err := s.blobs.Delete(ctx, key); err != nil && !errors.Is(err, ErrNotFound) {
				rep.Failed++
				continue
			}
			rep.Orphans++
		}
		batch = batch[:0]
		return nil
	}
	err := lister.List(ctx, KeyPrefix, func(o Object) error {
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
	return rep, kind.Wrap("attachments.Reconcile", err)
}
