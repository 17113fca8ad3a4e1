package httpadapter_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

var errAuth = &wantErr{"authentication_error", "unauthenticated", ""}

func wantWWWAuthenticate(value string) func(t *testing.T, e *env, fx *fixture, res *response) {
	return func(t *testing.T, _ *env, _ *fixture, res *response) {
		assert.Equal(t, value, res.Header.Get("WWW-Authenticate"))
	}
}

var authCases = []apiCase{
	{name: "no Authorization header", as: "-", method: "GET", path: "/v1/messages",
		wantStatus: 401, wantErr: errAuth, check: wantWWWAuthenticate("Bearer")},
	{name: "no Authorization header on a write", as: "-", method: "POST", path: "/v1/messages",
		body: form("conversation_id={conv}&message=hi"), wantStatus: 401, wantErr: errAuth, check: wantWWWAuthenticate("Bearer")},
	{name: "wrong scheme", auth: "Basic YWxpY2U6c2VjcmV0", method: "GET", path: "/v1/messages",
		wantStatus: 401, wantErr: errAuth, check: wantWWWAuthenticate("Bearer")},
	{name: "token without scheme", auth: "tok-alice", method: "GET", path: "/v1/messages",
		wantStatus: 401, wantErr: errAuth, check: wantWWWAuthenticate("Bearer")},
	{name: "unknown token", auth: "Bearer tok-nobody", method: "GET", path: "/v1/messages",
		wantStatus: 401, wantErr: errAuth, check: wantWWWAuthenticate(`Bearer error="invalid_token"`)},
	{name: "scheme without token", auth: "Bearer    ", method: "GET", path: "/v1/messages",
		wantStatus: 401, wantErr: errAuth, check: wantWWWAuthenticate("Bearer")},
	{name: "prefix of a token", auth: "Bearer tok-alic", method: "GET", path: "/v1/messages/{msgA}",
		wantStatus: 401, wantErr: errAuth},
	{name: "unknown path without a token", as: "-", method: "GET", path: "/v1/nothing",
		wantStatus: 401, wantErr: errAuth},
	{name: "scheme is case-insensitive", auth: "bearer tok-alice", method: "GET", path: "/v1/messages/{msgA}",
		wantStatus: 200, want: map[string]any{"id": "{msgA}"}},
	{name: "file route needs the token", as: "-", method: "GET", path: "/v1/attachments/{attA}/a.txt",
		wantStatus: 401, wantErr: errAuth},
}

func wantAllow(allow string) func(t *testing.T, e *env, fx *fixture, res *response) {
	return func(t *testing.T, _ *env, _ *fixture, res *response) {
		assert.Equal(t, allow, res.Header.Get("Allow"))
	}
}

var (
	errNotFound = &wantErr{"not_found_error", "resource_missing", ""}
	errMethod   = &wantErr{"invalid_request_error", "method_not_allowed", ""}
)

var routingCases = []apiCase{
	{name: "unknown path", method: "GET", path: "/v1/channels", wantStatus: 404, wantErr: errNotFound},
	{name: "root", method: "GET", path: "/", wantStatus: 404, wantErr: errNotFound},
	{name: "other version", method: "GET", path: "/v2/messages", wantStatus: 404, wantErr: errNotFound},
	{name: "trailing slash", method: "GET", path: "/v1/messages/", wantStatus: 404, wantErr: errNotFound},
	{name: "unclean path", method: "GET", path: "/v1//messages", wantStatus: 404, wantErr: errNotFound},
	{name: "dot segment", method: "GET", path: "/v1/attachments/../messages", wantStatus: 404, wantErr: errNotFound},
	{name: "POST revisions", method: "POST", path: "/v1/messages/{msgA}/revisions", body: form("message=x"),
		wantStatus: 405, wantErr: errMethod, check: wantAllow("GET, HEAD")},
	{name: "too deep", method: "GET", path: "/v1/attachments/{attA}/a.txt/more", wantStatus: 404, wantErr: errNotFound},
	{name: "PATCH messages", method: "PATCH", path: "/v1/messages", body: form("message=x"),
		wantStatus: 405, wantErr: errMethod, check: wantAllow("GET, HEAD, POST")},
	{name: "DELETE messages", method: "DELETE", path: "/v1/messages",
		wantStatus: 405, wantErr: errMethod, check: wantAllow("GET, HEAD, POST")},
	{name: "POST a message", method: "POST", path: "/v1/messages/{msgA}", body: form("message=x"),
		wantStatus: 405, wantErr: errMethod, check: wantAllow("GET, HEAD, PUT, DELETE")},
	{name: "PUT a reaction", method: "PUT", path: "/v1/messages/{msgA}/reactions/thumbs_up", body: form("x=1"),
		wantStatus: 405, wantErr: errMethod, check: wantAllow("GET, HEAD, DELETE")},
	{name: "PUT attachments", method: "PUT", path: "/v1/attachments",
		wantStatus: 405, wantErr: errMethod, check: wantAllow("GET, HEAD, POST")},
	{name: "PATCH an attachment", method: "PATCH", path: "/v1/attachments/{attA}",
		wantStatus: 405, wantErr: errMethod, check: wantAllow("GET, HEAD, PUT, DELETE")},
	{name: "DELETE a file", method: "DELETE", path: "/v1/attachments/{attA}/a.txt",
		wantStatus: 405, wantErr: errMethod, check: wantAllow("GET, HEAD")},
	{name: "HEAD a list", method: "HEAD", path: "/v1/messages", wantStatus: 200,
		check: func(t *testing.T, _ *env, _ *fixture, res *response) {
			assert.Empty(t, res.body)
			assert.Equal(t, "application/json; charset=utf-8", res.Header.Get("Content-Type"))
		}},
	{name: "OPTIONS", method: http.MethodOptions, path: "/v1/messages",
		wantStatus: 405, wantErr: errMethod, check: wantAllow("GET, HEAD, POST")},
}
