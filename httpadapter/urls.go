package httpadapter

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/parleychat/parley/messaging"
)

// baseURL returns the absolute URL under which /v1 is served for r, with no
// trailing slash: Options.BaseURL, or one derived from the request.
func (a *api) baseURL(r *http.Request) string {
	if a.base != "" {
		return a.base
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	} else if p := r.Header.Get("X-Forwarded-Proto"); p != "" {
		p, _, _ = strings.Cut(p, ",")
		if strings.EqualFold(strings.TrimSpace(p), "https") {
			scheme = "https"
		}
	}
	return scheme + "://" + a.host(r) + mountPrefix(r)
}

// host returns the request's Host, or Options.Hosts[0] when Hosts is set
// and does not hold it.
func (a *api) host(r *http.Request) string {
	if len(a.hosts) == 0 {
		return r.Host
	}
	for _, h := range a.hosts {
		if strings.EqualFold(h, r.Host) {
			return r.Host
		}
	}
	return a.hosts[0]
}

// basePathOf returns the path prefix under which /v1 is served for r.
func (a *api) basePathOf(r *http.Request) string {
	if a.base != "" {
		return a.basePath
	}
	return mountPrefix(r)
}

// mountPrefix is the part of the request's path that was stripped before
// the handler saw it: r.RequestURI's path minus r.URL's.
func mountPrefix(r *http.Request) string {
	ru := r.RequestURI
	if i := strings.IndexByte(ru, '?'); i >= 0 {
		ru = ru[:i]
	}
	if ru == "" {
		return ""
	}
	if ru[0] != '/' { // absolute-form request target
		u, err := url.Parse(ru)
		if err != nil {
			return ""
		}
		ru = u.EscapedPath()
	}
	p := r.URL.EscapedPath()
	if len(ru) > len(p) && strings.HasSuffix(ru, p) {
		return strings.TrimRight(ru[:len(ru)-len(p)], "/")
	}
	return ""
}

// location returns the Location of a new resource: the path of
// /v1/<collection>/<id> under the mount prefix.
func (a *api) location(r *http.Request, collection, id string) string {
	return a.basePathOf(r) + "/v1/" + collection + "/" + id
}

// urls fills in file_url of attachments, computing the base once per
// response.
type urls struct {
	a      *api
	r      *http.Request
	caller messaging.Contact
	base   string
}

func (a *api) urls(r *http.Request, caller messaging.Contact) *urls {
	return &urls{a: a, r: r, caller: caller}
}

// fileURL returns the URL of the attachment's bytes: a signed URL of the
// bucket when configured and possible, else the handler's own route
// <base>/v1/attachments/<id>/<escaped filename>.
func (u *urls) fileURL(ctx context.Context, att messaging.Attachment) string {
	a := u.a
	if a.signExpiry > 0 && !a.cannotSign.Load() {
		s, err := a.files.SignedURL(ctx, u.caller, att, a.signExpiry)
		if err == nil {
			return s
		}
		if errors.Is(err, messaging.ErrUnimplemented) {
			a.cannotSign.Store(true)
		} else {
			a.log.WarnContext(ctx, "httpadapter: cannot sign a file URL; serving it from the API", "attachment", att.ID, "err", err)
		}
	}
	if u.base == "" {
		u.base = a.baseURL(u.r)
	}
	return u.base + "/v1/attachments/" + att.ID + "/" + url.PathEscape(att.Filename)
}

// attachment returns att as the API shows it.
func (u *urls) attachment(ctx context.Context, att messaging.Attachment) attachmentJSON {
	return attachmentJSON{att, u.fileURL(ctx, att)}
}

// message returns m as the API shows it.
func (u *urls) message(ctx context.Context, m messaging.Message) messageJSON {
	x := messageJSON{m: m, fileURLs: make([]string, len(m.Attachments))}
	for i, att := range m.Attachments {
		x.fileURLs[i] = u.fileURL(ctx, att)
	}
	return x
}

// conversation returns c as the API shows it.
func (u *urls) conversation(ctx context.Context, c messaging.Conversation) conversationJSON {
	x := conversationJSON{c: c}
	if c.LastMessage != nil {
		m := u.message(ctx, *c.LastMessage)
		x.last = &m
	}
	return x
}
