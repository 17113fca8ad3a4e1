package httpadapter

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/messaging"
)

// Options configure the handler. A nil *Options means all defaults, which
// include no Authenticator: every request is then answered 401.
type Options struct {
	// Authenticator identifies the caller of each request, whatever its
	// path. The handler then records the caller's activity
	// (messaging.Service.Touch, which moves last_active_at at most once a
	// minute); a failure there is logged and does not fail the request.
	// Default: none, and every request is a 401.
	Authenticator Authenticator

	// CrossOriginProtection refuses unsafe requests (POST, PUT, DELETE, …)
	// that a browser sends from another origin, with a 403
	// permission_error. It is asked about every request except one that
	// carries a bearer token and no cookie, and before the Authenticator,
	// so that a forged request reaches neither the host's sessions nor the
	// services.
	//
	// Why always, and why not for bearer tokens: a browser attaches
	// cookies (and HTTP Basic credentials) to a request by itself, also to
	// one that a page of another site makes it send, so a host that
	// authenticates by cookie is open to cross-site request forgery unless
	// such requests are refused. A browser never attaches a bearer token by
	// itself, so a request that carries one was made by a client that holds
	// the token, and is served from any origin (a single-page app on
	// another host, with the host's CORS). The handler does not need to
	// know how the Authenticator works: requests that hold no bearer token
	// are protected whatever it reads, and non-browser clients (which send
	// neither Sec-Fetch-Site nor Origin) are not affected.
	//
	// Default: http.NewCrossOriginProtection(), which accepts same-origin
	// requests only. Set one with AddTrustedOrigin to accept cookie
	// requests from a front end on another origin.
	CrossOriginProtection *http.CrossOriginProtection

	// BaseURL is the absolute URL at which the handler's /v1 is reachable,
	// without the /v1, e.g. "https://chat.example.com/api". file_url values
	// start with it, and Location headers with its path. Default: derived
	// from each request: the scheme is https when the connection is TLS or
	// X-Forwarded-Proto says "https" (trusted, since it only changes URLs
	// sent back to the same client), else http; the host is r.Host; the
	// path prefix is the part of r.RequestURI before r.URL.Path (so mounting
	// with http.StripPrefix works). A derived URL follows what the client
	// sent in Host and X-Forwarded-Proto: the answer goes back to that
	// client, but a URL it makes may reach others (a message's file_url,
	// read by everyone in the conversation, is built from the request of
	// whoever reads it; a shared cache may keep it), so set BaseURL, or
	// Hosts, when the handler is reachable under names you do not choose.
	// Set it too when a proxy rewrites hosts or paths. It must be an
	// absolute http or https URL without query or fragment, or New fails.
	BaseURL string

	// Hosts, when BaseURL is empty, are the host names (as in the Host
	// header, with the port if not the scheme's) under which URLs are
	// derived from requests; a request for any other Host gets URLs of
	// Hosts[0]. Default: none, and every Host is taken as it comes.
	Hosts []string

	// SignedURLExpiry, when > 0 and the blob store can sign URLs
	// (driver.URLSigner), makes file_url a signed URL of the bucket
	// valid for that long. Otherwise file_url is the handler's own
	// authenticated route /v1/attachments/{id}/{filename}. Default: 0.
	SignedURLExpiry time.Duration

	// DownloadRedirectExpiry, when > 0 and the blob store can sign URLs,
	// makes a GET of a file on the handler's own route (file_url when
	// SignedURLExpiry is 0) answer 302 Found to a signed URL of the
	// bucket valid for that long, with the file's Content-Type and
	// Content-Disposition, so that the bytes go from the bucket to the
	// client while the route still checks the caller on every request.
	// Where the store cannot sign, the route serves the bytes itself.
	// Default: 0.
	DownloadRedirectExpiry time.Duration

	// MaxBodyBytes is the largest body of a request other than an upload;
	// a larger one is a 413. Default: 1 MiB. Uploads are limited by the
	// attachments Service's MaxUploadBytes (plus MaxBodyBytes for the
	// multipart framing and the other fields).
	MaxBodyBytes int64

	// Limit, when set, is asked before every authenticated request whether
	// the caller may go on, and about every request whose credentials the
	// Authenticator refused, with a zero Contact (ID ""), so that a limiter
	// by client address can throttle token guessing. A refusal (ok false)
	// is answered 429 rate_limit_error with a Retry-After of retryAfter
	// (rounded up to whole seconds, at least 1), instead of the 401 for
	// refused credentials. Plug in any limiter, such as
	// golang.org/x/time/rate per caller or per address. Default: none.
	Limit func(r *http.Request, caller messaging.Contact) (retryAfter time.Duration, ok bool)

	// Events, when true, serves GET /v1/events from the Service's events
	// Feed (messaging.Service.Events): a Server-Sent Events stream of the
	// caller's events, or a list of past ones. Default: false, and
	// /v1/events is an unknown path.
	Events bool

	// EventHeartbeat is how long an event stream stays silent before it
	// gets a comment line, so that proxies and clients see it alive.
	// Default: 15 seconds.
	EventHeartbeat time.Duration

	// MaxStreamsPerCaller is the most event streams (GET /v1/events with
	// Accept: text/event-stream) one caller may hold open at once on this
	// handler; one more is answered 429 rate_limit_error, code
	// too_many_streams, with Retry-After. Default: 10.
	//
	// The count is this handler's own, in memory: with several instances
	// behind a load balancer a caller may hold this many streams on each
	// (the API's "10 per caller" holds per instance). A host that needs
	// one count across instances limits streams in front of the handlers
	// (at its proxy).
	MaxStreamsPerCaller int

	// MaxStreams is the most event streams this handler holds open at
	// once, of all callers; one more is answered as beyond
	// MaxStreamsPerCaller. Default: 10,000.
	MaxStreams int

	// Logger receives unexpected errors (with the request id sent to the
	// client) and failures that do not fail a request. Default:
	// slog.Default().
	Logger *slog.Logger
}

// validate fills in the defaults and checks the options.
func (o *Options) validate() error {
	if o.CrossOriginProtection == nil {
		o.CrossOriginProtection = http.NewCrossOriginProtection()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 1 << 20
	}
	if o.EventHeartbeat <= 0 {
		o.EventHeartbeat = defaultHeartbeat
	}
	if o.MaxStreamsPerCaller <= 0 {
		o.MaxStreamsPerCaller = defaultMaxStreamsPerCaller
	}
	if o.MaxStreams <= 0 {
		o.MaxStreams = defaultMaxStreams
	}
	for _, h := range o.Hosts {
		if h == "" || strings.ContainsAny(h, "/?#@ ") {
			return fmt.Errorf("httpadapter: Options.Hosts holds %q, which is not a host name", h)
		}
	}
	if o.BaseURL != "" {
		u, err := url.Parse(o.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("httpadapter: Options.BaseURL %q is not an absolute http or https URL without query or fragment", o.BaseURL)
		}
	}
	return nil
}

// api is the handler's state, shared by all requests.
type api struct {
	msgs       *messaging.Service
	files      *attachments.Service
	auth       Authenticator
	csrf       *http.CrossOriginProtection
	log        *slog.Logger
	maxBody    int64
	signExpiry time.Duration
	redirect   time.Duration // Options.DownloadRedirectExpiry
	cannotSign atomic.Bool   // the blob store answered ErrUnimplemented once
	limit      func(*http.Request, messaging.Contact) (time.Duration, bool)
	events     *events.Feed
	heartbeat  time.Duration
	streams    *streams    // the open event streams
	rendered   renderCache // JSON of recent events
	hosts      []string    // Options.Hosts

	base     string // Options.BaseURL without a trailing slash; "" to derive
	basePath string // the path of base
	mux      *http.ServeMux
	notFound http.Handler
}

// New returns an http.Handler that serves the /v1 API over svc and its
// files Service and events Feed (the routes are listed in README.md). Every GET route also answers HEAD;
// any other path is a 404 and any other method a 405 with an Allow header,
// both as JSON error objects, and a path that is not clean (//, . or ..
// segments) is a 404 rather than a redirect. It expects request paths that
// start with /v1; mount it under a prefix with http.StripPrefix:
//
//	api, err := httpadapter.New(svc, opts)
//	…
//	mux.Handle("/api/", http.StripPrefix("/api", api)) // the API at /api/v1/…
//
// New fails if svc is nil or the options are not valid (a malformed
// BaseURL).
func New(svc *messaging.Service, opts *Options) (http.Handler, error) {
	if svc == nil {
		return nil, errors.New("httpadapter: New needs a messaging Service")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	a := &api{
		msgs:       svc,
		files:      svc.Files(),
		auth:       o.Authenticator,
		csrf:       o.CrossOriginProtection,
		log:        o.Logger,
		maxBody:    o.MaxBodyBytes,
		signExpiry: o.SignedURLExpiry,
		redirect:   o.DownloadRedirectExpiry,
		limit:      o.Limit,
		events:     eventsOf(svc, o.Events),
		heartbeat:  o.EventHeartbeat,
		streams:    newStreams(o.MaxStreamsPerCaller, o.MaxStreams),
		hosts:      o.Hosts,
	}
	if o.BaseURL != "" {
		u, _ := url.Parse(o.BaseURL) // checked by validate
		a.base = strings.TrimRight(o.BaseURL, "/")
		a.basePath = strings.TrimRight(u.EscapedPath(), "/")
	}

	a.mux = http.NewServeMux()
	a.notFound = a.route(nil)
	a.mux.Handle("/", a.notFound)
	for _, rt := range a.routes() {
		a.mux.Handle(rt.pattern, a.route(rt.methods))
	}
	a.mux.Handle(openAPIPath, openAPIHandler{a})
	return a, nil
}

// ServeHTTP answers a path that is not in canonical form (// . ..) with a
// 404, as it answers unknown paths, rather than the ServeMux's plain-text
// redirect; everything else goes to the routes. Every answer carries
// X-Content-Type-Options: nosniff, so that no browser reads a JSON answer
// (which may quote a client's text) as another type.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header()["X-Content-Type-Options"] = noSniff
	if p := r.URL.Path; p != "" && p[0] != '/' {
		// Mounted with http.StripPrefix("/prefix/", …): put the slash back.
		r2 := *r
		u := *r.URL
		u.Path = "/" + p
		if u.RawPath != "" {
			u.RawPath = "/" + u.RawPath
		}
		r2.URL = &u
		r = &r2
	}
	if !isClean(r.URL.Path) {
		a.notFound.ServeHTTP(w, r)
		return
	}
	a.mux.ServeHTTP(w, r)
}

// noSniff is the value of X-Content-Type-Options on every answer; net/http
// never changes a header's value slice in place.
var noSniff = []string{"nosniff"}

func isClean(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}

// routeDef is a path of /v1 and the methods it serves.
type routeDef struct {
	pattern string
	methods []method
}

// routes lists the authenticated paths of /v1 (all but openAPIPath), as
// registered with the ServeMux and described in openapi.json.
func (a *api) routes() []routeDef {
	rs := []routeDef{
		{"/v1/messages", []method{
			{http.MethodGet, a.listMessages},
			{http.MethodPost, a.createMessage},
		}},
		{"/v1/messages/search", []method{
			{http.MethodGet, a.searchMessages},
		}},
		{"/v1/messages/{id}", []method{
			{http.MethodGet, a.getMessage},
			{http.MethodPut, a.updateMessage},
			{http.MethodDelete, a.deleteMessage},
		}},
		{"/v1/messages/{id}/revisions", []method{
			{http.MethodGet, a.listRevisions},
		}},
		{"/v1/messages/{id}/reactions/{name}", []method{
			{http.MethodGet, a.listReactors},
			{http.MethodDelete, a.removeReaction},
		}},
		{"/v1/threads", []method{
			{http.MethodGet, a.listThreads},
		}},
		{"/v1/threads/{id}", []method{
			{http.MethodGet, a.getThread},
			{http.MethodPut, a.updateThread},
		}},
		{"/v1/conversations", []method{
			{http.MethodGet, a.listConversations},
		}},
		{"/v1/conversations/{id}", []method{
			{http.MethodGet, a.getConversation},
			{http.MethodPut, a.updateConversation},
		}},
		{"/v1/attachments", []method{
			{http.MethodGet, a.listAttachments},
			{http.MethodPost, a.createAttachment},
		}},
		{"/v1/attachments/{id}", []method{
			{http.MethodGet, a.getAttachment},
			{http.MethodPut, a.renameAttachment},
			{http.MethodDelete, a.deleteAttachment},
		}},
		{"/v1/attachments/{id}/{filename}", []method{
			{http.MethodGet, a.serveFile},
		}},
		{"/v1/attachments/{id}/thumbnail", []method{
			{http.MethodGet, a.serveThumbnail},
		}},
		{"/v1/uploads", []method{
			{http.MethodPost, a.createUpload},
		}},
		{"/v1/uploads/{id}/content", []method{
			{http.MethodPut, a.putUploadContent},
		}},
		{"/v1/uploads/{id}/complete", []method{
			{http.MethodPost, a.completeUpload},
		}},
	}
	if a.events != nil {
		rs = append(rs, routeDef{"/v1/events", []method{
			{http.MethodGet, a.getEvents},
		}}, routeDef{"/v1/conversations/{id}/typing", []method{
			{http.MethodPost, a.postTyping},
		}})
	}
	return rs
}

// handlerFunc serves one method of a route for an authenticated caller.
type handlerFunc func(w http.ResponseWriter, r *http.Request, caller messaging.Contact)

type method struct {
	name string
	h    handlerFunc
}

// route serves the methods of one path; a nil list makes the JSON 404 of
// unknown paths. Every request is checked for its origin and authenticated
// first.
type route struct {
	a       *api
	methods []method
	allow   string
}

func (a *api) route(methods []method) *route {
	var names []string
	for _, m := range methods {
		names = append(names, m.name)
		if m.name == http.MethodGet {
			names = append(names, http.MethodHead)
		}
	}
	return &route{a: a, methods: methods, allow: strings.Join(names, ", ")}
}

func (rt *route) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The caller and the handler are found in admit, whose frame is gone
	// when the handler runs: an event stream waits below this frame for
	// as long as it is open (see streamEvents).
	var caller messaging.Contact
	if h := rt.admit(w, r, &caller); h != nil {
		h(w, r, caller)
	}
}

// admit checks the request's origin, authenticates its caller into
// *caller and asks the limiter, and returns the handler of its method;
// nil when it answered the request itself.
func (rt *route) admit(w http.ResponseWriter, r *http.Request, caller *messaging.Contact) handlerFunc {
	a := rt.a
	if err := a.checkOrigin(r); err != nil {
		a.writeError(w, r, err)
		return nil
	}
	c, err := a.authenticate(r)
	if err != nil {
		// Refused credentials go to the limiter too (with no caller), so
		// that guessing tokens can be throttled.
		if messaging.KindOf(err) != messaging.ErrUnauthenticated || !a.limited(w, r, messaging.Contact{}) {
			a.writeError(w, r, err)
		}
		return nil
	}
	if a.limited(w, r, c) {
		return nil
	}
	if rt.methods == nil {
		a.writeError(w, r, newHTTPError(http.StatusNotFound, typeNotFound, codeNotFound,
			"unknown path: "+r.Method+" "+r.URL.Path))
		return nil
	}
	m := r.Method
	if m == http.MethodHead {
		m = http.MethodGet
	}
	for _, h := range rt.methods {
		if h.name == m {
			*caller = c
			return h.h
		}
	}
	w.Header().Set("Allow", rt.allow)
	a.writeError(w, r, newHTTPError(http.StatusMethodNotAllowed, typeInvalidRequest, codeMethod,
		"method "+r.Method+" is not allowed on this path; allowed: "+rt.allow))
	return nil
}

// limited asks Options.Limit about the request and, when it refuses,
// answers 429 with Retry-After and reports true.
func (a *api) limited(w http.ResponseWriter, r *http.Request, caller messaging.Contact) bool {
	if a.limit == nil {
		return false
	}
	after, ok := a.limit(r, caller)
	if ok {
		return false
	}
	secs := max(1, int64((after+time.Second-1)/time.Second))
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	a.writeError(w, r, newHTTPError(http.StatusTooManyRequests, typeRateLimit, codeRateLimit,
		"too many requests; retry after "+strconv.FormatInt(secs, 10)+" s"))
	return true
}

// eventsOf returns the Feed of svc when the events are served, else nil.
func eventsOf(svc *messaging.Service, served bool) *events.Feed {
	if !served {
		return nil
	}
	return svc.Events()
}
