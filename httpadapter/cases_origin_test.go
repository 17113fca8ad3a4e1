package httpadapter_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/httpadapter"
)

var errCrossOrigin = &wantErr{"permission_error", "cross_origin_denied", ""}

// Headers of browser requests. A browser sends Sec-Fetch-Site with every
// request (since 2023); an older one sends only Origin on unsafe methods.
var (
	aliceCookie = []string{"Cookie", "session=sess-alice"}
	crossSite   = []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}
	sameOrigin  = []string{"Sec-Fetch-Site", "same-origin"}
)

func headers(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// crossOriginCases run against a host that authenticates by a session
// cookie (session=sess-<name>) or by a bearer token. Every refused case also
// checks that nothing stored changed.
var crossOriginCases = []apiCase{
	// A host's browser session uses the API.
	{name: "cookie: list", as: "-", hdr: aliceCookie, method: "GET", path: "/v1/messages?conversation_id={conv}",
		wantStatus: 200, want: map[string]any{"object": "list"}},
	{name: "cookie: send from the same origin", as: "-", hdr: headers(aliceCookie, sameOrigin), method: "POST", path: "/v1/messages",
		body: form("conversation_id={conv}&message=hi"), wantStatus: 201, want: map[string]any{"contact.id": "{alice}", "message": "hi"}},
	{name: "cookie: send from a non-browser client", as: "-", hdr: aliceCookie, method: "POST", path: "/v1/messages",
		body: form("conversation_id={conv}&message=hi"), wantStatus: 201, want: map[string]any{"contact.id": "{alice}"}},
	{name: "cookie: react from the same origin", as: "-", hdr: headers(aliceCookie, sameOrigin), method: "PUT", path: "/v1/messages/{msgB}",
		body: form("reactions[party][]=alice"), wantStatus: 200},
	{name: "cookie: fetch a file", as: "-", hdr: headers(aliceCookie, crossSite), method: "GET", path: "/v1/attachments/{attA}/a.txt",
		wantStatus: 200},
	{name: "cookie of no session", as: "-", hdr: []string{"Cookie", "session=sess-nobody"}, method: "GET", path: "/v1/messages",
		wantStatus: 401, wantErr: errAuth, check: func(t *testing.T, _ *env, _ *fixture, res *response) {
			assert.Equal(t, "Bearer", res.Header.Get("WWW-Authenticate"))
			assert.Contains(t, string(res.body), "your session has ended", "the host's message")
		}},

	// Forged requests: another site makes the browser send them, cookie
	// attached. Refused before the authenticator sees them.
	{name: "cross-site: send", as: "-", hdr: headers(aliceCookie, crossSite), method: "POST", path: "/v1/messages",
		body: form("conversation_id={conv}&message=forged"), wantStatus: 403, wantErr: errCrossOrigin},
	{name: "cross-site: send as JSON", as: "-", hdr: headers(aliceCookie, crossSite), method: "POST", path: "/v1/messages",
		body: jsonBody(`{"conversation_id": "{conv}", "message": "forged"}`), wantStatus: 403, wantErr: errCrossOrigin},
	{name: "cross-site: edit", as: "-", hdr: headers(aliceCookie, crossSite), method: "PUT", path: "/v1/messages/{msgA}",
		body: form("message=forged"), wantStatus: 403, wantErr: errCrossOrigin},
	{name: "cross-site: react", as: "-", hdr: headers(aliceCookie, crossSite), method: "PUT", path: "/v1/messages/{msgB}",
		body: form("reactions[party][]=alice"), wantStatus: 403, wantErr: errCrossOrigin},
	{name: "cross-site: delete a message", as: "-", hdr: headers(aliceCookie, crossSite), method: "DELETE", path: "/v1/messages/{msgA}",
		wantStatus: 403, wantErr: errCrossOrigin},
	{name: "cross-site: remove a reaction", as: "-", hdr: headers([]string{"Cookie", "session=sess-bob"}, crossSite), method: "DELETE", path: "/v1/messages/{msgB}/reactions/thumbs_up",
		wantStatus: 403, wantErr: errCrossOrigin},
	{name: "cross-site: upload", as: "-", hdr: headers(aliceCookie, crossSite), method: "POST", path: "/v1/attachments",
		body: multipartBody(field("conversation_id", "{conv}"), file("x.txt", "text/plain", "forged")), wantStatus: 403, wantErr: errCrossOrigin},
	{name: "cross-site: rename", as: "-", hdr: headers(aliceCookie, crossSite), method: "PUT", path: "/v1/attachments/{attA}",
		body: form("filename=forged.txt"), wantStatus: 403, wantErr: errCrossOrigin},
	{name: "cross-site: delete an attachment", as: "-", hdr: headers(aliceCookie, crossSite), method: "DELETE", path: "/v1/attachments/{attA}",
		wantStatus: 403, wantErr: errCrossOrigin},
	{name: "same-site is another origin", as: "-", hdr: headers(aliceCookie, []string{"Sec-Fetch-Site", "same-site"}), method: "POST", path: "/v1/messages",
		body: form("conversation_id={conv}&message=forged"), wantStatus: 403, wantErr: errCrossOrigin},
	{name: "older browser: Origin of another host", as: "-", hdr: headers(aliceCookie, []string{"Origin", "https://evil.example"}), method: "POST", path: "/v1/messages",
		body: form("conversation_id={conv}&message=forged"), wantStatus: 403, wantErr: errCrossOrigin},
	{name: "older browser: Origin null", as: "-", hdr: headers(aliceCookie, []string{"Origin", "null"}), method: "POST", path: "/v1/messages",
		body: form("conversation_id={conv}&message=forged"), wantStatus: 403, wantErr: errCrossOrigin},
	{name: "cross-site without credentials", as: "-", hdr: crossSite, method: "POST", path: "/v1/messages",
		body: form("conversation_id={conv}&message=forged"), wantStatus: 403, wantErr: errCrossOrigin},
	{name: "cross-site: a bearer token does not excuse a cookie", hdr: headers(aliceCookie, crossSite), method: "POST", path: "/v1/messages",
		body: form("conversation_id={conv}&message=forged"), wantStatus: 403, wantErr: errCrossOrigin},
	{name: "cross-site: an empty bearer token does not excuse", auth: "Bearer", hdr: headers(aliceCookie, crossSite), method: "POST", path: "/v1/messages",
		body: form("conversation_id={conv}&message=forged"), wantStatus: 403, wantErr: errCrossOrigin},
	{name: "cross-site: safe methods pass", as: "-", hdr: headers(aliceCookie, crossSite), method: "GET", path: "/v1/messages/{msgA}",
		wantStatus: 200, want: map[string]any{"id": "{msgA}"}},

	// Bearer tokens are never sent by a browser on its own: any origin.
	{name: "bearer from another site: send", hdr: crossSite, method: "POST", path: "/v1/messages",
		body: form("conversation_id={conv}&message=hi"), wantStatus: 201, want: map[string]any{"contact.id": "{alice}"}},
	{name: "bearer from another site: delete", hdr: crossSite, method: "DELETE", path: "/v1/messages/{msgA}",
		wantStatus: 200, want: map[string]any{"deleted": true}},
	{name: "bearer from another site: upload", as: "bob", hdr: crossSite, method: "POST", path: "/v1/attachments",
		body: multipartBody(file("x.txt", "text/plain", "ok")), wantStatus: 201},
	{name: "unknown bearer from another site", auth: "Bearer tok-nobody", hdr: crossSite, method: "POST", path: "/v1/messages",
		body: form("conversation_id={conv}&message=hi"), wantStatus: 401, wantErr: errAuth, check: wantWWWAuthenticate(`Bearer error="invalid_token"`)},
}

// testCookieSessions: what the table cannot say. A forged request does not
// reach the authenticator (nor move the caller's last_active_at); an Origin
// that matches the Host is the same origin; a host trusts another origin
// through Options.CrossOriginProtection.
func testCookieSessions(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{cookies: true})

	calls := e.authCalls.Load()
	res := e.do(t, "POST", "/v1/messages", "", form("conversation_id=c&message=forged"), headers(aliceCookie, crossSite)...)
	assertError(t, res, http.StatusForbidden, *errCrossOrigin)
	assert.Equal(t, calls, e.authCalls.Load(), "the authenticator saw a forged request")
	c, err := e.store.GetContact(e.ctx, e.users["alice"].ID)
	require.NoError(t, err)
	assert.True(t, c.LastActiveAt.IsZero(), "a forged request moved last_active_at")

	res = e.do(t, "POST", "/v1/messages", "", form("conversation_id=c&message=hi"), headers(aliceCookie, []string{"Origin", e.srv.URL})...)
	require.Equal(t, http.StatusCreated, res.StatusCode, "Origin %s; body: %s", e.srv.URL, res.body)

	// A front end on another origin that the host trusts.
	protect := http.NewCrossOriginProtection()
	require.NoError(t, protect.AddTrustedOrigin("https://app.example.com"))
	e = newEnv(t, newStore(t), envConfig{cookies: true, opts: httpadapter.Options{CrossOriginProtection: protect}})
	res = e.do(t, "POST", "/v1/messages", "", form("conversation_id=c&message=hi"),
		headers(aliceCookie, []string{"Sec-Fetch-Site", "same-site", "Origin", "https://app.example.com"})...)
	require.Equal(t, http.StatusCreated, res.StatusCode, "body: %s", res.body)
	res = e.do(t, "POST", "/v1/messages", "", form("conversation_id=c&message=forged"), headers(aliceCookie, crossSite)...)
	assertError(t, res, http.StatusForbidden, *errCrossOrigin)
}
