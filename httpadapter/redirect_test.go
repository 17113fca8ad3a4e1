package httpadapter_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
)

// testOldFileURLs: after a rename, the old file_url answers 308 to the
// current one (under the mount prefix), uncached, with the attachment as
// its body, to whoever may see the attachment, and only to them; a client
// that follows it gets the bytes. Renaming back makes the old name current
// again, and the name in between redirects to it.
func testOldFileURLs(t *testing.T, newStore newStoreFunc) {
	var opens atomic.Int64
	e := newEnv(t, newStore(t), envConfig{prefix: "/api/chat", blobs: func(b listingBlobs) attachments.BlobStore {
		return openCounter{listingBlobs: b, opens: &opens}
	}})
	fx := e.fixture(t)
	noFollow := *e.srv.Client()
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	get := func(method, u, user string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, u, nil)
		require.NoError(t, err)
		if user != "" {
			req.Header.Set("Authorization", "Bearer tok-"+user)
		}
		res, err := noFollow.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, b
	}
	rename := func(name string) string {
		t.Helper()
		res := e.as(t, "alice", "PUT", "/v1/attachments/"+fx.attA, form("filename="+url.QueryEscape(name)))
		require.Equal(t, 200, res.StatusCode, "body: %s", res.body)
		return res.json(t)["file_url"].(string)
	}

	oldURL := e.url + "/v1/attachments/" + fx.attA + "/a.txt"
	newURL := rename("minutes é.txt")
	require.Equal(t, e.url+"/v1/attachments/"+fx.attA+"/minutes%20%C3%A9.txt", newURL)

	for _, user := range []string{"alice", "bob"} {
		before := opens.Load()
		res, body := get("GET", oldURL, user)
		require.Equal(t, http.StatusPermanentRedirect, res.StatusCode, "body: %s", body)
		assert.Equal(t, newURL, res.Header.Get("Location"))
		assert.Equal(t, "no-store", res.Header.Get("Cache-Control"))
		var att map[string]any
		require.NoError(t, json.Unmarshal(body, &att), "body: %s", body)
		assert.Equal(t, fx.attA, att["id"])
		assert.Equal(t, "minutes é.txt", att["filename"])
		assert.Equal(t, newURL, att["file_url"])

		res, body = get("HEAD", oldURL, user)
		assert.Equal(t, http.StatusPermanentRedirect, res.StatusCode)
		assert.Equal(t, newURL, res.Header.Get("Location"))
		assert.Empty(t, body)
		// The name is checked before the file is opened: a redirect reads
		// nothing from the bucket.
		assert.Equal(t, before, opens.Load(), "bucket opens for the redirects")

		followed := e.as(t, user, "GET", oldURL, nil, "Range", "bytes=0-4")
		require.Equal(t, http.StatusPartialContent, followed.StatusCode)
		assert.Equal(t, newURL, followed.Request.URL.String())
		assert.Equal(t, textA[:5], string(followed.body))
		assert.Equal(t, before+1, opens.Load(), "bucket opens after the followed redirect")
	}

	// Nothing is redirected for those who may not see the attachment, nor
	// for a file name under an id that names nothing.
	for _, tc := range []struct {
		name, url, user string
		status          int
	}{
		{"no token", oldURL, "", 401},
		{"hidden by the policy", e.url + "/v1/attachments/" + fx.attP + "/old.txt", "mallory", 404},
		{"another's in no conversation", e.url + "/v1/attachments/" + fx.attN + "/old.txt", "bob", 404},
		{"unknown id", e.url + "/v1/attachments/att_01jzzzzzzzzzzzzzzzzzzzzzzz/a.txt", "alice", 404},
	} {
		res, body := get("GET", tc.url, tc.user)
		assert.Equal(t, tc.status, res.StatusCode, "%s: %s", tc.name, body)
		assert.Empty(t, res.Header.Get("Location"), tc.name)
	}

	// A name given back is served again, and the name in between points to it.
	assert.Equal(t, oldURL, rename("a.txt"))
	res, body := get("GET", oldURL, "bob")
	assert.Equal(t, http.StatusOK, res.StatusCode, "body: %s", body)
	assert.Equal(t, textA, string(body))
	before := opens.Load()
	res, _ = get("GET", newURL, "bob")
	assert.Equal(t, http.StatusPermanentRedirect, res.StatusCode)
	assert.Equal(t, before, opens.Load(), "bucket opens for the redirect")
	assert.Equal(t, oldURL, res.Header.Get("Location"))

	// Deleted: every name is a 404.
	require.Equal(t, 200, e.as(t, "alice", "DELETE", "/v1/attachments/"+fx.attA, nil).StatusCode)
	for _, u := range []string{oldURL, newURL} {
		res, _ := get("GET", u, "alice")
		assert.Equal(t, http.StatusNotFound, res.StatusCode)
	}
}

// openCounter is a blob store that counts the objects it opens.
type openCounter struct {
	listingBlobs
	opens *atomic.Int64
}

func (b openCounter) Open(ctx context.Context, key string) (io.ReadSeekCloser, error) {
	b.opens.Add(1)
	return b.listingBlobs.Open(ctx, key)
}
