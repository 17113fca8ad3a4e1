package httpadapter_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

type newStoreFunc = func(t *testing.T) storetest.Store

func testAuthenticatorErrors(t *testing.T, newStore newStoreFunc) {
	for _, tc := range []struct {
		name       string
		err        error
		wantStatus int
		wantType   string
	}{
		{"unauthenticated", fmt.Errorf("lookup: %w", messaging.ErrUnauthenticated), 401, "authentication_error"},
		{"unavailable", &messaging.Error{Kind: messaging.ErrUnavailable, Message: "db down", Err: errors.New("dial tcp 10.0.0.1:5432")}, 503, "api_error"},
		{"unexpected", errors.New("pq: password authentication failed for user secret_admin"), 500, "api_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, newStore(t), envConfig{auth: func(httpadapter.Authenticator) httpadapter.Authenticator {
				return httpadapter.AuthenticatorFunc(func(*http.Request) (messaging.Contact, error) {
					return messaging.Contact{}, tc.err
				})
			}})
			res := e.as(t, "alice", "GET", "/v1/messages", nil)
			require.Equal(t, tc.wantStatus, res.StatusCode, "body: %s", res.body)
			body := res.json(t)["error"].(map[string]any)
			assert.Equal(t, tc.wantType, body["type"])
			assert.NotContains(t, string(res.body), "secret_admin")
			assert.NotContains(t, string(res.body), "10.0.0.1")
			switch tc.wantStatus {
			case 401:
				assert.Equal(t, `Bearer error="invalid_token"`, res.Header.Get("WWW-Authenticate"))
			case 503:
				assert.NotEmpty(t, res.Header.Get("Retry-After"))
			case 500:
				assert.Equal(t, "internal error", body["message"])
				assert.True(t, strings.HasPrefix(res.Header.Get("Request-Id"), "req_"), "Request-Id %q", res.Header.Get("Request-Id"))
			}
		})
	}
}

func testNoAuthenticator(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{noAuth: true})
	res := e.as(t, "alice", "GET", "/v1/messages", nil)
	assertError(t, res, 401, *errAuth)
	assert.Equal(t, "Bearer", res.Header.Get("WWW-Authenticate"))
}

func testTouch(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{})
	c, err := e.store.GetContact(e.ctx, e.users["bob"].ID)
	require.NoError(t, err)
	require.True(t, c.LastActiveAt.IsZero())
	before := time.Now().Add(-time.Second)
	// Even a rejected request is activity of an authenticated caller.
	e.as(t, "bob", "GET", "/v1/messages?limit=0", nil)
	c, err = e.store.GetContact(e.ctx, e.users["bob"].ID)
	require.NoError(t, err)
	assert.True(t, c.LastActiveAt.After(before), "last_active_at moved: %v", c.LastActiveAt)
	// The contact shows it.
	m := e.as(t, "bob", "POST", "/v1/messages", form("conversation_id=touch&message=hi")).json(t)
	got, _ := lookup(m, "contact.last_active_at")
	assert.Equal(t, float64(c.LastActiveAt.Unix()), got)
	// An unknown token touches nobody.
	e.do(t, "GET", "/v1/messages", "tok-nobody", nil)
	c, err = e.store.GetContact(e.ctx, e.users["mallory"].ID)
	require.NoError(t, err)
	assert.True(t, c.LastActiveAt.IsZero())
}

// ids of a list response's data.
func listIDs(t testing.TB, res *response) ([]string, bool) {
	t.Helper()
	require.Equal(t, 200, res.StatusCode, "body: %s", res.body)
	v := res.json(t)
	var out []string
	for _, it := range v["data"].([]any) {
		out = append(out, it.(map[string]any)["id"].(string))
	}
	return out, v["has_more"].(bool)
}

func testMessagePaging(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{})
	var ids []string // oldest first
	for i := range 25 {
		res := e.as(t, "alice", "POST", "/v1/messages", form(fmt.Sprintf("conversation_id=paging&message=m%d", i)))
		require.Equal(t, 201, res.StatusCode)
		ids = append(ids, res.json(t)["id"].(string))
	}
	_, err := e.msgs.Create(e.ctx, e.users["bob"], messaging.NewMessage{ConversationID: "elsewhere", Text: "x"})
	require.NoError(t, err)
	newest := func(from, to int) []string { // ids[from..to] newest first, 1-based oldest positions
		var out []string
		for i := to; i >= from; i-- {
			out = append(out, ids[i-1])
		}
		return out
	}
	list := func(query string) ([]string, bool) {
		return listIDs(t, e.as(t, "alice", "GET", "/v1/messages?conversation_id=paging"+query, nil))
	}

	got, more := list("")
	assert.Equal(t, newest(16, 25), got, "default limit 10")
	assert.True(t, more)

	got, more = list("&limit=5")
	assert.Equal(t, newest(21, 25), got)
	assert.True(t, more)

	// Walk backwards in time with starting_after.
	var walked []string
	cursor := ""
	for {
		q := "&limit=7"
		if cursor != "" {
			q += "&starting_after=" + cursor
		}
		page, more := list(q)
		walked = append(walked, page...)
		if !more {
			break
		}
		cursor = page[len(page)-1]
	}
	assert.Equal(t, newest(1, 25), walked)

	got, more = list("&limit=5&starting_after=" + ids[4]) // just older than the 5th oldest
	assert.Equal(t, newest(1, 4), got)
	assert.False(t, more)

	// As at Stripe: ending_before the 11th oldest gives the 16th to 12th.
	got, more = list("&limit=5&ending_before=" + ids[10])
	assert.Equal(t, newest(12, 16), got)
	assert.True(t, more)
	got, more = list("&limit=5&ending_before=" + ids[20])
	assert.Equal(t, newest(22, 25), got)
	assert.False(t, more)
	got, more = list("&ending_before=" + ids[24])
	assert.Empty(t, got)
	assert.False(t, more)

	// Without conversation_id, every visible conversation.
	all, more := listIDs(t, e.as(t, "alice", "GET", "/v1/messages?limit=100", nil))
	assert.Len(t, all, 26)
	assert.False(t, more)

	res := e.as(t, "alice", "GET", "/v1/messages?conversation_id=paging&starting_after="+ids[3]+"&ending_before="+ids[8], nil)
	assertError(t, res, 400, *invalid("ending_before"))
}

func testAttachmentPaging(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{})
	var ids []string
	for i := range 12 {
		res := e.as(t, "alice", "POST", "/v1/attachments", multipartBody(field("conversation_id", "pics"), file(fmt.Sprintf("f%d.txt", i), "text/plain", "x")))
		require.Equal(t, 201, res.StatusCode, "body: %s", res.body)
		ids = append(ids, res.json(t)["id"].(string))
	}
	e.upload(t, "bob", "other", "o.txt", "", "o")
	list := func(query string) ([]string, bool) {
		return listIDs(t, e.as(t, "alice", "GET", "/v1/attachments?conversation_id=pics"+query, nil))
	}
	got, more := list("")
	assert.Equal(t, []string{ids[11], ids[10], ids[9], ids[8], ids[7], ids[6], ids[5], ids[4], ids[3], ids[2]}, got)
	assert.True(t, more)
	got, more = list("&limit=4&starting_after=" + ids[4])
	assert.Equal(t, []string{ids[3], ids[2], ids[1], ids[0]}, got)
	assert.False(t, more)
	got, more = list("&limit=3&ending_before=" + ids[4])
	assert.Equal(t, []string{ids[7], ids[6], ids[5]}, got)
	assert.True(t, more)
	got, _ = listIDs(t, e.as(t, "alice", "GET", "/v1/attachments?limit=100", nil))
	assert.Len(t, got, 13)
}

func testListVisibility(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{})
	for _, conv := range []string{"public", "private-room"} {
		_, err := e.msgs.Create(e.ctx, e.users["alice"], messaging.NewMessage{ConversationID: conv, Text: "in " + conv})
		require.NoError(t, err)
	}
	got, _ := listIDs(t, e.as(t, "alice", "GET", "/v1/messages", nil))
	assert.Len(t, got, 2)
	got, _ = listIDs(t, e.as(t, "mallory", "GET", "/v1/messages?conversation_id=public", nil))
	assert.Len(t, got, 1)
	got, _ = listIDs(t, e.as(t, "mallory", "GET", "/v1/messages?conversation_id=private-room", nil))
	assert.Empty(t, got)
}

func testMount(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{prefix: "/api/chat"})
	res := e.as(t, "alice", "POST", "/v1/messages", form("conversation_id=mounted&message=hi"))
	require.Equal(t, 201, res.StatusCode, "body: %s", res.body)
	id := res.json(t)["id"].(string)
	assert.Equal(t, "/api/chat/v1/messages/"+id, res.Header.Get("Location"))
	assert.Equal(t, 200, e.do(t, "GET", e.srv.URL+res.Header.Get("Location"), "tok-alice", nil).StatusCode)

	res = e.as(t, "alice", "POST", "/v1/attachments", multipartBody(field("message_id", id), file("x y.txt", "text/plain", "mounted bytes")))
	require.Equal(t, 201, res.StatusCode, "body: %s", res.body)
	att := res.json(t)
	assert.Equal(t, "/api/chat/v1/attachments/"+att["id"].(string), res.Header.Get("Location"))
	fileURL := att["file_url"].(string)
	assert.Equal(t, e.srv.URL+"/api/chat/v1/attachments/"+att["id"].(string)+"/x%20y.txt", fileURL)
	file := e.do(t, "GET", fileURL, "tok-alice", nil)
	require.Equal(t, 200, file.StatusCode)
	assert.Equal(t, "mounted bytes", string(file.body))

	m := e.as(t, "alice", "GET", "/v1/messages/"+id, nil).json(t)
	got, _ := lookup(m, "attachments.0.file_url")
	assert.Equal(t, fileURL, got)

	assertError(t, e.as(t, "alice", "GET", "/v1/unknown", nil), 404, *errNotFound)
	assertError(t, e.as(t, "alice", "PATCH", "/v1/messages", nil), 405, *errMethod)

	// http.StripPrefix with a trailing slash works too.
	e2 := newEnv(t, newStore(t), envConfig{})
	mux := http.NewServeMux()
	api, err := httpadapter.New(e2.msgs, &httpadapter.Options{Authenticator: httpadapter.StaticTokens(e2.tokens)})
	require.NoError(t, err)
	mux.Handle("/x/", http.StripPrefix("/x/", checkAPI(t, api, false)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	res = e2.do(t, "POST", srv.URL+"/x/v1/messages", "tok-alice", form("conversation_id=c&message=hi"))
	require.Equal(t, 201, res.StatusCode, "body: %s", res.body)
	assert.True(t, strings.HasPrefix(res.Header.Get("Location"), "/x/v1/messages/msg_"), res.Header.Get("Location"))
}

func testBaseURL(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{prefix: "/inner", opts: httpadapter.Options{BaseURL: "https://chat.example.com/api/"}})
	res := e.as(t, "alice", "POST", "/v1/attachments", multipartBody(file("a.txt", "text/plain", "x")))
	require.Equal(t, 201, res.StatusCode, "body: %s", res.body)
	id := res.json(t)["id"].(string)
	assert.Equal(t, "https://chat.example.com/api/v1/attachments/"+id+"/a.txt", res.json(t)["file_url"])
	assert.Equal(t, "/api/v1/attachments/"+id, res.Header.Get("Location"))
}

func testForwardedProto(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{})
	id := e.upload(t, "alice", "c", "a.txt", "", "x")
	res := e.as(t, "alice", "GET", "/v1/attachments/"+id, nil, "X-Forwarded-Proto", "https")
	assert.Equal(t, "https"+strings.TrimPrefix(e.url, "http")+"/v1/attachments/"+id+"/a.txt", res.json(t)["file_url"])
	res = e.as(t, "alice", "GET", "/v1/attachments/"+id, nil, "X-Forwarded-Proto", "gopher")
	assert.Equal(t, e.url+"/v1/attachments/"+id+"/a.txt", res.json(t)["file_url"])
}

// signingBlobs is a blob store that can sign URLs.
type signingBlobs struct {
	listingBlobs
	fail bool
}

func (s signingBlobs) SignedURL(_ context.Context, key, filename, _ string, expiry time.Duration) (string, error) {
	if s.fail {
		return "", errors.New("signing key unavailable")
	}
	return fmt.Sprintf("https://bucket.example/%s?name=%s&expires=%d", key, filename, int(expiry.Seconds())), nil
}

func testSignedURLs(t *testing.T, newStore newStoreFunc) {
	t.Run("signer", func(t *testing.T) {
		e := newEnv(t, newStore(t), envConfig{
			opts:  httpadapter.Options{SignedURLExpiry: time.Minute},
			blobs: func(b listingBlobs) attachments.BlobStore { return signingBlobs{listingBlobs: b} },
		})
		res := e.as(t, "alice", "POST", "/v1/attachments", multipartBody(file("a.txt", "text/plain", "x")))
		require.Equal(t, 201, res.StatusCode)
		id := res.json(t)["id"].(string)
		// The key is the installation's prefix and the id.
		assert.Regexp(t, `^https://bucket\.example/attachments/ins_[0-9a-z]+/`+id+`\?name=a\.txt&expires=60$`, res.json(t)["file_url"])
		// The adapter's own route still serves the bytes.
		assert.Equal(t, 200, e.as(t, "alice", "GET", "/v1/attachments/"+id+"/a.txt", nil).StatusCode)
	})
	t.Run("signer fails", func(t *testing.T) {
		e := newEnv(t, newStore(t), envConfig{
			opts:  httpadapter.Options{SignedURLExpiry: time.Minute},
			blobs: func(b listingBlobs) attachments.BlobStore { return signingBlobs{listingBlobs: b, fail: true} },
		})
		id := e.upload(t, "alice", "c", "a.txt", "", "x")
		res := e.as(t, "alice", "GET", "/v1/attachments/"+id, nil)
		require.Equal(t, 200, res.StatusCode)
		assert.Equal(t, e.url+"/v1/attachments/"+id+"/a.txt", res.json(t)["file_url"])
	})
	t.Run("redirect", func(t *testing.T) {
		// DownloadRedirectExpiry: file_url is the route, which answers a
		// caller who may see the file with a 302 to a signed URL.
		e := newEnv(t, newStore(t), envConfig{
			opts:  httpadapter.Options{DownloadRedirectExpiry: 5 * time.Minute},
			blobs: func(b listingBlobs) attachments.BlobStore { return signingBlobs{listingBlobs: b} },
		})
		fx := e.fixture(t)
		res := e.as(t, "alice", "GET", "/v1/attachments/"+fx.attP, nil)
		require.Equal(t, 200, res.StatusCode)
		fileURL := res.json(t)["file_url"].(string)
		assert.Equal(t, e.url+"/v1/attachments/"+fx.attP+"/"+path.Base(fileURL), fileURL, "file_url is the route")
		noFollow := *e.srv.Client()
		noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		get := func(u, user string) *http.Response {
			t.Helper()
			req, err := http.NewRequest("GET", u, nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer tok-"+user)
			res, err := noFollow.Do(req)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
			return res
		}
		got := get(fileURL, "alice")
		require.Equal(t, http.StatusFound, got.StatusCode)
		assert.Regexp(t, `^https://bucket\.example/attachments/ins_[0-9a-z]+/`+fx.attP+`\?name=.+&expires=300$`, got.Header.Get("Location"))
		assert.Equal(t, "no-store", got.Header.Get("Cache-Control"))
		got = get(fileURL, "mallory")
		assert.Equal(t, http.StatusNotFound, got.StatusCode, "a caller who may not see the file")
		assert.Empty(t, got.Header.Get("Location"))
		got = get(e.url+"/v1/attachments/"+fx.attP+"/other-name.txt", "alice")
		assert.Equal(t, http.StatusPermanentRedirect, got.StatusCode, "another name: to the current one on the route")
	})
	t.Run("redirect, no signer", func(t *testing.T) {
		e := newEnv(t, newStore(t), envConfig{
			opts:  httpadapter.Options{DownloadRedirectExpiry: 5 * time.Minute},
			blobs: func(b listingBlobs) attachments.BlobStore { return struct{ listingBlobs }{b} },
		})
		id := e.upload(t, "alice", "c", "a.txt", "", "x")
		for range 2 {
			res := e.as(t, "alice", "GET", "/v1/attachments/"+id+"/a.txt", nil)
			assert.Equal(t, 200, res.StatusCode, "served by the route")
			assert.Equal(t, "x", string(res.body))
		}
	})
	t.Run("no signer", func(t *testing.T) {
		e := newEnv(t, newStore(t), envConfig{
			opts: httpadapter.Options{SignedURLExpiry: time.Minute},
			// Only the interfaces' methods: no SignedURL, even over S3.
			blobs: func(b listingBlobs) attachments.BlobStore { return struct{ listingBlobs }{b} },
		})
		id := e.upload(t, "alice", "c", "a.txt", "", "x")
		for range 2 {
			res := e.as(t, "alice", "GET", "/v1/attachments/"+id, nil)
			assert.Equal(t, e.url+"/v1/attachments/"+id+"/a.txt", res.json(t)["file_url"])
		}
	})
}

// testUploadFlow uploads, links, fetches, renames and deletes through HTTP.
func testUploadFlow(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{})
	data := strings.Repeat("0123456789", 300)
	res := e.as(t, "alice", "POST", "/v1/attachments", multipartBody(field("conversation_id", "flow"), file("report.csv", "text/csv", data)))
	require.Equal(t, 201, res.StatusCode, "body: %s", res.body)
	att := res.json(t)
	id := att["id"].(string)
	assert.Equal(t, float64(len(data)), att["file_size"])
	assert.Equal(t, sha(data), att["sha256"])

	res = e.as(t, "alice", "POST", "/v1/messages", jsonBody(`{"conversation_id":"flow","message":"see attached","attachments":["`+id+`"]}`))
	require.Equal(t, 201, res.StatusCode, "body: %s", res.body)
	msgID := res.json(t)["id"].(string)
	fileURL, _ := lookup(res.json(t), "attachments.0.file_url")

	file := e.as(t, "bob", "GET", fileURL.(string), nil, "Range", "bytes=10-19")
	require.Equal(t, 206, file.StatusCode)
	assert.Equal(t, data[10:20], string(file.body))
	assert.Equal(t, fmt.Sprintf("bytes 10-19/%d", len(data)), file.Header.Get("Content-Range"))
	assert.Equal(t, `attachment; filename="report.csv"; filename*=UTF-8''report.csv`, file.Header.Get("Content-Disposition"))
	etag := file.Header.Get("ETag")
	assert.Equal(t, 304, e.as(t, "bob", "GET", fileURL.(string), nil, "If-None-Match", etag).StatusCode)

	res = e.as(t, "alice", "PUT", "/v1/attachments/"+id, form("filename=final.csv"))
	require.Equal(t, 200, res.StatusCode)
	newURL := res.json(t)["file_url"].(string)
	assert.NotEqual(t, fileURL, newURL)
	assert.True(t, strings.HasSuffix(newURL, "/final.csv"))
	old := e.as(t, "bob", "GET", fileURL.(string), nil) // redirected to newURL
	assert.Equal(t, 200, old.StatusCode)
	assert.Equal(t, newURL, old.Request.URL.String())
	assert.Equal(t, data, string(e.as(t, "bob", "GET", newURL, nil).body))

	res = e.as(t, "alice", "DELETE", "/v1/messages/"+msgID, nil)
	require.Equal(t, 200, res.StatusCode)
	assert.Equal(t, map[string]any{"id": msgID, "object": "message", "deleted": true}, res.json(t))
	assert.Equal(t, 404, e.as(t, "alice", "GET", newURL, nil).StatusCode)
	assert.Equal(t, 0, e.blobCount(t), "the message's files are gone")
}

// testUploadLimits checks that rejected uploads store nothing, with an
// upload that is never buffered whole.
func testUploadLimits(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{})
	before := e.snapshot(t)
	// A streamed body of unknown length, far beyond every limit.
	pr, pw := io.Pipe()
	mw := multipartWriter(pw)
	go func() {
		w, _ := mw.CreateFormFile("file", "huge.bin")
		chunk := strings.Repeat("z", 1<<10)
		for range 1 << 10 { // 1 MiB
			if _, err := io.WriteString(w, chunk); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	req, err := http.NewRequest("POST", e.url+"/v1/attachments", pr)
	require.NoError(t, err)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer tok-alice")
	resp, err := e.srv.Client().Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_ = pr.Close()
	assertError(t, &response{Response: resp, body: body}, 413, wantErr{"invalid_request_error", "too_large", "file"})
	e.assertUnchanged(t, before)
}

// testUploadQuota: with attachments.Options.UploadQuota, an upload that
// would take its caller's files beyond the quota is a 413
// upload_quota_exceeded naming the file, stores nothing, and a delete makes
// room; on every backend, since the repository sums the sizes.
func testUploadQuota(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{files: attachments.Options{UploadQuota: 5000}})
	overQuota := wantErr{"invalid_request_error", "upload_quota_exceeded", "file"}
	first := e.upload(t, "alice", "quota", "a.bin", "application/x-a", strings.Repeat("a", 3000))
	e.upload(t, "bob", "quota", "b.bin", "application/x-b", strings.Repeat("b", 4000))
	before := e.snapshot(t)
	res := e.as(t, "alice", "POST", "/v1/attachments", multipartBody(file("c.bin", "application/x-c", strings.Repeat("c", 2001))))
	assertError(t, res, http.StatusRequestEntityTooLarge, overQuota)
	assert.Contains(t, res.json(t)["error"].(map[string]any)["message"], "quota of 5000 bytes")
	e.assertUnchanged(t, before)

	e.upload(t, "alice", "quota", "c.bin", "application/x-c", strings.Repeat("c", 2000)) // exactly the quota
	before = e.snapshot(t)
	res = e.as(t, "alice", "POST", "/v1/attachments", multipartBody(file("empty.txt", "text/plain", "")))
	assertError(t, res, http.StatusRequestEntityTooLarge, overQuota)
	e.assertUnchanged(t, before)

	require.Equal(t, http.StatusOK, e.as(t, "alice", "DELETE", "/v1/attachments/"+first, nil).StatusCode)
	e.upload(t, "alice", "quota", "d.bin", "application/x-d", strings.Repeat("d", 3000))
}

// failingBlobs fails every Put with err after reading some of the body.
type failingBlobs struct {
	listingBlobs
	err error
}

func (f failingBlobs) Put(_ context.Context, _, _ string, r io.Reader) error {
	_, _ = io.CopyN(io.Discard, r, 10)
	return f.err
}

func testBackendFailures(t *testing.T, newStore newStoreFunc) {
	for _, tc := range []struct {
		name       string
		err        error
		wantStatus int
	}{
		{"unavailable", &messaging.Error{Kind: messaging.ErrUnavailable, Message: "bucket unreachable", Err: errors.New("dial s3.internal")}, 503},
		{"unexpected", errors.New("s3: AccessDenied for arn:aws:iam::secret"), 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, newStore(t), envConfig{blobs: func(b listingBlobs) attachments.BlobStore {
				return failingBlobs{listingBlobs: b, err: tc.err}
			}})
			before := e.snapshot(t)
			res := e.as(t, "alice", "POST", "/v1/attachments", multipartBody(field("conversation_id", "c"), file("a.txt", "text/plain", strings.Repeat("a", 100))))
			require.Equal(t, tc.wantStatus, res.StatusCode, "body: %s", res.body)
			assertError(t, res, tc.wantStatus, wantErr{"api_error", "", ""})
			assert.NotContains(t, string(res.body), "secret")
			assert.NotContains(t, string(res.body), "s3.internal")
			if tc.wantStatus == 503 {
				assert.NotEmpty(t, res.Header.Get("Retry-After"))
			} else {
				assert.Equal(t, "internal error", res.json(t)["error"].(map[string]any)["message"])
				assert.NotEmpty(t, res.Header.Get("Request-Id"))
			}
			e.assertUnchanged(t, before) // a failed upload leaves no row and no file
		})
	}
}

func testConcurrentReactions(t *testing.T, newStore newStoreFunc) {
	const n = 100
	e := newEnv(t, newStore(t), envConfig{extraUs: n})
	m, err := e.msgs.Create(e.ctx, e.users["alice"], messaging.NewMessage{ConversationID: "busy", Text: "react!"})
	require.NoError(t, err)
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			user := fmt.Sprintf("user%03d", i)
			res := e.as(t, user, "PUT", "/v1/messages/"+m.ID, form("reactions[thumbs_up][]="+user))
			codes[i] = res.StatusCode
		})
	}
	wg.Wait()
	for i, c := range codes {
		assert.Equal(t, 200, c, "request %d", i)
	}
	res := e.as(t, "alice", "GET", "/v1/messages/"+m.ID, nil)
	reactors, ok := lookup(res.json(t), "reactions.0.thumbs_up")
	require.True(t, ok, "body: %s", res.body)
	assert.Len(t, reactors, n)
	seen := map[any]bool{}
	for _, r := range reactors.([]any) {
		seen[r] = true
	}
	assert.Len(t, seen, n)
}

// testRateLimit: a refusal of Options.Limit is a 429 with Retry-After, and
// the refused request changes nothing.
func testRateLimit(t *testing.T, newStore newStoreFunc) {
	var mu sync.Mutex
	left := map[string]int{}
	e := newEnv(t, newStore(t), envConfig{opts: httpadapter.Options{
		Limit: func(_ *http.Request, caller messaging.Contact) (time.Duration, bool) {
			mu.Lock()
			defer mu.Unlock()
			if left[caller.Username] >= 2 {
				return 1500 * time.Millisecond, false
			}
			left[caller.Username]++
			return 0, true
		},
	}})
	for range 2 {
		res := e.as(t, "alice", "POST", "/v1/messages", form("conversation_id=limited&message=hi"))
		require.Equal(t, http.StatusCreated, res.StatusCode, "%s", res.body)
	}
	res := e.as(t, "alice", "POST", "/v1/messages", form("conversation_id=limited&message=one+too+many"))
	assertError(t, res, http.StatusTooManyRequests, wantErr{typ: "rate_limit_error", code: "rate_limited"})
	assert.Equal(t, "2", res.Header.Get("Retry-After"), "rounded up to whole seconds")
	// bob has his own allowance, and alice's refused message was not stored.
	list := e.as(t, "bob", "GET", "/v1/messages?conversation_id=limited", nil)
	require.Equal(t, http.StatusOK, list.StatusCode)
	ids, _ := listIDs(t, list)
	assert.Len(t, ids, 2)
}

// TestRateLimitSeesRefusedTokens: Options.Limit is asked about requests
// whose token is refused too (with no caller), so that a host can throttle
// token guessing by address (issue 10, defect 6: it never saw them).
func TestRateLimitSeesRefusedTokens(t *testing.T) {
	var mu sync.Mutex
	guesses := map[string]int{} // by client address
	e := newEnv(t, memstore.New().Driver(), envConfig{opts: httpadapter.Options{
		Limit: func(r *http.Request, caller messaging.Contact) (time.Duration, bool) {
			if caller.ID != "" {
				return 0, true
			}
			mu.Lock()
			defer mu.Unlock()
			host, _, _ := strings.Cut(r.RemoteAddr, ":")
			guesses[host]++
			return time.Minute, guesses[host] <= 3
		},
	}})
	for i := range 3 {
		res := e.do(t, "GET", "/v1/messages", fmt.Sprintf("guess-%d", i), nil)
		assertError(t, res, http.StatusUnauthorized, wantErr{typ: "authentication_error", code: "unauthenticated"})
	}
	res := e.do(t, "GET", "/v1/messages", "guess-4", nil)
	assertError(t, res, http.StatusTooManyRequests, wantErr{typ: "rate_limit_error", code: "rate_limited"})
	assert.Equal(t, "60", res.Header.Get("Retry-After"))
	// A known token is not throttled by the guesses.
	assert.Equal(t, http.StatusOK, e.as(t, "alice", "GET", "/v1/messages", nil).StatusCode)
}
