package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// TestHost: a program calls with its API key, a browser with the session
// cookie of the host's /login; a page of another site cannot post with that
// cookie, and a program's key works from anywhere.
func TestHost(t *testing.T) {
	store := memstore.New()
	msgs := messaging.New(store, nil)
	files := attachments.New(store, memstore.NewBlobStore(), msgs, nil)
	h, err := newHost(msgs, files)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	api := srv.URL + "/chat/v1/messages"

	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar}
	send := func(c *http.Client, text string, hdr ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", api, strings.NewReader(url.Values{"conversation_id": {"team"}, "message": {text}}.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		res, err := c.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}

	status, body := send(http.DefaultClient, "from ann's program", "Authorization", "Bearer key-ann")
	require.Equal(t, http.StatusCreated, status, body)
	assert.Contains(t, body, `"username":"ann"`)

	status, body = send(browser, "before signing in")
	assert.Equal(t, http.StatusUnauthorized, status, body)

	res, err := browser.PostForm(srv.URL+"/login", url.Values{"key": {"key-ben"}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)

	status, body = send(browser, "from ben's browser", "Sec-Fetch-Site", "same-origin")
	require.Equal(t, http.StatusCreated, status, body)
	assert.Contains(t, body, `"username":"ben"`)

	status, body = send(browser, "forged", "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	assert.Equal(t, http.StatusForbidden, status, body)

	status, body = send(http.DefaultClient, "from a page elsewhere", "Authorization", "Bearer key-ann", "Sec-Fetch-Site", "cross-site", "Origin", "https://app.example")
	assert.Equal(t, http.StatusCreated, status, body)

	res, err = browser.Get(api + "?conversation_id=team")
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", b)
	assert.Contains(t, string(b), "from ben's browser")
	assert.NotContains(t, string(b), "forged")
}
