package main

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/storage/memstore"
)

// TestHost: a program calls with its API key, a browser with the session
// cookie of the host's /login; a page of another site cannot post with that
// cookie, and a program's key works from anywhere.
func TestHost(t *testing.T) {
	store := memstore.New()
	msgs := svctest.New(t, store, memstore.NewBlobStore(), nil)
	h, err := newHost(msgs)
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

	// The event feed is mounted: ben's events, as a page here (a stream
	// with Accept: text/event-stream; see TestRunRemovesItsFolder).
	require.Eventually(t, func() bool {
		res, err := browser.Get(srv.URL + "/chat/v1/events")
		require.NoError(t, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, "%s", b)
		return strings.Count(string(b), `"type":"message.created"`) == 3
	}, 5*time.Second, 10*time.Millisecond, "the three messages' events")
}

// TestServerCutsSlowClients: a body that trickles in is cut off at the
// request timeout, and headers at theirs (issue 10, defect 4: the example
// set no timeouts at all).
func TestServerCutsSlowClients(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	})
	srv := newServer("", h, timeouts{header: 300 * time.Millisecond, request: 600 * time.Millisecond, idle: time.Second})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	for name, send := range map[string]string{
		"body":    "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n",
		"headers": "GET / HTTP/1.1\r\nHost: x\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			c, err := net.Dial("tcp", ln.Addr().String())
			require.NoError(t, err)
			defer c.Close()
			_, err = io.WriteString(c, send)
			require.NoError(t, err)
			start := time.Now()
			go func() { // a byte every 100 ms
				for range 100 {
					time.Sleep(100 * time.Millisecond)
					if _, err := c.Write([]byte("x")); err != nil {
						return
					}
				}
			}()
			require.NoError(t, c.SetReadDeadline(start.Add(5*time.Second)))
			_, err = io.Copy(io.Discard, c) // until the server closes (or resets)
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server kept the connection open")
			assert.Less(t, time.Since(start), 3*time.Second)
		})
	}
}
