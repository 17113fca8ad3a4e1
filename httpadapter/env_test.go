package httpadapter_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

// Test limits, small so that the limit tests stay fast.
const (
	testMaxUpload = 4 << 10
	testMaxBody   = 16 << 10
)

// users are the callers of every test env; their tokens are "tok-<name>".
// mallory may not see conversations whose id starts with "private".
var users = []string{"alice", "bob", "mallory"}

// privatePolicy hides conversations "private…" from mallory.
type privatePolicy struct {
	malloryID string
	admitted  sync.Map // conversation ids mallory was admitted to since (admit)
}

func (p *privatePolicy) CanView(_ context.Context, contactID, conv string) (bool, error) {
	_, admitted := p.admitted.Load(conv)
	return contactID != p.malloryID || !strings.HasPrefix(conv, "private") || admitted, nil
}

// admit lets mallory see the private conversation conv from now on, as a
// member added to it.
func (p *privatePolicy) admit(conv string) { p.admitted.Store(conv, true) }

func (p *privatePolicy) Scope(_ context.Context, contactID string) (messaging.Scope, error) {
	if contactID != p.malloryID {
		return messaging.Scope{All: true}, nil
	}
	return messaging.Scope{}, nil // mallory lists nothing without conversation_id
}

// listingBlobs is a blob store the tests can list, to check what is stored.
type listingBlobs interface {
	attachments.BlobStore
	driver.Lister
}

// withBlobs is a store that brings its own blob store for newEnv (by
// default, an env stores files in memory).
type withBlobs struct {
	storetest.Store
	blobs listingBlobs
}

// env is a handler over real services on a store, served by httptest.
type env struct {
	t      testing.TB
	store  storetest.Store
	blobs  attachments.BlobStore
	mem    listingBlobs // the blob store under the handler's (before cfg.blobs wraps it)
	msgs   *messaging.Service
	files  *attachments.Service
	feed   *events.Feed // when envConfig.events is set
	pol    *privatePolicy
	srv    *httptest.Server
	url    string // where /v1 is reachable: srv.URL + mount prefix
	prefix string
	users  map[string]messaging.Contact
	tokens map[string]messaging.Contact
	ctx    context.Context

	authCalls atomic.Int64 // calls of the cookie authenticator (envConfig.cookies)
}

type envConfig struct {
	prefix  string                                                    // mount prefix, served with http.StripPrefix
	opts    httpadapter.Options                                       // Authenticator is set unless noAuth
	noAuth  bool                                                      // leave Authenticator nil
	blobs   func(listingBlobs) attachments.BlobStore                  // wraps the blob store
	auth    func(httpadapter.Authenticator) httpadapter.Authenticator // wraps the authenticator
	cookies bool                                                      // also accept the cookie session=sess-<name>
	extraUs int                                                       // extra users user000…
	events  *events.Options                                           // serve /v1/events from a Feed with these options
	server  func(*httptest.Server)                                    // configures the unstarted test server
	store   func(storetest.Store) storetest.Store                     // wraps the store under the services
	files   attachments.Options                                       // the attachments Service's options (limits and logger set by newEnv)
	wrap    func(http.Handler) http.Handler                           // wraps the handler
}

func newEnv(t testing.TB, store storetest.Store, cfg envConfig) *env {
	t.Helper()
	e := &env{t: t, store: store, mem: memstore.NewBlobStore(), prefix: cfg.prefix, ctx: context.Background(),
		users: map[string]messaging.Contact{}, tokens: map[string]messaging.Contact{}}
	if wb, ok := store.(withBlobs); ok {
		e.store, e.mem = wb.Store, wb.blobs
		store = wb.Store
	}
	e.blobs = e.mem
	if cfg.blobs != nil {
		e.blobs = cfg.blobs(e.mem)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	pol := &privatePolicy{}
	var under storetest.Store = store
	if cfg.store != nil {
		under = cfg.store(store)
	}
	fo := cfg.files
	fo.MaxUploadBytes = testMaxUpload
	if fo.Logger == nil {
		fo.Logger = quiet
	}
	eo := &events.Options{Logger: quiet}
	if cfg.events != nil {
		o := *cfg.events
		if o.Logger == nil {
			o.Logger = quiet
		}
		eo = &o
	}
	e.msgs = svctest.New(t, storetest.Storage(under), e.blobs, &messaging.Options{Policy: pol, Logger: quiet, Files: &fo, Events: eo})
	e.files = e.msgs.Files()
	names := slices.Clone(users)
	for i := range cfg.extraUs {
		names = append(names, fmt.Sprintf("user%03d", i))
	}
	for _, name := range names {
		c, err := e.msgs.SaveContact(e.ctx, messaging.Contact{Username: name, PhoneNumber: "+100" + name})
		require.NoError(t, err)
		e.users[name] = c
		e.tokens["tok-"+name] = c
	}
	pol.malloryID, e.pol = e.users["mallory"].ID, pol
	opts := cfg.opts
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = testMaxBody
	}
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	if !cfg.noAuth {
		opts.Authenticator = httpadapter.StaticTokens(e.tokens)
		if cfg.cookies {
			opts.Authenticator = e.cookieAuth(opts.Authenticator)
		}
		if cfg.auth != nil {
			opts.Authenticator = cfg.auth(opts.Authenticator)
		}
	}
	if cfg.events != nil {
		e.feed, opts.Events = e.msgs.Events(), true
	}
	h, err := httpadapter.New(e.msgs, &opts)
	require.NoError(t, err)
	if cfg.wrap != nil {
		h = cfg.wrap(h)
	}
	if _, bench := t.(*testing.B); !bench {
		// Every exchange of a test is checked against openapi.json
		// (benchmarks measure the handler alone).
		h = checkAPI(t, h, cfg.cookies || cfg.auth != nil)
	}
	if cfg.prefix != "" {
		mux := http.NewServeMux()
		mux.Handle(cfg.prefix+"/", http.StripPrefix(cfg.prefix, h))
		h = mux
	}
	e.srv = httptest.NewUnstartedServer(h)
	if cfg.server != nil {
		cfg.server(e.srv)
	}
	e.srv.Start()
	t.Cleanup(e.srv.Close)
	e.url = e.srv.URL + cfg.prefix
	return e
}

// cookieAuth authenticates as a host with browser sessions does: by the
// cookie session=sess-<name>, or by the bearer token of a request that
// carries one.
func (e *env) cookieAuth(bearer httpadapter.Authenticator) httpadapter.Authenticator {
	return httpadapter.AuthenticatorFunc(func(r *http.Request) (messaging.Contact, error) {
		e.authCalls.Add(1)
		if r.Header.Get("Authorization") != "" {
			return bearer.Authenticate(r)
		}
		c, err := r.Cookie("session")
		if err != nil {
			return messaging.Contact{}, messaging.ErrUnauthenticated
		}
		name, ok := strings.CutPrefix(c.Value, "sess-")
		if u, known := e.users[name]; ok && known {
			return u, nil
		}
		return messaging.Contact{}, &messaging.Error{Kind: messaging.ErrUnauthenticated, Message: "your session has ended: sign in again"}
	})
}

// reqBody is a request body with its Content-Type.
type reqBody struct {
	ctype string
	data  string
}

func form(s string) *reqBody     { return &reqBody{"application/x-www-form-urlencoded", s} }
func jsonBody(s string) *reqBody { return &reqBody{"application/json", s} }
func raw(ctype, s string) *reqBody {
	return &reqBody{ctype, s}
}

// part is one part of a multipart/form-data body; a filename makes it a
// file part.
type part struct {
	name, filename, ctype, data string
}

func multipartBody(parts ...part) *reqBody {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		if p.filename != "" || p.ctype != "" {
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, p.name, p.filename))
			if p.ctype != "" {
				h.Set("Content-Type", p.ctype)
			}
		} else {
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q`, p.name))
		}
		w, err := mw.CreatePart(h)
		if err != nil {
			panic(err)
		}
		_, _ = io.WriteString(w, p.data)
	}
	_ = mw.Close()
	return &reqBody{mw.FormDataContentType(), buf.String()}
}

func file(filename, ctype, data string) part { return part{"file", filename, ctype, data} }
func field(name, value string) part          { return part{name: name, data: value} }

// response is a response with its body read.
type response struct {
	*http.Response
	body []byte
}

// json decodes the body as one JSON value.
func (r *response) json(t testing.TB) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(r.body, &v), "body: %s", r.body)
	return v
}

// do sends a request as the caller with token tok ("" for none) to path
// under e.url (or to an absolute URL).
func (e *env) do(t testing.TB, method, path, tok string, body *reqBody, hdr ...string) *response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(body.data)
	}
	u := path
	if !strings.HasPrefix(u, "http") {
		u = e.url + path
	}
	req, err := http.NewRequestWithContext(e.ctx, method, u, rd)
	require.NoError(t, err)
	if body != nil && body.ctype != "" {
		req.Header.Set("Content-Type", body.ctype)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := e.srv.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return &response{Response: res, body: b}
}

// as sends a request as the named user.
func (e *env) as(t testing.TB, user, method, path string, body *reqBody, hdr ...string) *response {
	t.Helper()
	return e.do(t, method, path, "tok-"+user, body, hdr...)
}

// fixture is a fresh set of resources for one test case, in conversations
// of its own.
type fixture struct {
	conv, private string
	msgA          string // alice's message in conv, with attL linked
	msgB          string // bob's message in conv; reactions thumbs_up: alice, bob
	msgP          string // alice's message in private (hidden from mallory)
	attA          string // alice's unlinked text file "a.txt" in conv
	attB          string // bob's unlinked file in conv
	attL          string // alice's PNG "linked.png", linked to msgA
	attN          string // alice's file in no conversation
	attP          string // alice's file in private
	attH          string // alice's HTML file "page.html" in conv
	attU          string // alice's file "résumé 1.txt" in conv
	vars          *strings.Replacer
}

const (
	textA   = "hello from alice"
	pngData = "\x89PNG\r\n\x1a\n0000IHDR-fake-png"
)

// fixtureSeq numbers the fixtures of all tests, which may run in parallel.
var fixtureSeq atomic.Int64

func (e *env) fixture(t testing.TB) *fixture {
	t.Helper()
	n := fixtureSeq.Add(1)
	fx := &fixture{conv: fmt.Sprintf("conv-%d", n), private: fmt.Sprintf("private-%d", n)}
	alice, bob := e.users["alice"], e.users["bob"]
	fx.attA = e.upload(t, "alice", fx.conv, "a.txt", "text/plain; charset=utf-8", textA)
	fx.attB = e.upload(t, "bob", fx.conv, "b.txt", "", "hello from bob")
	fx.attL = e.upload(t, "alice", fx.conv, "linked.png", "image/png", pngData)
	fx.attN = e.upload(t, "alice", "", "n.txt", "", "no conversation")
	fx.attP = e.upload(t, "alice", fx.private, "p.txt", "", "private file")
	fx.attH = e.upload(t, "alice", fx.conv, "page.html", "text/html", "<script>alert(1)</script>")
	fx.attU = e.upload(t, "alice", fx.conv, "résumé 1.txt", "text/plain", "cv")
	m, err := e.msgs.Create(e.ctx, alice, messaging.NewMessage{ConversationID: fx.conv, Text: "hi from alice", Attachments: []string{fx.attL}})
	require.NoError(t, err)
	fx.msgA = m.ID
	m, err = e.msgs.Create(e.ctx, bob, messaging.NewMessage{ConversationID: fx.conv, Text: "hi from bob"})
	require.NoError(t, err)
	fx.msgB = m.ID
	_, err = e.msgs.Update(e.ctx, alice, fx.msgB, messaging.Update{React: []string{"thumbs_up"}})
	require.NoError(t, err)
	_, err = e.msgs.Update(e.ctx, bob, fx.msgB, messaging.Update{React: []string{"thumbs_up"}})
	require.NoError(t, err)
	m, err = e.msgs.Create(e.ctx, alice, messaging.NewMessage{ConversationID: fx.private, Text: "a secret"})
	require.NoError(t, err)
	fx.msgP = m.ID
	fx.vars = strings.NewReplacer(
		"{conv}", fx.conv, "{private}", fx.private,
		"{msgA}", fx.msgA, "{msgB}", fx.msgB, "{msgP}", fx.msgP,
		"{attA}", fx.attA, "{attB}", fx.attB, "{attL}", fx.attL, "{attN}", fx.attN,
		"{attP}", fx.attP, "{attH}", fx.attH, "{attU}", fx.attU,
		"{alice}", alice.ID, "{bob}", bob.ID,
	)
	return fx
}

// upload stores a file through the Service, as user.
func (e *env) upload(t testing.TB, user, conv, name, ctype, data string) string {
	t.Helper()
	a, err := e.files.Upload(e.ctx, e.users[user], attachments.Upload{Filename: name, ContentType: ctype, ConversationID: conv, Body: strings.NewReader(data)})
	require.NoError(t, err)
	return a.ID
}

// snapshot describes everything stored, one sorted line per item:
// messages (without the contacts' activity), attachment rows, pending
// deletions and blob objects.
func (e *env) snapshot(t testing.TB) []string {
	t.Helper()
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	msgs, _, err := e.store.ListMessages(e.ctx, driver.MessageQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 10000}})
	require.NoError(t, err)
	for _, m := range msgs {
		var att []string
		for _, a := range m.Attachments {
			att = append(att, a.ID)
		}
		add("msg %s %s %s %q %v %v %d %d", m.ID, m.ConversationID, m.Contact.ID, m.Text, m.Reactions, att, m.ReadAt.UnixMicro(), m.UpdatedAt.UnixMicro())
	}
	seen := map[string]bool{}
	for _, c := range e.users {
		atts, _, err := e.store.ListAttachments(e.ctx, driver.AttachmentQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 10000}, UploaderID: c.ID})
		require.NoError(t, err)
		for _, a := range atts {
			if !seen[a.ID] {
				seen[a.ID] = true
				add("att %s %s %s %s %q %s %d %s %s", a.ID, a.MessageID, a.ConversationID, a.UploaderID, a.Filename, a.FileType, a.FileSize, a.SHA256, a.Key)
			}
		}
	}
	pending, err := e.store.PendingDeletions(e.ctx, 10000)
	require.NoError(t, err)
	for _, k := range pending {
		add("pending %s", k)
	}
	require.NoError(t, e.mem.List(e.ctx, "", func(o driver.Object) error {
		add("blob %s %d", o.Key, o.ModTime.UnixNano())
		return nil
	}))
	slices.Sort(lines)
	return lines
}

// assertUnchanged checks that nothing stored changed since before.
func (e *env) assertUnchanged(t testing.TB, before []string) {
	t.Helper()
	after := e.snapshot(t)
	var added, removed []string
	for _, l := range after {
		if _, found := slices.BinarySearch(before, l); !found {
			added = append(added, l)
		}
	}
	for _, l := range before {
		if _, found := slices.BinarySearch(after, l); !found {
			removed = append(removed, l)
		}
	}
	assert.Empty(t, added, "a rejected request stored something")
	assert.Empty(t, removed, "a rejected request removed or changed something")
}

// blobCount counts the objects of the blob store.
func (e *env) blobCount(t testing.TB) int {
	t.Helper()
	n := 0
	require.NoError(t, e.mem.List(e.ctx, "", func(driver.Object) error { n++; return nil }))
	return n
}

// wantErr is the error object a case expects.
type wantErr struct{ typ, code, param string }

// assertError checks the error object of a failed response.
func assertError(t testing.TB, res *response, status int, w wantErr) {
	t.Helper()
	require.Equal(t, status, res.StatusCode, "body: %s", res.body)
	assert.Equal(t, "application/json; charset=utf-8", res.Header.Get("Content-Type"))
	var body struct {
		Error map[string]any `json:"error"`
	}
	require.NoError(t, json.Unmarshal(res.body, &body), "body: %s", res.body)
	require.NotNil(t, body.Error, "body: %s", res.body)
	assert.Equal(t, w.typ, body.Error["type"], "type; body: %s", res.body)
	if w.code != "" {
		assert.Equal(t, w.code, body.Error["code"], "code; body: %s", res.body)
	}
	if w.param != "" {
		assert.Equal(t, w.param, body.Error["param"], "param; body: %s", res.body)
	} else {
		assert.NotContains(t, body.Error, "param", "body: %s", res.body)
	}
	assert.NotEmpty(t, body.Error["message"])
}

// lookup returns the value at a dotted path ("attachments.0.id") of v.
func lookup(v any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[k]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// notNull matches any value but null.
type notNullT struct{}

var notNull = notNullT{}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func multipartWriter(w io.Writer) *multipart.Writer { return multipart.NewWriter(w) }
