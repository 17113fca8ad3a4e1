package attachments

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/parleychat/parley/internal/check"
	"github.com/parleychat/parley/internal/domain"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/internal/preview"
	"github.com/parleychat/parley/messaging/driver"
)

// Direct uploads: a client reserves an upload (Reserve), sends the bytes
// to the blob store itself where the store can sign a URL
// (driver.UploadSigner: S3, GCS, Azure through storage/blobstore), else to
// the host's own route, which calls PutContent, then completes it
// (Complete), which checks what was stored and makes the attachment.

// NewUpload describes an upload to reserve.
type NewUpload struct {
	// Filename is cleaned as an upload's.
	Filename string
	// ContentType is the declared type; empty or application/octet-stream
	// for one sniffed from the stored bytes at Complete.
	ContentType string
	// FileSize is the number of bytes the client will send.
	FileSize int64
	// SHA256 is their hex SHA-256.
	SHA256 string
	// ConversationID and MessageID are as for Upload.
	ConversationID, MessageID string
	// Idempotency makes the call safe to retry: a retry with the same key
	// and fields returns the first call's reservation.
	Idempotency driver.Idempotency
}

// Reservation is a reserved upload and where its bytes go.
type Reservation struct {
	driver.Reservation
	// URL is a signed URL of the blob store to send the bytes to, with
	// Method and Headers; "" when the store cannot sign, and the bytes go
	// through the host (PutContent).
	URL     string
	Method  string
	Headers map[string]string
}

// Reserve reserves an upload of u's file for caller, valid for
// Options.UploadExpiry, and returns where to send its bytes. The checks are
// an upload's, made before any byte is sent: ErrInvalid for a bad name,
// size, SHA-256 or conversation, ErrNotFound or ErrPermission for a
// message, ErrTooLarge beyond MaxUploadBytes (param file_size) or the
// caller's quota (Code CodeQuotaExceeded); ErrUnimplemented when the
// storage keeps no reservations (driver.ReservationStore).
//
// The quota counts the file's size from the reservation on, with the
// caller's stored files and its other reservations (until complete turns
// one into a file, or the sweep removes it after it expires), as
// Options.UploadQuota says of uploads; a replay of a keyed Reserve returns
// the first call's reservation without counting it again, whatever became
// of its message since (filled up, deleted), or ErrNotFound when the
// caller may no longer see its conversation.
func (s *Service) Reserve(ctx context.Context, caller driver.Contact, u NewUpload) (Reservation, error) {
	r, err := s.reserve(ctx, caller, u)
	return r, domain.Wrap("attachments.Reserve", err)
}

func (s *Service) reservations() (driver.ReservationStore, error) {
	rs, ok := s.repo.(driver.ReservationStore)
	if !ok {
		return nil, &driver.Error{Kind: driver.ErrUnimplemented, Message: "this storage keeps no upload reservations"}
	}
	return rs, nil
}

func (s *Service) reserve(ctx context.Context, caller driver.Contact, u NewUpload) (Reservation, error) {
	rs, err := s.reservations()
	if err != nil {
		return Reservation{}, err
	}
	name, err := check.Filename("filename", u.Filename)
	if err != nil {
		return Reservation{}, err
	}
	if u.FileSize < 0 {
		return Reservation{}, check.BadParam("file_size", "file_size must be a number of bytes")
	}
	if u.FileSize > s.opts.MaxUploadBytes {
		e := s.tooLarge().(*driver.Error)
		e.Param = "file_size"
		return Reservation{}, e
	}
	sum, err := hex.DecodeString(u.SHA256)
	if err != nil || len(sum) != sha256.Size {
		return Reservation{}, check.BadParam("sha256", "sha256 must be 64 hex digits")
	}
	u.SHA256 = hex.EncodeToString(sum) // in lower case, as Complete computes it

	tried := false // whether the reservation's row may have been written
	var quota *upload
	defer func() {
		if quota != nil {
			quota.end(tried)
		}
	}()
	// hold checks the reservation against the caller's quota, before its
	// row is written (a replay of a keyed Reserve, whose bytes count
	// already, is not checked). It holds its bytes from then on:
	// concurrent reservations and uploads of the caller here count them,
	// and the store counts its row (UploadedBytes) until complete or the
	// sweep removes it.
	hold := func() error {
		if quota != nil {
			return nil
		}
		q, err := s.beginQuota(ctx, caller)
		if err != nil || q == nil {
			return err
		}
		if !q.add(u.FileSize) {
			_, used := q.full()
			q.end(false)
			return s.quotaExceeded(used)
		}
		quota = q
		return nil
	}
	var r Reservation
	// prepare checks the conversation and message, which may change
	// between a keyed call and its replay (a message filled up or
	// deleted): with a key, it runs in the write of Once, whose failure
	// is a replay's answer all the same when the key has one.
	prepare := func() error {
		conv, err := s.uploadTarget(ctx, caller, u.ConversationID, u.MessageID)
		if err != nil {
			return err
		}
		prefix, err := s.keyPrefix(ctx)
		if err != nil {
			return err
		}
		now := s.now()
		attID := ids.NewAt(ids.Attachment, now)
		r = Reservation{Reservation: driver.Reservation{
			ID: ids.NewAt(ids.Upload, now), AttachmentID: attID, UploaderID: caller.ID,
			ConversationID: conv, MessageID: u.MessageID, Filename: name,
			FileType: declaredType(u.ContentType), FileSize: u.FileSize, SHA256: u.SHA256,
			Key: prefix + attID, CreatedAt: now, ExpiresAt: now.Add(s.opts.UploadExpiry),
		}}
		if err := s.sign(ctx, &r); err != nil {
			return err
		}
		return hold()
	}
	if u.Idempotency.Key == "" {
		if err := prepare(); err != nil {
			return Reservation{}, err
		}
		tried = true
		return r, rs.CreateReservation(ctx, r.Reservation)
	}
	if err := check.IdempotencyKey("idempotency_key", u.Idempotency.Key); err != nil {
		return Reservation{}, err
	}
	fp := s.msgsAPI.Fingerprint("attachments.reserve", u.Filename, u.ContentType, strconv.FormatInt(u.FileSize, 10), u.SHA256, u.ConversationID, u.MessageID)
	reread := func(id string) error {
		// A replay: the reservation as it is now, signed again; a 404 for
		// a caller who may no longer see its conversation, as a fresh
		// call would answer.
		_, got, err := s.reservation(ctx, caller, id)
		if err != nil {
			return err
		}
		r = Reservation{Reservation: got}
		return s.sign(ctx, &r)
	}
	_, err = s.msgsAPI.Once(ctx, caller.ID, u.Idempotency, fp, reread, func(done driver.IdempotencyRecord) error {
		if err := prepare(); err != nil {
			return err
		}
		tried = true
		done.Result = []byte(r.ID)
		return rs.CreateReservationKeyed(ctx, r.Reservation, done)
	})
	if err != nil {
		return Reservation{}, err
	}
	return r, nil
}

// sign sets where the bytes of r go: a signed URL of the blob store, valid
// until r expires, where it can sign (r.Checked when the store checks the
// SHA-256 itself); else no URL (PutContent).
func (s *Service) sign(ctx context.Context, r *Reservation) error {
	r.Method = http.MethodPut
	signer, ok := s.blobs.(driver.UploadSigner)
	if !ok {
		return nil
	}
	sum, err := hex.DecodeString(r.SHA256)
	if err != nil {
		return err
	}
	su, err := signer.SignUpload(ctx, r.Key, driver.UploadRequest{ContentType: storedType(r.Reservation), SHA256: sum, Size: r.FileSize, Expiry: r.ExpiresAt.Sub(s.now())})
	switch {
	case err == nil:
		r.URL, r.Method, r.Headers, r.Checked = su.URL, su.Method, su.Headers, su.ChecksumChecked
	case driver.KindOf(err) != driver.ErrUnimplemented:
		return err
	}
	return nil
}

// uploadTarget checks the conversation and message an upload names, and
// returns its conversation (the message's when a message is named).
func (s *Service) uploadTarget(ctx context.Context, caller driver.Contact, conv, msg string) (string, error) {
	if msg != "" {
		m, err := s.msgsAPI.Get(ctx, caller, msg)
		if driver.KindOf(err) == driver.ErrNotFound {
			return "", noMessage(msg)
		}
		if err != nil {
			return "", err
		}
		if m.Contact.ID != caller.ID {
			return "", &driver.Error{Kind: driver.ErrPermission, Param: "message_id", Message: "only the sender may add attachments to a message"}
		}
		if conv != "" && conv != m.ConversationID {
			return "", check.BadParam("conversation_id", "conversation_id differs from the message's conversation")
		}
		if len(m.Attachments) >= s.msgsAPI.MaxAttachments() {
			return "", s.messageFull()
		}
		conv = m.ConversationID
	}
	if conv != "" {
		if err := check.ConversationID("conversation_id", conv); err != nil {
			return "", err
		}
		if err := s.mustView(ctx, caller, conv); err != nil {
			return "", err
		}
	}
	return conv, nil
}

// reservation returns the caller's reservation id while it is in force:
// ErrNotFound for another's, an expired one, an unknown id (a completed
// one is gone) and one of a conversation the caller may no longer see.
func (s *Service) reservation(ctx context.Context, caller driver.Contact, id string) (driver.ReservationStore, driver.Reservation, error) {
	rs, err := s.reservations()
	if err != nil {
		return nil, driver.Reservation{}, err
	}
	gone := noUpload(id)
	if !ids.Valid(ids.Upload, id) {
		return nil, driver.Reservation{}, gone
	}
	r, err := rs.GetReservation(ctx, id)
	if errors.Is(err, driver.ErrNotFound) || err == nil && (r.UploaderID != caller.ID || !r.ExpiresAt.After(s.now())) {
		return nil, driver.Reservation{}, gone
	}
	if err != nil {
		return nil, driver.Reservation{}, err
	}
	if r.ConversationID != "" {
		if err := s.mustView(ctx, caller, r.ConversationID); err != nil {
			if driver.KindOf(err) == driver.ErrNotFound {
				err = gone // removed from the conversation since
			}
			return nil, driver.Reservation{}, err
		}
	}
	return rs, r, nil
}

func noUpload(id string) error {
	return &driver.Error{Kind: driver.ErrNotFound, Message: "no such upload: " + id}
}

// PutContent stores body as the bytes of the caller's reservation id: the
// route of a blob store that cannot sign URLs, through the host. The bytes
// stream to the store, at most the reserved size, and are checked as they
// pass: bytes of another size or SHA-256 are refused before the store
// keeps them (ErrTooLarge beyond the size, param file_size; ErrInvalid
// otherwise, param file_size or sha256), so that what the store held under
// the reservation's key stays (the file of a reservation completed while
// they streamed); the reservation stays for another try. ErrNotFound for
// an unknown, expired or completed reservation, one of another caller,
// or one of a conversation the caller may no longer see.
// It returns the reservation, with Method and no URL (the bytes came
// through the host).
func (s *Service) PutContent(ctx context.Context, caller driver.Contact, id string, body io.Reader) (Reservation, error) {
	r, err := s.putContent(ctx, caller, id, body)
	if err != nil {
		return Reservation{}, domain.Wrap("attachments.PutContent "+strconv.Quote(id), err)
	}
	return Reservation{Reservation: r, Method: http.MethodPut}, nil
}

func (s *Service) putContent(ctx context.Context, caller driver.Contact, id string, body io.Reader) (driver.Reservation, error) {
	_, r, err := s.reservation(ctx, caller, id)
	if err != nil {
		return r, err
	}
	cr := &checkingReader{countingReader: newCountingReader(body, r.FileSize), size: r.FileSize, sum: r.SHA256}
	defer cr.Close()
	if err := s.blobs.Put(ctx, r.Key, storedType(r), cr); err != nil {
		// The store aborted the write and kept what it held (a store that
		// leaves part of it anyway: Complete refuses it, and the sweep
		// removes it). Nothing is deleted here: the key may hold the file
		// of a reservation completed meanwhile.
		switch {
		case cr.tooLarge:
			return r, &driver.Error{Kind: driver.ErrTooLarge, Param: "file_size", Message: "more bytes were sent than file_size says"}
		case cr.bad != nil:
			return r, cr.bad
		}
		return r, err
	}
	return r, nil
}

// storedType is the type the object of r is stored with: the declared
// one, else application/octet-stream (sniffed at Complete). A signed URL
// and PutContent store it, and Complete checks it.
func storedType(r driver.Reservation) string {
	return cmp.Or(r.FileType, "application/octet-stream")
}

// checkingReader is a countingReader of the bytes of a reservation that
// fails instead of ending when they are not the reserved ones (fewer
// bytes, or another SHA-256; more fail as too large), so that the store
// aborts the write rather than keeping them.
type checkingReader struct {
	*countingReader
	size int64
	sum  string
	bad  error // the failed check, once the end was read
}

func (c *checkingReader) Read(p []byte) (int, error) {
	n, err := c.countingReader.Read(p)
	if !errors.Is(err, io.EOF) {
		return n, err
	}
	switch {
	case c.n != c.size:
		c.bad = check.BadParam("file_size", "the bytes sent are fewer than file_size says")
	case c.Sum() != c.sum:
		c.bad = check.BadParam("sha256", "the SHA-256 of the bytes sent is not the one reserved")
	default:
		return n, err
	}
	return n, c.bad
}

// Complete checks the object the caller sent for its reservation id and
// makes it the attachment, which it returns: its size must be the reserved
// file_size, its SHA-256 the reserved one (checked by the blob store itself
// where the signed URL carried it, as on S3; otherwise Complete reads the
// object once from the store), and its type, sniffed from its first bytes,
// must agree with a declared type (an image with an image's, see
// typeAgrees); on a store that signs uploads, it must be stored with the
// type and disposition of the reservation's upload_headers. A check that
// fails deletes the object and answers ErrInvalid (param file_size,
// upload_headers, sha256 or file_type; ErrInvalid param file when no
// object was sent, which deletes nothing); the reservation stays
// until it expires. ErrNotFound for an unknown, expired or completed
// reservation, one of another caller, or one of a conversation the caller
// may no longer see; then the errors of Upload's linking.
func (s *Service) Complete(ctx context.Context, caller driver.Contact, id string, idem driver.Idempotency) (driver.Attachment, error) {
	a, err := s.complete(ctx, caller, id, idem)
	return a, domain.Wrap("attachments.Complete "+strconv.Quote(id), err)
}

func (s *Service) complete(ctx context.Context, caller driver.Contact, id string, idem driver.Idempotency) (driver.Attachment, error) {
	if idem.Key == "" {
		return s.completeOnce(ctx, caller, id, nil)
	}
	if err := check.IdempotencyKey("idempotency_key", idem.Key); err != nil {
		return driver.Attachment{}, err
	}
	var a driver.Attachment
	reread := func(id string) (err error) {
		a, err = s.get(ctx, caller, id)
		return err
	}
	_, err := s.msgsAPI.Once(ctx, caller.ID, idem, s.msgsAPI.Fingerprint("attachments.complete", id), reread, func(done driver.IdempotencyRecord) error {
		var err error
		a, err = s.completeOnce(ctx, caller, id, &done)
		return err
	})
	return a, err
}

func (s *Service) completeOnce(ctx context.Context, caller driver.Contact, id string, done *driver.IdempotencyRecord) (driver.Attachment, error) {
	rs, r, err := s.reservation(ctx, caller, id)
	if err != nil {
		return driver.Attachment{}, err
	}
	size, head, sum, err := s.inspectObject(ctx, r)
	var headers *check.Error // stored with other headers than signed
	switch {
	case errors.Is(err, driver.ErrNotFound):
		return driver.Attachment{}, check.BadParam("file", "no bytes were sent for this upload")
	case errors.As(err, &headers):
	case err != nil:
		return driver.Attachment{}, err
	}
	var bad error
	sniffed := http.DetectContentType(head)
	switch {
	case headers != nil:
		bad = headers
	case size != r.FileSize:
		bad = check.BadParam("file_size", "the object stored has "+strconv.FormatInt(size, 10)+" bytes, not file_size")
	case sum != r.SHA256:
		bad = check.BadParam("sha256", "the SHA-256 of the object stored is not the one reserved")
	case !typeAgrees(r.FileType, sniffed):
		bad = check.BadParam("file_type", "the object stored is "+sniffed+", not "+r.FileType)
	}
	if bad != nil {
		return driver.Attachment{}, s.refuse(ctx, r, bad)
	}
	a := driver.Attachment{
		ID: r.AttachmentID, ConversationID: r.ConversationID, UploaderID: caller.ID, Filename: r.Filename,
		FileType: r.FileType, FileSize: size, SHA256: sum, Key: r.Key, CreatedAt: s.now(),
	}
	if a.FileType == "" {
		a.FileType = sniffed
	}
	if kind := preview.Sniff(head); kind != "" {
		info, err := s.previewer.Inspect(bytes.NewReader(head))
		switch {
		case err == nil || errors.Is(err, preview.ErrTooLarge):
			a.ImageWidth, a.ImageHeight = info.Width, info.Height
		case kind == "image/jpeg" && int64(len(head)) < size:
			// Metadata (EXIF, an ICC profile) may put a JPEG's frame
			// header past the head: read on to it, through the object
			// (its segments are skipped, not kept).
			a.ImageWidth, a.ImageHeight = s.imageSize(ctx, r.Key)
		}
	}
	out := a
	out.MessageID = r.MessageID
	if done != nil {
		done.Result = []byte(a.ID)
	}
	// The row is written only with the reservation, which goes in its
	// transaction: a retry that read the object meanwhile finds it gone
	// (completed, then perhaps deleted, or swept). The reads may have been
	// slow: the write must also end within the reservation's grace
	// (expiry plus FinishTimeout), after which the sweep may remove the
	// object.
	left := r.ExpiresAt.Add(s.opts.FinishTimeout).Sub(s.now())
	if left <= 0 {
		return driver.Attachment{}, noUpload(r.ID)
	}
	fctx, cancel := s.finishing(ctx)
	defer cancel()
	fctx, cancelGrace := context.WithTimeout(fctx, left)
	defer cancelGrace()
	m, err := s.writeRow(fctx, caller, a, r.MessageID, done, r.ID)
	for _, got := range m.Attachments {
		if got.ID == a.ID {
			out = got
		}
	}
	if err != nil {
		// The object stays while the reservation does: a retry may
		// complete it, and the sweep removes it after expiry.
		switch {
		case driver.KindOf(err) == driver.ErrConflict && !errors.Is(err, driver.ErrKeyTaken):
			// The attachment exists: made by a Complete whose
			// reservation was left beside it.
			return driver.Attachment{}, noUpload(r.ID)
		case driver.KindOf(err) == driver.ErrNotFound && r.MessageID != "":
			_, gerr := rs.GetReservation(fctx, r.ID)
			if gerr == nil {
				return driver.Attachment{}, noMessage(r.MessageID)
			}
			if !errors.Is(gerr, driver.ErrNotFound) {
				return driver.Attachment{}, gerr
			}
			fallthrough
		case driver.KindOf(err) == driver.ErrNotFound:
			return driver.Attachment{}, noUpload(r.ID)
		}
		if errors.Is(err, domain.ErrMessageFull) {
			return driver.Attachment{}, s.messageFull() // filled since the reservation
		}
		return driver.Attachment{}, err
	}
	s.notify()
	return out, nil
}

// refuse deletes the object of r, which a check of Complete refused, and
// returns why; unless an attachment names it (a reservation left beside
// the attachment it made): the file is then the attachment's, kept, and
// the upload is completed (ErrNotFound).
func (s *Service) refuse(ctx context.Context, r driver.Reservation, why error) error {
	_, err := s.repo.GetAttachment(ctx, r.AttachmentID)
	switch {
	case err == nil:
		return noUpload(r.ID)
	case !errors.Is(err, driver.ErrNotFound):
		return err
	}
	s.removeBlob(ctx, r.Key)
	return why
}

// headBytes is how much of a completed upload is read for its type and
// an image's header.
const headBytes = 256 << 10

// inspectObject returns the size, the first bytes and the SHA-256 of the
// object of r: by a HEAD and a range read where the store checked the
// SHA-256 itself (r.Checked), else by reading it once. What it reads is
// bounded by the reservation, whatever a client stored: an object of
// another size is returned unread (its size, which Complete refuses), and
// no more than one byte past the reserved size is ever read.
//
// On a store that signs uploads, an object stored with another type or
// disposition than those of upload_headers is refused (a *check.Error,
// param upload_headers; Complete deletes it as any refused object): a
// bucket whose signed URLs cannot set their own headers serves the stored
// ones, and one whose signature does not cover them lets the client
// choose them (both Azure).
func (s *Service) inspectObject(ctx context.Context, r driver.Reservation) (int64, []byte, string, error) {
	if signer, ok := s.blobs.(driver.UploadSigner); ok {
		a, err := signer.Attributes(ctx, r.Key)
		if err != nil || a.Size != r.FileSize {
			return a.Size, nil, "", err
		}
		ctype := storedType(r)
		if a.ContentType != ctype || a.ContentDisposition != ContentDisposition(ctype, "") {
			// Only a signed URL lets a client choose them: a bucket
			// that cannot sign took the bytes through PutContent, and
			// may keep no headers at all (a folder without metadata).
			probe := Reservation{Reservation: r}
			if err := s.sign(ctx, &probe); err != nil {
				return 0, nil, "", err
			}
			if probe.URL != "" {
				return 0, nil, "", check.BadParam("upload_headers", "the object was not stored with the upload_headers given")
			}
		}
		if r.Checked {
			head, err := signer.ReadHead(ctx, r.Key, headBytes)
			return a.Size, head, r.SHA256, err
		}
	}
	obj, err := s.blobs.Open(ctx, r.Key)
	if err != nil {
		return 0, nil, "", err
	}
	defer obj.Close()
	// The size without reading the bytes (a gocloud reader seeks
	// lazily; http.ServeContent relies on this too).
	size, err := obj.Seek(0, io.SeekEnd)
	if err == nil {
		_, err = obj.Seek(0, io.SeekStart)
	}
	if err != nil || size != r.FileSize {
		return size, nil, "", err
	}
	h := sha256.New()
	var head bytes.Buffer
	n, err := io.Copy(io.MultiWriter(h, &limitedBuffer{&head, headBytes}), io.LimitReader(obj, r.FileSize+1))
	if err != nil {
		return 0, nil, "", err
	}
	return n, head.Bytes(), hex.EncodeToString(h.Sum(nil)), nil
}

// limitedBuffer keeps the first n bytes written to it.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// typeAgrees reports whether the type sniffed from a file's first bytes
// agrees with its declared type: where either is an image type, they must
// be the same type (a file declared an image must be that image, and an
// image must not pass as another type); any other declared type is taken
// as it is, since a sniff tells few types apart (text/plain,
// application/octet-stream).
func typeAgrees(declared, sniffed string) bool {
	if declared == "" {
		return true
	}
	d, _, err1 := mime.ParseMediaType(declared)
	sn, _, err2 := mime.ParseMediaType(sniffed)
	if err1 != nil || err2 != nil {
		return false
	}
	if isImage(d) || isImage(sn) {
		return d == sn
	}
	return true
}

func isImage(t string) bool { return len(t) > 6 && t[:6] == "image/" }

// sweepReservations removes the reservations expired more than
// FinishTimeout ago (a Complete begun before the expiry has that long to
// write its row) and their objects, unless an attachment was made of them.
func (s *Service) sweepReservations(ctx context.Context, rep *ReconcileReport) error {
	rs, ok := s.repo.(driver.ReservationStore)
	if !ok {
		return nil
	}
	r, err := s.rights(ctx, true)
	if err != nil {
		return err
	}
	for {
		expired, err := rs.ExpiredReservations(ctx, s.now().Add(-s.opts.FinishTimeout), 100)
		if err != nil {
			return err
		}
		progress := false
		for _, res := range expired {
			_, err := s.repo.GetAttachment(ctx, res.AttachmentID)
			switch {
			case err == nil: // completed; only the reservation is left
			case !errors.Is(err, driver.ErrNotFound):
				return err
			case !s.mayDelete(ctx, r, res.Key):
			default:
				if err := s.deleteObject(ctx, res.Key); err != nil {
					rep.Failed++
					continue
				}
			}
			if err := rs.DeleteReservation(ctx, res.ID); err != nil {
				return err
			}
			rep.Expired++
			progress = true
		}
		if len(expired) < 100 || !progress {
			return nil
		}
	}
}
