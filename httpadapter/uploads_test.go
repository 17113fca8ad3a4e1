package httpadapter_test

import (
	"context"
	"encoding/json"
	"image/color"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

// TestDirectUploads: reserve, send, complete over HTTP, on every backend,
// and with files in MinIO when PARLEY_TEST_S3 is set (the bytes then go
// to the bucket's signed URL, never through the handler).
func TestDirectUploads(t *testing.T) {
	type setup struct {
		name  string
		store func(t *testing.T) storetest.Store
	}
	var setups []setup
	for _, b := range backendtest.All(t) {
		setups = append(setups, setup{b.Name, func(t *testing.T) storetest.Store { return b.New(t) }})
	}
	if u := os.Getenv("PARLEY_TEST_S3"); u != "" {
		sqlite := backendtest.SQL(t)[0]
		setups = append(setups, setup{"s3", func(t *testing.T) storetest.Store {
			return withBlobs{Store: sqlite.Open(t).Driver(), blobs: s3Blobs(t, u)}
		}})
	}
	for _, s := range setups {
		t.Run(s.name, func(t *testing.T) { testDirectUploads(t, s.name, s.store(t)) })
	}
}

func testDirectUploads(t *testing.T, name string, store storetest.Store) {
	e := newEnv(t, store, envConfig{})
	fx := e.fixture(t)
	img := pngOf(t, 300, 200, color.NRGBA{10, 200, 10, 255})

	reserve := func(t *testing.T, body string, hdr ...string) (int, map[string]any) {
		t.Helper()
		res := e.as(t, "alice", "POST", "/v1/uploads", &reqBody{ctype: "application/json", data: body}, hdr...)
		var v map[string]any
		require.NoError(t, json.Unmarshal(res.body, &v), "%s", res.body)
		return res.StatusCode, v
	}
	// send PUTs the bytes to upload_url as a client does: with the
	// caller's token on the handler's own route, with the given headers
	// alone on a signed URL.
	send := func(t *testing.T, up map[string]any, data string) int {
		t.Helper()
		u := up["upload_url"].(string)
		if strings.HasPrefix(u, e.url) {
			return e.as(t, "alice", up["upload_method"].(string), u, &reqBody{ctype: "application/octet-stream", data: data}).StatusCode
		}
		req, err := http.NewRequest(up["upload_method"].(string), u, strings.NewReader(data))
		require.NoError(t, err)
		for k, v := range up["upload_headers"].(map[string]any) {
			req.Header.Set(k, v.(string))
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		return res.StatusCode
	}

	body := `{"filename":"green.png","file_size":` + itoa(len(img)) + `,"sha256":"` + sha(img) + `","conversation_id":"` + fx.conv + `"}`
	status, up := reserve(t, body, "Idempotency-Key", "r-1")
	require.Equal(t, 201, status, "%v", up)
	assert.Equal(t, "upload", up["object"])
	assert.Equal(t, "PUT", up["upload_method"])
	if name == "s3" {
		assert.False(t, strings.HasPrefix(up["upload_url"].(string), e.url), "a signed URL of the bucket")
		assert.Contains(t, up["upload_headers"], "x-amz-checksum-sha256")
	} else {
		assert.Equal(t, e.url+"/v1/uploads/"+up["id"].(string)+"/content", up["upload_url"])
	}
	_, again := reserve(t, body, "Idempotency-Key", "r-1")
	assert.Equal(t, up["id"], again["id"], "a retried reserve")

	res := e.as(t, "alice", "POST", "/v1/uploads/"+up["id"].(string)+"/complete", nil)
	assert.Equal(t, 400, res.StatusCode, "nothing sent: %s", res.body)
	assert.NotEqual(t, 200, send(t, up, strings.ToUpper(img[:10])+img[10:]), "other bytes are refused")
	require.Equal(t, 200, send(t, up, img))
	res = e.as(t, "bob", "POST", "/v1/uploads/"+up["id"].(string)+"/complete", nil)
	assert.Equal(t, 404, res.StatusCode, "another caller's upload")
	res = e.as(t, "alice", "POST", "/v1/uploads/"+up["id"].(string)+"/complete", nil, "Idempotency-Key", "c-1")
	require.Equal(t, 201, res.StatusCode, "%s", res.body)
	var att map[string]any
	require.NoError(t, json.Unmarshal(res.body, &att))
	assert.Equal(t, "image/png", att["file_type"])
	assert.Equal(t, float64(len(img)), att["file_size"])
	assert.Equal(t, float64(300), att["image_width"])
	assert.Equal(t, fx.conv, att["conversation_id"])
	res2 := e.as(t, "alice", "POST", "/v1/uploads/"+up["id"].(string)+"/complete", nil, "Idempotency-Key", "c-1")
	assert.Equal(t, 201, res2.StatusCode)
	assert.Equal(t, "true", res2.Header.Get("Idempotent-Replayed"))
	assert.JSONEq(t, string(res.body), string(res2.body))

	file := e.as(t, "bob", "GET", "/v1/attachments/"+att["id"].(string)+"/green.png", nil)
	require.Equal(t, 200, file.StatusCode)
	assert.Equal(t, img, string(file.body))
	thumb := e.as(t, "bob", "GET", "/v1/attachments/"+att["id"].(string)+"/thumbnail?size=small", nil)
	assert.Equal(t, 200, thumb.StatusCode)

	// Refused before any byte: too large, a bad digest, a hidden
	// conversation.
	status, v := reserve(t, `{"filename":"big","file_size":`+itoa(testMaxUpload+1)+`,"sha256":"`+sha("")+`"}`)
	assert.Equal(t, 413, status, "%v", v)
	status, v = reserve(t, `{"filename":"x","file_size":1,"sha256":"nope"}`)
	assert.Equal(t, 400, status, "%v", v)
	status, v = reserve(t, `{"filename":"x","file_size":"1","sha256":"`+sha("x")+`"}`)
	assert.Equal(t, 400, status, "a JSON size is a number: %v", v)
	res = e.as(t, "mallory", "POST", "/v1/uploads", form("filename=x&file_size=1&sha256="+sha("x")+"&conversation_id="+fx.private))
	assert.Equal(t, 404, res.StatusCode, "%s", res.body)
	res = e.as(t, "alice", "PUT", "/v1/uploads/upl_nope/content", &reqBody{ctype: "text/plain", data: "x"})
	assert.Equal(t, 404, res.StatusCode)
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestUploadContentAnswersUpload: the handler's own upload_url answers as
// every other success does (API.md: 200, one JSON object): 200 and the
// Upload, never a 204 without a body.
func TestUploadContentAnswersUpload(t *testing.T) {
	e := newEnv(t, memstore.New().Driver(), envConfig{})
	fx := e.fixture(t)
	data := "hello, bucket"
	res := e.as(t, "alice", "POST", "/v1/uploads", &reqBody{ctype: "application/json",
		data: `{"filename":"a.txt","file_size":` + itoa(len(data)) + `,"sha256":"` + sha(data) + `","conversation_id":"` + fx.conv + `"}`})
	require.Equal(t, 201, res.StatusCode, "%s", res.body)
	var up map[string]any
	require.NoError(t, json.Unmarshal(res.body, &up))

	put := e.as(t, "alice", "PUT", up["upload_url"].(string), &reqBody{ctype: "application/octet-stream", data: data})
	require.Equal(t, 200, put.StatusCode, "%s", put.body)
	assert.Equal(t, "application/json; charset=utf-8", put.Header.Get("Content-Type"))
	var got map[string]any
	require.NoError(t, json.Unmarshal(put.body, &got), "%q", put.body)
	assert.Equal(t, up, got, "the Upload, as reserved")

	res = e.as(t, "alice", "POST", "/v1/uploads/"+up["id"].(string)+"/complete", nil)
	assert.Equal(t, 201, res.StatusCode, "%s", res.body)
}

// TestUploadInputRefused: malformed input to the upload endpoints is a
// 400 (or 415) naming what is wrong, and reserves, stores and completes
// nothing.
func TestUploadInputRefused(t *testing.T) {
	e := newEnv(t, memstore.New().Driver(), envConfig{})
	data := "some bytes"
	reservations := func(t *testing.T) int {
		t.Helper()
		rs, err := e.store.(interface {
			ExpiredReservations(ctx context.Context, now time.Time, limit int) ([]driver.Reservation, error)
		}).ExpiredReservations(e.ctx, time.Now().Add(1000*time.Hour), 1000)
		require.NoError(t, err)
		return len(rs)
	}
	reserve := `{"filename":"a.txt","file_size":` + itoa(len(data)) + `,"sha256":"` + sha(data) + `"}`
	res := e.as(t, "alice", "POST", "/v1/uploads", jsonBody(reserve))
	require.Equal(t, 201, res.StatusCode, "%s", res.body)
	up := res.json(t)
	require.Equal(t, 200, e.as(t, "alice", "PUT", up["upload_url"].(string), raw("application/octet-stream", data)).StatusCode)
	complete := "/v1/uploads/" + up["id"].(string) + "/complete"

	for _, tc := range []struct {
		name, path string
		body       *reqBody
		status     int
		err        wantErr
	}{
		{"a signed size (form)", "/v1/uploads", form("filename=a.txt&file_size=-0&sha256=" + sha("")),
			400, wantErr{"invalid_request_error", "parameter_invalid", "file_size"}},
		{"a signed size (JSON)", "/v1/uploads", jsonBody(`{"filename":"a.txt","file_size":-0,"sha256":"` + sha("") + `"}`),
			400, wantErr{"invalid_request_error", "parameter_invalid", "file_size"}},
		{"an empty conversation_id", "/v1/uploads", jsonBody(`{"filename":"a.txt","file_size":1,"sha256":"` + sha("x") + `","conversation_id":""}`),
			400, wantErr{"invalid_request_error", "parameter_invalid", "conversation_id"}},
		{"an empty message_id", "/v1/uploads", form("filename=a.txt&file_size=1&sha256=" + sha("x") + "&message_id="),
			400, wantErr{"invalid_request_error", "parameter_invalid", "message_id"}},
		{"complete with a body it does not take", complete, raw("text/plain", data),
			415, wantErr{"invalid_request_error", "unsupported_media_type", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, n := e.snapshot(t), reservations(t)
			assertError(t, e.as(t, "alice", "POST", tc.path, tc.body), tc.status, tc.err)
			e.assertUnchanged(t, before)
			assert.Equal(t, n, reservations(t), "no reservation made or completed")
		})
	}
	res = e.as(t, "alice", "POST", complete, nil)
	assert.Equal(t, 201, res.StatusCode, "the upload is still there to complete: %s", res.body)
}
