package main

import (
	"io"
	"net/http"
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
