package httpadapter

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/messaging"
)

// Direct uploads (attachments.Service.Reserve, PutContent, Complete):
// POST /v1/uploads reserves, the client sends the bytes to upload_url,
// POST /v1/uploads/{id}/complete makes the attachment.

// uploadJSON is an upload reservation as the API shows it.
type uploadJSON struct {
	ID            string            `json:"id"`
	Object        string            `json:"object"`
	UploadURL     string            `json:"upload_url"`
	UploadMethod  string            `json:"upload_method"`
	UploadHeaders map[string]string `json:"upload_headers"`
	ExpiresAt     int64             `json:"expires_at"`
}

// createUpload serves POST /v1/uploads: filename, file_size, file_type,
// sha256, and optional conversation_id and message_id, as a form or JSON.
func (a *api) createUpload(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	var replayed bool
	idem, in, err := a.keyedInput(w, r, &replayed)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	u := attachments.NewUpload{Idempotency: idem}
	var hasConv, hasMsg bool
	for _, f := range []struct {
		name     string
		v        *string
		required bool
		given    *bool
	}{
		{"filename", &u.Filename, true, nil},
		{"file_type", &u.ContentType, false, nil},
		{"sha256", &u.SHA256, true, nil},
		{"conversation_id", &u.ConversationID, false, &hasConv},
		{"message_id", &u.MessageID, false, &hasMsg},
	} {
		v, ok, err := in.str(f.name)
		if err == nil && !ok && f.required {
			err = missing(f.name)
		}
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		*f.v = v
		if f.given != nil {
			*f.given = ok
		}
	}
	if err = emptyTarget(hasConv, u.ConversationID, hasMsg, u.MessageID); err != nil {
		a.writeError(w, r, err)
		return
	}
	if u.FileSize, err = intParam(in, "file_size"); err != nil {
		a.writeError(w, r, err)
		return
	}
	res, err := a.files.Reserve(r.Context(), caller, u)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	markReplayed(w, replayed)
	writeJSON(w, http.StatusCreated, a.uploadOf(r, res))
}

// uploadOf returns res as the API shows it.
func (a *api) uploadOf(r *http.Request, res attachments.Reservation) uploadJSON {
	out := uploadJSON{ID: res.ID, Object: "upload", UploadURL: res.URL, UploadMethod: res.Method,
		UploadHeaders: res.Headers, ExpiresAt: res.ExpiresAt.Unix()}
	if out.UploadURL == "" {
		// The bucket cannot sign: the bytes come through this handler.
		out.UploadURL = a.baseURL(r) + "/v1/uploads/" + url.PathEscape(res.ID) + "/content"
	}
	if out.UploadHeaders == nil {
		out.UploadHeaders = map[string]string{}
	}
	return out
}

// intParam returns a required whole-number parameter: a JSON number, or
// a form field of decimal digits.
func intParam(in input, name string) (int64, error) {
	var s string
	if j, ok := in.(jsonInput); ok {
		raw, ok, err := j.get(name)
		if err != nil {
			return 0, err
		}
		if !ok {
			return 0, missing(name)
		}
		s = string(raw)
	} else {
		v, ok, err := in.str(name)
		if err != nil {
			return 0, err
		}
		if !ok {
			return 0, missing(name)
		}
		s = v
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || s[0] < '0' || s[0] > '9' { // no sign: not -0 nor +1
		return 0, badParam(name, name+" must be a whole number of bytes")
	}
	return n, nil
}

// putUploadContent serves PUT /v1/uploads/{id}/content: the bytes of a
// reserved upload, streamed to the bucket, for a bucket that cannot sign.
// 200 and the Upload when stored.
func (a *api) putUploadContent(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	body := http.MaxBytesReader(w, r.Body, a.files.MaxUploadBytes()+1)
	res, err := a.files.PutContent(r.Context(), caller, r.PathValue("id"), body)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a.uploadOf(r, res))
}

// completeUpload serves POST /v1/uploads/{id}/complete: 201 and the new
// Attachment.
func (a *api) completeUpload(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	var replayed bool
	// It takes no parameters, but a body it cannot take is a 415, as for
	// every write.
	idem, _, err := a.keyedInput(w, r, &replayed)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	att, err := a.files.Complete(ctx, caller, r.PathValue("id"), idem)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	markReplayed(w, replayed)
	w.Header().Set("Location", a.location(r, "attachments", att.ID))
	writeJSON(w, http.StatusCreated, a.urls(r, caller).attachment(ctx, att))
}
