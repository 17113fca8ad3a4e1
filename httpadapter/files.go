package httpadapter

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/messaging"
)

// serveFile serves an attachment's bytes at
// /v1/attachments/{id}/{filename}. The id decides which file; the file
// name in the path must be the attachment's current name, and a request
// for any other name of an attachment the caller may see (the old file_url
// after a rename) is answered 308 Permanent Redirect to the current one,
// with the attachment in the body, as GET /v1/attachments/{id} shows it.
// The redirect is not cached (Cache-Control: no-store), since a later
// rename may give the old name back. An id the caller may not see is a 404
// whatever the name, as before. Range and conditional requests (ETag: the
// SHA-256; Last-Modified: the upload time) are answered by
// http.ServeContent.
func (a *api) serveFile(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	ctx := r.Context()
	id := r.PathValue("id")
	if a.redirect > 0 && a.redirectToBucket(w, r, caller) {
		return
	}
	att, body, err := a.files.OpenNamed(ctx, caller, id, r.PathValue("filename"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if body == nil { // another name: nothing was opened
		a.redirectToFile(w, r, caller, att)
		return
	}
	defer body.Close()
	h := w.Header()
	ctype := att.FileType
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	h.Set("Content-Type", ctype)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "private")
	h.Set("Content-Disposition", attachments.ContentDisposition(ctype, att.Filename))
	// Whatever a browser makes of the file, it runs no script and has no
	// access to the API's origin.
	h.Set("Content-Security-Policy", "sandbox")
	if att.SHA256 != "" {
		h.Set("ETag", `"`+att.SHA256+`"`)
	}
	if tooManyRanges(r.Header.Values("Range")) {
		// A multipart answer of thousands of ranges costs far more than
		// the file: serve the file whole, as a server may (RFC 9110, 14.2).
		r.Header.Del("Range")
	} else if rng, ok := dropEmptySuffixes(r.Header.Get("Range")); ok {
		if rng == "" {
			a.writeError(w, r, newHTTPError(http.StatusRequestedRangeNotSatisfiable, typeInvalidRequest, codeRange, "the requested range cannot be satisfied"))
			return
		}
		r.Header.Set("Range", rng)
	}
	http.ServeContent(&fileErrorWriter{ResponseWriter: w, a: a, r: r}, r, "", att.CreatedAt, body)
}

// serveThumbnail serves a preview of an image attachment at
// /v1/attachments/{id}/thumbnail?size=small|large (attachments.Service.Preview),
// with conditional requests (ETag: the file's SHA-256 and the size). A
// request without size is one for the file of an attachment named
// "thumbnail", whose file_url this path is too (serveFile).
func (a *api) serveThumbnail(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	q := r.URL.Query()
	if !q.Has("size") {
		r.SetPathValue("filename", "thumbnail")
		a.serveFile(w, r, caller)
		return
	}
	att, p, err := a.files.Preview(r.Context(), caller, r.PathValue("id"), q.Get("size"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	defer p.Body.Close()
	h := w.Header()
	h.Set("Content-Type", p.Type)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "private")
	h.Set("Content-Security-Policy", "sandbox")
	h.Set("ETag", `"`+att.SHA256+"-"+p.Size+`"`)
	r.Header.Del("Range") // a preview is served whole
	http.ServeContent(&fileErrorWriter{ResponseWriter: w, a: a, r: r}, r, "", att.CreatedAt, p.Body)
}

// redirectToBucket answers a request for an attachment's file with a 302
// to a signed URL of its bytes in the bucket (Options.DownloadRedirectExpiry),
// or an error, and reports whether it answered: it does not when the
// store cannot sign, and the route serves the bytes.
func (a *api) redirectToBucket(w http.ResponseWriter, r *http.Request, caller messaging.Contact) bool {
	if a.cannotSign.Load() {
		return false
	}
	ctx := r.Context()
	att, err := a.files.Get(ctx, caller, r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return true
	}
	if att.Filename != r.PathValue("filename") {
		a.redirectToFile(w, r, caller, att)
		return true
	}
	u, err := a.files.SignedURL(ctx, caller, att, a.redirect)
	if err != nil {
		if errors.Is(err, messaging.ErrUnimplemented) {
			a.cannotSign.Store(true)
		} else {
			a.log.WarnContext(ctx, "httpadapter: cannot sign a file URL; serving the file from the API", "attachment", att.ID, "err", err)
		}
		return false
	}
	h := w.Header()
	h.Set("Location", u)
	h.Set("Cache-Control", "no-store") // the signed URL expires
	w.WriteHeader(http.StatusFound)
	return true
}

// redirectToFile answers a request for an attachment's file under a name
// that is not its current one with a 308 to the URL of the current name on
// this route (not a signed URL: the request came with the caller's
// credentials, and a client that follows the redirect sends them again to
// the same origin).
func (a *api) redirectToFile(w http.ResponseWriter, r *http.Request, caller messaging.Contact, att messaging.Attachment) {
	h := w.Header()
	h.Set("Location", a.baseURL(r)+"/v1/attachments/"+att.ID+"/"+url.PathEscape(att.Filename))
	h.Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusPermanentRedirect, a.urls(r, caller).attachment(r.Context(), att))
}

// maxRanges is the most byte ranges a request is answered with; beyond it
// the whole file is served.
const maxRanges = 16

// tooManyRanges reports whether a Range header asks for more than
// maxRanges ranges (or comes more than once).
func tooManyRanges(vals []string) bool {
	return len(vals) > 1 || len(vals) == 1 && strings.Count(vals[0], ",") >= maxRanges
}

// dropEmptySuffixes removes the ranges "-0" (the last zero bytes, which
// RFC 9110 calls unsatisfiable, and http.ServeContent would answer with a
// Content-Range of a negative length) from a bytes Range header. It
// reports whether it removed any; "" then means none is left.
func dropEmptySuffixes(h string) (string, bool) {
	spec, ok := strings.CutPrefix(h, "bytes=")
	if !ok || !strings.Contains(spec, "-") {
		return h, false
	}
	var keep []string
	dropped := false
	for r := range strings.SplitSeq(spec, ",") {
		// As net/http reads a range: "start-end", white space trimmed.
		start, end, ok := strings.Cut(strings.Trim(r, " \t"), "-")
		end = strings.Trim(end, " \t")
		if ok && strings.Trim(start, " \t") == "" && end != "" && end[0] != '-' {
			if n, err := strconv.ParseInt(end, 10, 64); err == nil && n == 0 {
				dropped = true
				continue
			}
		}
		keep = append(keep, r)
	}
	if !dropped {
		return h, false
	}
	if len(keep) == 0 {
		return "", true
	}
	return "bytes=" + strings.Join(keep, ","), true
}

// fileErrorWriter turns the plain-text errors of http.ServeContent (416,
// 412, 500) into the API's JSON error objects.
type fileErrorWriter struct {
	http.ResponseWriter
	a       *api
	r       *http.Request
	swallow bool
}

func (w *fileErrorWriter) WriteHeader(status int) {
	if status < 400 {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.swallow = true
	h := w.ResponseWriter.Header()
	h.Del("Content-Disposition")
	h.Del("ETag")
	h.Del("Cache-Control")
	var err error
	switch status {
	case http.StatusRequestedRangeNotSatisfiable:
		err = newHTTPError(status, typeInvalidRequest, codeRange, "the requested range cannot be satisfied")
	case http.StatusPreconditionFailed:
		err = newHTTPError(status, typeInvalidRequest, codePrecondition, "a precondition of the request failed")
	default:
		err = newHTTPError(http.StatusInternalServerError, typeAPI, codeInternal, internalErrorMessage)
	}
	w.a.writeError(w.ResponseWriter, w.r, err)
}

func (w *fileErrorWriter) Write(p []byte) (int, error) {
	if w.swallow {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// ReadFrom keeps the underlying writer's io.ReaderFrom fast path.
func (w *fileErrorWriter) ReadFrom(src io.Reader) (int64, error) {
	if w.swallow {
		return io.Copy(io.Discard, src)
	}
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(writerOnly{w.ResponseWriter}, src)
}

type writerOnly struct{ io.Writer }

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *fileErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
