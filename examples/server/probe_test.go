package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests are the example server's reproductions of issue 30, item 4
// (files, the small things), each named after its finding.

// noRedirects is a client that answers redirects rather than following
// them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// rawGet sends GET path to base with the token ("" for none) and headers
// (name, value pairs; "Host" sets the request's host), the path sent as it
// is (no cleaning), and returns the answer with its body read.
func rawGet(t *testing.T, base, path, token string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/", nil)
	require.NoError(t, err)
	req.URL.Opaque = path // sent as it is: a client that does not clean paths
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := noRedirects.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, b
}

// TestDotSegmentsAre404NotRedirect: issue 30 found
// /v1/attachments/../messages answered with a redirect, before
// authentication, by the server's mux, which cleans paths. API.md: a path
// that is not clean is a 404 (after authentication, as every unknown
// path), as the adapter answers it.
func TestDotSegmentsAre404NotRedirect(t *testing.T) {
	srv, err := launch(t, "-data", t.TempDir())
	require.NoError(t, err)
	for _, path := range []string{"/v1/attachments/../messages", "/v1/./messages", "/v1//messages", "/chat/../v1/messages", "/a/../v1/messages"} {
		res, body := rawGet(t, srv.base, path, "tok-alice")
		assert.Equal(t, http.StatusNotFound, res.StatusCode, "%s: %s", path, body)
		assert.Empty(t, res.Header.Get("Location"), path)
		assert.Contains(t, string(body), `"not_found_error"`, path)

		res, body = rawGet(t, srv.base, path, "")
		assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "%s without a token: %s", path, body)
		assert.Empty(t, res.Header.Get("Location"), path)
	}
	// Clean paths still reach the API and the chat page.
	res, _ := rawGet(t, srv.base, "/v1/messages", "tok-alice")
	assert.Equal(t, http.StatusOK, res.StatusCode)
	res, _ = rawGet(t, srv.base, "/", "")
	assert.Equal(t, http.StatusOK, res.StatusCode)
	res, _ = rawGet(t, srv.base, "/chat/app.js", "")
	assert.Equal(t, http.StatusOK, res.StatusCode)
}

// TestHostsFlagBindsFileURL: issue 30 found file_url following a forged
// Host in the example server. With -hosts, a request for another Host
// gets URLs of the first listed host.
func TestHostsFlagBindsFileURL(t *testing.T) {
	srv, err := launch(t, "-data", t.TempDir(), "-hosts", "chat.example.com,alt.example.com")
	require.NoError(t, err)
	id := upload(t, srv.base, "tok-alice", "notes.txt", "notes")
	for host, want := range map[string]string{
		"evil.example":    "http://chat.example.com/v1/attachments/" + id + "/notes.txt",
		"alt.example.com": "http://alt.example.com/v1/attachments/" + id + "/notes.txt",
	} {
		res, body := rawGet(t, srv.base, "/v1/attachments/"+id, "tok-alice", "Host", host)
		require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
		var a struct {
			FileURL string `json:"file_url"`
		}
		require.NoError(t, json.Unmarshal(body, &a))
		assert.Equal(t, want, a.FileURL, "Host %s", host)
	}
}

// TestHostsFlagRejectsBadHost: a -hosts entry that is not a host name
// stops the server at start, naming the flag.
func TestHostsFlagRejectsBadHost(t *testing.T) {
	_, err := launch(t, "-data", t.TempDir(), "-hosts", "https://chat.example.com/")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-hosts")
}

// TestJSONAnswersNoSniff: issue 30 found JSON answers without
// X-Content-Type-Options: nosniff; the API's and the server's own
// (/chat/me) carry it.
func TestJSONAnswersNoSniff(t *testing.T) {
	srv, err := launch(t, "-data", t.TempDir())
	require.NoError(t, err)
	for _, tc := range []struct{ path, token string }{
		{"/v1/messages", "tok-alice"}, {"/v1/messages", ""}, {"/v1/nothing", "tok-alice"},
		{"/chat/me", "tok-alice"}, {"/chat/me", "wrong"},
	} {
		res, _ := rawGet(t, srv.base, tc.path, tc.token)
		assert.True(t, strings.HasPrefix(res.Header.Get("Content-Type"), "application/json"), "%s %q", tc.path, tc.token)
		assert.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"), "%s %q", tc.path, tc.token)
	}
}

// TestChatMeIsRateLimited: issue 30 found GET /chat/me authenticating
// outside the rate limiter, so that it could be used to guess tokens at
// any rate. It is limited as /v1 is: refused tokens by client address, a
// caller's requests by caller, in the same buckets as the API's.
func TestChatMeIsRateLimited(t *testing.T) {
	srv, err := launch(t, "-data", t.TempDir(), "-rate", "0.01", "-burst", "3")
	require.NoError(t, err)

	// Guessing: three refusals, then 429, on /chat/me and on /v1 alike.
	for i := range 3 {
		res, body := rawGet(t, srv.base, "/chat/me", "guess-"+string(rune('a'+i)))
		require.Equal(t, http.StatusUnauthorized, res.StatusCode, "guess %d: %s", i, body)
	}
	for _, path := range []string{"/chat/me", "/v1/messages"} {
		res, body := rawGet(t, srv.base, path, "guess-z")
		assert.Equal(t, http.StatusTooManyRequests, res.StatusCode, "%s: %s", path, body)
		assert.NotEmpty(t, res.Header.Get("Retry-After"), path)
		assert.Contains(t, string(body), `"rate_limit_error"`, path)
	}

	// A caller: /chat/me and /v1 draw on one bucket of its own.
	res, _ := rawGet(t, srv.base, "/chat/me", "tok-bob")
	assert.Equal(t, http.StatusOK, res.StatusCode)
	res, _ = rawGet(t, srv.base, "/v1/messages", "tok-bob")
	assert.Equal(t, http.StatusOK, res.StatusCode)
	res, _ = rawGet(t, srv.base, "/chat/me", "tok-bob")
	assert.Equal(t, http.StatusOK, res.StatusCode)
	res, body := rawGet(t, srv.base, "/chat/me", "tok-bob")
	assert.Equal(t, http.StatusTooManyRequests, res.StatusCode, "%s", body)
	res, _ = rawGet(t, srv.base, "/v1/messages", "tok-bob")
	assert.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	res, _ = rawGet(t, srv.base, "/chat/me", "tok-alice")
	assert.Equal(t, http.StatusOK, res.StatusCode, "another caller has a bucket of its own")
}

// TestUploadQuotaFlag: -upload-quota caps the bytes of each caller's
// files; an upload beyond is a 413 upload_quota_exceeded.
func TestUploadQuotaFlag(t *testing.T) {
	srv, err := launch(t, "-data", t.TempDir(), "-upload-quota", "10")
	require.NoError(t, err)
	upload(t, srv.base, "tok-alice", "a.txt", "0123456789")
	var buf strings.Builder
	buf.WriteString("--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"b.txt\"\r\n\r\nx\r\n--b--\r\n")
	req, err := http.NewRequest("POST", srv.base+"/v1/attachments", strings.NewReader(buf.String()))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tok-alice")
	req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	assert.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, "%s", body)
	assert.Contains(t, string(body), `"upload_quota_exceeded"`)
	upload(t, srv.base, "tok-bob", "b.txt", "0123456789") // bob's own quota
}
