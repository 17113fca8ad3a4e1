package httpadapter

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"time"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/messaging"
)

// maxFieldBytes bounds each non-file field of an upload.
const maxFieldBytes = 64 << 10

func (a *api) listAttachments(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	ctx, u := r.Context(), a.urls(r, caller)
	serveList(a, w, r, func(conversationID string, o messaging.ListOptions) (messaging.Page[messaging.Attachment], error) {
		return a.files.Attachments(ctx, caller, conversationID, o)
	}, func(att messaging.Attachment) attachmentJSON { return u.attachment(ctx, att) })
}

// createAttachment streams a multipart/form-data upload into the blob
// store. The fields conversation_id and message_id, when given, must come
// before the one part named "file"; the parts after it are read (and
// checked) before the upload is committed, so a rejected request stores
// nothing.
func (a *api) createAttachment(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	idem, err := idempotency(r, new(bool))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		a.writeError(w, r, unsupportedMediaType("upload a file with Content-Type: multipart/form-data"))
		return
	}
	limit := a.files.MaxUploadBytes() + a.maxBody
	if r.ContentLength > limit {
		a.writeError(w, r, a.uploadTooLarge())
		return
	}
	boundary := params["boundary"]
	if boundary == "" {
		a.writeError(w, r, bodyInvalid("malformed multipart/form-data body: no boundary"))
		return
	}
	// mime/multipart reads through a 4 KiB bufio.Reader of its own: in front
	// of it, a larger one turns the socket reads of a large upload from
	// 4 KiB into uploadReadSize (the copies between the two are cheap next
	// to a system call each).
	body := bufio.NewReaderSize(http.MaxBytesReader(w, r.Body, limit), uploadReadSize)
	mr := newFormParts(body, boundary)
	var fields uploadFields
	for parts := 0; ; parts++ {
		if parts == maxPairs {
			a.writeError(w, r, errTooManyPairs)
			return
		}
		part, err := mr.NextPart()
		if err == io.EOF {
			a.writeError(w, r, missing("file"))
			return
		}
		if err != nil {
			a.writeError(w, r, a.uploadBodyError(err))
			return
		}
		if part.FormName() == "file" {
			a.upload(w, r, caller, mr, part, fields, idem)
			return
		}
		if err := fields.read(part, false); err != nil {
			a.writeError(w, r, a.uploadBodyError(err))
			return
		}
	}
}

// uploadReadSize is the size of the reads of an upload's body from the
// connection.
const uploadReadSize = 128 << 10

// uploadFields are the non-file fields of an upload.
type uploadFields struct {
	conversationID, messageID string
	hasConv, hasMsg           bool
}

// read reads a non-file part; afterFile rejects the fields that must come
// before the file, and a second file. Unknown fields are ignored.
func (f *uploadFields) read(part *multipart.Part, afterFile bool) error {
	name := part.FormName()
	var dst *string
	var seen *bool
	switch name {
	case "file":
		return badParam("file", "exactly one file part is allowed")
	case "conversation_id":
		dst, seen = &f.conversationID, &f.hasConv
	case "message_id":
		dst, seen = &f.messageID, &f.hasMsg
	default:
		_, err := io.Copy(io.Discard, part)
		return err
	}
	if afterFile {
		return badParam(name, name+" must come before the file part")
	}
	if *seen {
		return twice(name)
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(part, maxFieldBytes+1))
	if err != nil {
		return err
	}
	if n > maxFieldBytes {
		return badParam(name, name+" is too long")
	}
	*dst, *seen = buf.String(), true
	return nil
}

func (a *api) uploadTooLarge() error {
	return &messaging.Error{Kind: messaging.ErrTooLarge, Param: "file",
		Message: "the file is larger than the limit of " + strconv.FormatInt(a.files.MaxUploadBytes(), 10) + " bytes"}
}

// uploadBodyError turns a failure to read an upload's body into a 413 (the
// body passed its limit), the rejection itself when it is one, or a 400.
func (a *api) uploadBodyError(err error) error {
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return a.uploadTooLarge()
	}
	var ke *messaging.Error
	var he *httpError
	if errors.As(err, &ke) || errors.As(err, &he) {
		return err
	}
	return bodyInvalid("the upload body cannot be read or parsed")
}

// fileBody is the file part as the Service reads it. At the end of the part
// it reads the rest of the multipart body, so that a trailing part that is
// rejected (a second file, a late conversation_id) or a malformed end fails
// the read, and with it the upload, before anything is committed.
type fileBody struct {
	part   *multipart.Part
	mr     *formParts
	fields *uploadFields
	done   bool
	err    error
}

func (b *fileBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.done {
		return 0, io.EOF
	}
	n, err := b.part.Read(p)
	if err == io.EOF {
		if err := b.finish(); err != nil {
			b.err = err
			return n, err
		}
		b.done = true
		return n, io.EOF
	}
	if err != nil {
		b.err = err
	}
	return n, err
}

// finish reads the parts after the file.
func (b *fileBody) finish() error {
	for {
		part, err := b.mr.NextPart()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := b.fields.read(part, true); err != nil {
			return err
		}
	}
}

// emptyTarget refuses a message_id or conversation_id given empty (a
// conversation_id beside a message_id is the message's): an upload's or
// a reservation's, which would otherwise be filed nowhere.
func emptyTarget(hasConv bool, conv string, hasMsg bool, msg string) error {
	switch {
	case hasMsg && msg == "":
		return badParam("message_id", "message_id must not be empty")
	case !hasMsg && hasConv && conv == "":
		return badParam("conversation_id", "conversation_id must not be empty")
	}
	return nil
}

func (a *api) upload(w http.ResponseWriter, r *http.Request, caller messaging.Contact, mr *formParts, part *multipart.Part, fields uploadFields, idem messaging.Idempotency) {
	ctx := r.Context()
	name := part.FileName()
	if name == "" {
		a.writeError(w, r, badParam("file", "the file part has no filename"))
		return
	}
	body := &fileBody{part: part, mr: mr, fields: &fields}
	u := attachments.Upload{
		Filename:       name,
		ContentType:    part.Header.Get("Content-Type"),
		ConversationID: fields.conversationID,
		Body:           body,
		Idempotency:    idem,
	}
	if err := emptyTarget(fields.hasConv, fields.conversationID, fields.hasMsg, fields.messageID); err != nil {
		a.writeError(w, r, err)
		return
	}
	u.MessageID = fields.messageID
	att, err := a.files.Upload(ctx, caller, u)
	replayed := idem.Replayed != nil && *idem.Replayed
	if body.err != nil {
		// The body, not the Service, failed; the Service stored nothing.
		// (A replay never discards: the attachment is the first upload's.)
		if err == nil && !replayed {
			a.discard(ctx, caller, att)
		}
		a.writeError(w, r, a.uploadBodyError(body.err))
		return
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if !body.done && !replayed {
		// The store stopped reading at the end of the file part; check the
		// rest now and undo the upload if it is rejected.
		if ferr := body.finish(); ferr != nil {
			a.discard(ctx, caller, att)
			a.writeError(w, r, a.uploadBodyError(ferr))
			return
		}
	}
	markReplayed(w, replayed)
	w.Header().Set("Location", a.location(r, "attachments", att.ID))
	writeJSON(w, http.StatusCreated, a.urls(r, caller).attachment(ctx, att))
}

// discardTimeout bounds the removal of a rejected upload.
const discardTimeout = 30 * time.Second

// discard removes an attachment whose request was rejected after all.
func (a *api) discard(ctx context.Context, caller messaging.Contact, att messaging.Attachment) {
	// Not canceled with the request, but bounded: a backend that does not
	// answer leaves the file to Reconcile rather than hold the handler.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), discardTimeout)
	defer cancel()
	if err := a.files.Delete(dctx, caller, att.ID); err != nil {
		a.log.ErrorContext(ctx, "httpadapter: cannot remove the attachment of a rejected upload", "attachment", att.ID, "err", err)
	}
}

func (a *api) getAttachment(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	ctx := r.Context()
	att, err := a.files.Get(ctx, caller, r.PathValue("id"))
	serveOne(a, w, r, att, err, func(att messaging.Attachment) attachmentJSON { return a.urls(r, caller).attachment(ctx, att) })
}

func (a *api) renameAttachment(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	var replayed bool
	idem, in, err := a.keyedInput(w, r, &replayed)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	name, ok, err := in.str("filename")
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if !ok {
		a.writeError(w, r, missing("filename"))
		return
	}
	ctx := r.Context()
	att, err := a.files.Update(ctx, caller, r.PathValue("id"), attachments.Update{Filename: &name, Idempotency: idem})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	markReplayed(w, replayed)
	writeJSON(w, http.StatusOK, a.urls(r, caller).attachment(ctx, att))
}

func (a *api) deleteAttachment(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	id := r.PathValue("id")
	if err := a.files.Delete(r.Context(), caller, id); err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, deleted{ID: id, Object: "attachment", Deleted: true})
}
