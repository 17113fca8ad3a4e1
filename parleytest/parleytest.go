package parleytest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// Options configure a Server. A nil *Options means all defaults.
type Options struct {
	// Store, when set, is the in-memory storage to use, so that options
	// can name it: a Messaging Policy of messaging.MembersOnly().
	// Default: a new memstore.Store.
	Store *memstore.Store
	// Messaging are the options of the messaging Service (a Policy,
	// limits). Default: nil, the service's defaults.
	Messaging *messaging.Options
	// Attachments are the options of the attachments Service (the upload
	// limit), when Messaging.Files is nil. Default: nil, the service's
	// defaults.
	Attachments *attachments.Options
	// Events are the options of the events Feed, when Messaging.Events
	// is nil. Default: nil, the Feed's defaults.
	Events *events.Options
	// HTTP are the options of the adapter. When its Authenticator is nil,
	// the Server's callers' tokens authenticate requests; set one to test
	// the host's own authentication (the callers' tokens then count only
	// if it accepts them). Its Events is set: the Server serves
	// /v1/events. Default: nil, which means just those two.
	HTTP *httpadapter.Options
	// Setup, when set, runs once with the built services (msgs, with
	// msgs.Files() and msgs.Events()) before the server answers its first
	// request: it seeds what the test's requests rely on, such as the
	// contacts and memberships that the host's own Authenticator and a
	// Policy look up. Its error fails New (and NewServer). Default: none.
	Setup func(ctx context.Context, msgs *messaging.Service) error
}

// Server is a running /v1 API over in-memory storage, with the services
// behind it. Its fields are set by New and NewServer; do not change them.
type Server struct {
	// URL is the base URL of the server, such as "http://127.0.0.1:34567",
	// with no trailing slash; the API is at URL + "/v1".
	URL string
	// HTTP is the test server that serves the API.
	HTTP *httptest.Server
	// Handler is the adapter's http.Handler that HTTP serves.
	Handler http.Handler

	// Messages is the messaging Service behind the API.
	Messages *messaging.Service
	// Files is the attachments Service behind the API.
	Files *attachments.Service
	// Events is the Feed behind GET /v1/events. The services record an
	// event for every change.
	Events *events.Feed

	// Store is the in-memory Repository of the services and the Feed.
	Store *memstore.Store
	// Blobs is the in-memory bucket of the files.
	Blobs *memstore.BlobStore

	making  sync.Mutex // held by Caller while it adds a caller
	mu      sync.Mutex
	callers map[string]*Caller // by username
	tokens  map[string]*Caller
	closed  bool
}

// New starts a Server for the test and closes it when the test and its
// subtests end (tb.Cleanup). It fails the test if the options are not
// valid.
func New(tb testing.TB, opts *Options) *Server {
	tb.Helper()
	s, err := NewServer(opts)
	if err != nil {
		tb.Fatalf("parleytest.New: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// NewServer starts a Server outside a test (in a TestMain or an Example);
// the caller closes it with Close. It fails if the options are not valid.
func NewServer(opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	s := &Server{
		Store:   o.Store,
		Blobs:   memstore.NewBlobStore(),
		callers: make(map[string]*Caller),
		tokens:  make(map[string]*Caller),
	}
	if s.Store == nil {
		s.Store = memstore.New()
	}
	var mo messaging.Options
	if o.Messaging != nil {
		mo = *o.Messaging
	}
	if mo.Files == nil {
		mo.Files = o.Attachments
	}
	if mo.Events == nil {
		mo.Events = o.Events
	}
	msgs, err := messaging.New(context.Background(), s.Store, s.Blobs, &mo)
	if err != nil {
		return nil, fmt.Errorf("parleytest: %w", err)
	}
	s.Messages, s.Files, s.Events = msgs, msgs.Files(), msgs.Events()
	if o.Setup != nil {
		if err := o.Setup(context.Background(), msgs); err != nil {
			_ = msgs.Close()
			return nil, fmt.Errorf("parleytest: Setup: %w", err)
		}
	}

	var h httpadapter.Options
	if o.HTTP != nil {
		h = *o.HTTP
	}
	if h.Authenticator == nil {
		h.Authenticator = httpadapter.BearerToken(s.lookup)
	}
	h.Events = true
	s.Handler, err = httpadapter.New(s.Messages, &h)
	if err != nil {
		_ = msgs.Close()
		return nil, fmt.Errorf("parleytest: %w", err)
	}
	s.HTTP = httptest.NewServer(s.Handler)
	s.URL = s.HTTP.URL
	return s, nil
}

// Close ends the event streams, shuts the server down (waiting for the
// requests under way) and stops the Feed. It may be called more than once.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	// The Feed first: its Close ends the open event streams, which the
	// server would otherwise wait for.
	_ = s.Messages.Close()
	s.HTTP.Close()
}

// lookup is the bearer-token lookup of the default Authenticator.
func (s *Server) lookup(_ context.Context, token string) (messaging.Contact, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.tokens[token]
	if !ok {
		return messaging.Contact{}, messaging.ErrUnauthenticated
	}
	return c.Contact, nil
}

// Caller returns the caller with this username, storing it as a contact
// (with an id made by the service) and giving it a token on first use;
// later calls return the same Caller. It panics if the contact cannot be
// stored (a username of white space or brackets, or longer than 64
// characters).
func (s *Server) Caller(username string) *Caller {
	if c, ok := s.caller(username); ok {
		return c
	}
	// One new caller at a time, so that callers asked for at once (by
	// parallel subtests) get the same one.
	s.making.Lock()
	defer s.making.Unlock()
	if c, ok := s.caller(username); ok {
		return c
	}
	c, err := s.AddCaller(messaging.Contact{Username: username})
	if err != nil {
		panic(fmt.Sprintf("parleytest: Server.Caller(%q): %v", username, err))
	}
	return c
}

// caller returns the caller with this username, if there is one.
func (s *Server) caller(username string) (*Caller, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.callers[username]
	return c, ok
}

// AddCaller stores the contact (under its ID when set, as a host with user
// ids of its own does: see messaging.Service.SaveContact) and returns a
// caller with a new token, which Caller(c.Username) returns from then on.
// It fails as SaveContact does.
func (s *Server) AddCaller(c messaging.Contact) (*Caller, error) {
	saved, err := s.Messages.SaveContact(context.Background(), c)
	if err != nil {
		return nil, err
	}
	caller := &Caller{Contact: saved, Token: rand.Text(), server: s}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.callers[saved.Username] = caller
	s.tokens[caller.Token] = caller
	return caller, nil
}

// Caller is a contact of the Server with its bearer token.
type Caller struct {
	// Contact is the stored contact, the caller to pass to the services.
	Contact messaging.Contact
	// Token is the caller's bearer token.
	Token string

	server *Server
}

// url resolves path (such as "/v1/messages", or an absolute URL such as a
// file_url) against the server.
func (c *Caller) url(path string) string {
	if strings.HasPrefix(path, "http://") || strings.HasPrefix(path, "https://") {
		return path
	}
	return c.server.URL + path
}

// ours reports whether u is a URL of the server, to which the token may
// go.
func (c *Caller) ours(u *url.URL) bool {
	return strings.EqualFold(u.Scheme+"://"+u.Host, c.server.URL)
}

// NewRequest returns a request for path (such as "/v1/messages?limit=5",
// or an absolute URL such as a file_url), with the caller's token in its
// Authorization header when the request goes to the server. A URL of
// another host (a bucket's signed URL) gets no token: a signed URL is
// fetched without credentials.
func (c *Caller) NewRequest(method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequest(method, c.url(path), body)
	if err != nil {
		return nil, err
	}
	if c.ours(req.URL) {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	return req, nil
}

// Client returns an HTTP client that sends the caller's token with every
// request to the server that has no Authorization header of its own, and
// none to other hosts; it follows redirects.
func (c *Caller) Client() *http.Client {
	return &http.Client{Transport: &authTransport{c: c, next: c.server.HTTP.Client().Transport}}
}

type authTransport struct {
	c    *Caller
	next http.RoundTripper
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") == "" && t.c.ours(req.URL) {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+t.c.Token)
	}
	return t.next.RoundTrip(req)
}

// Call sends a request as the caller and decodes the JSON answer into
// into (unless into is nil). params go in the query string of a GET, HEAD
// or DELETE, and in a form body otherwise. An answer that is not a 2xx is
// an *Error.
//
//	var m struct{ ID, Message string }
//	err := alice.Call("POST", "/v1/messages", url.Values{"conversation_id": {"team"}, "message": {"hi"}}, &m)
func (c *Caller) Call(method, path string, params url.Values, into any) error {
	var body io.Reader
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodDelete:
		if len(params) > 0 {
			sep := "?"
			if strings.Contains(path, "?") {
				sep = "&"
			}
			path += sep + params.Encode()
		}
	default:
		body = strings.NewReader(params.Encode())
	}
	req, err := c.NewRequest(method, path, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return c.do(req, into)
}

// Upload sends POST /v1/attachments as the caller, with params (such as
// conversation_id or message_id) before a file part of this name and
// content, and decodes the new attachment into into (unless into is nil).
// An answer that is not a 2xx is an *Error.
func (c *Caller) Upload(params url.Values, filename string, content io.Reader, into any) error {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, vs := range params {
		for _, v := range vs {
			if err := mw.WriteField(k, v); err != nil {
				return err
			}
		}
	}
	part, err := mw.CreateFormFile("file", filename)
	if err != nil {
		return err
	}
	if _, err := io.Copy(part, content); err != nil {
		return err
	}
	if err := mw.Close(); err != nil {
		return err
	}
	req, err := c.NewRequest(http.MethodPost, "/v1/attachments", &buf)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return c.do(req, into)
}

func (c *Caller) do(req *http.Request, into any) error {
	res, err := c.Client().Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		e := &Error{Status: res.StatusCode}
		var wire struct {
			Error *Error `json:"error"`
		}
		if json.Unmarshal(b, &wire) == nil && wire.Error != nil {
			*e = *wire.Error
			e.Status = res.StatusCode
		} else {
			e.Message = strings.TrimSpace(string(b))
		}
		return e
	}
	if into == nil || req.Method == http.MethodHead {
		return nil
	}
	if err := json.Unmarshal(b, into); err != nil {
		return fmt.Errorf("parleytest: decoding the answer to %s %s: %w", req.Method, req.URL.Path, err)
	}
	return nil
}

// Error is an answer that is not a 2xx: its status and the API's error
// object.
type Error struct {
	// Status is the HTTP status code.
	Status int `json:"-"`
	// Type is the error's type, such as "invalid_request_error".
	Type string `json:"type"`
	// Code, when set, is the error's code, such as "parameter_missing".
	Code string `json:"code"`
	// Param, when set, is the parameter at fault.
	Param string `json:"param"`
	// Message is the error's message for people.
	Message string `json:"message"`
}

// Error returns the status and the error object's fields.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "parleytest: %d %s", e.Status, http.StatusText(e.Status))
	for _, f := range [][2]string{{"type", e.Type}, {"code", e.Code}, {"param", e.Param}} {
		if f[1] != "" {
			fmt.Fprintf(&b, " %s=%s", f[0], f[1])
		}
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	return b.String()
}

// Is reports whether target is the messaging kind of the error's status
// (messaging.ErrNotFound for a 404, ErrPermission for a 403, and so on), so
// that errors.Is(err, messaging.ErrNotFound) works on answers as on the
// services' errors.
func (e *Error) Is(target error) bool {
	k, ok := kinds[e.Status]
	return ok && errors.Is(k, target)
}

var kinds = map[int]error{
	http.StatusBadRequest:            messaging.ErrInvalid,
	http.StatusUnauthorized:          messaging.ErrUnauthenticated,
	http.StatusForbidden:             messaging.ErrPermission,
	http.StatusNotFound:              messaging.ErrNotFound,
	http.StatusConflict:              messaging.ErrConflict,
	http.StatusRequestEntityTooLarge: messaging.ErrTooLarge,
	http.StatusNotImplemented:        messaging.ErrUnimplemented,
	http.StatusServiceUnavailable:    messaging.ErrUnavailable,
}
