package httpadapter_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
)

// fileHeaders checks the headers of a served file.
func fileHeaders(ctype, disposition string) func(t *testing.T, e *env, fx *fixture, res *response) {
	return func(t *testing.T, _ *env, _ *fixture, res *response) {
		assert.Equal(t, ctype, res.Header.Get("Content-Type"))
		assert.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
		assert.Equal(t, "sandbox", res.Header.Get("Content-Security-Policy"))
		assert.Equal(t, disposition, res.Header.Get("Content-Disposition"))
		assert.NotEmpty(t, res.Header.Get("Last-Modified"))
		assert.Equal(t, "bytes", res.Header.Get("Accept-Ranges"))
	}
}

// servedAs checks that the answer, after any redirect, is the file under
// the name given.
func servedAs(name, data string) func(t *testing.T, e *env, fx *fixture, res *response) {
	return func(t *testing.T, _ *env, _ *fixture, res *response) {
		assert.True(t, strings.HasSuffix(res.Request.URL.Path, "/"+name), "served from %s", res.Request.URL)
		assert.Equal(t, data, string(res.body))
	}
}

var fileCases = []apiCase{
	{name: "text inline", method: "GET", path: "/v1/attachments/{attA}/a.txt", wantStatus: 200,
		check: func(t *testing.T, e *env, fx *fixture, res *response) {
			fileHeaders("text/plain; charset=utf-8", `inline; filename="a.txt"; filename*=UTF-8''a.txt`)(t, e, fx, res)
			assert.Equal(t, textA, string(res.body))
			assert.Equal(t, `"`+sha(textA)+`"`, res.Header.Get("ETag"))
		}},
	{name: "PNG inline", as: "bob", method: "GET", path: "/v1/attachments/{attL}/linked.png", wantStatus: 200,
		check: fileHeaders("image/png", `inline; filename="linked.png"; filename*=UTF-8''linked.png`)},
	{name: "HTML as a download", method: "GET", path: "/v1/attachments/{attH}/page.html", wantStatus: 200,
		check: fileHeaders("text/html", `attachment; filename="page.html"; filename*=UTF-8''page.html`)},
	{name: "sniffed text inline", method: "GET", path: "/v1/attachments/{attN}/n.txt", wantStatus: 200,
		check: fileHeaders("text/plain; charset=utf-8", `inline; filename="n.txt"; filename*=UTF-8''n.txt`)},
	{name: "non-ASCII name", method: "GET", path: "/v1/attachments/{attU}/r%C3%A9sum%C3%A9%201.txt", wantStatus: 200,
		check: func(t *testing.T, e *env, fx *fixture, res *response) {
			assert.Equal(t, `inline; filename="r_sum_ 1.txt"; filename*=UTF-8''r%C3%A9sum%C3%A9%201.txt`, res.Header.Get("Content-Disposition"))
			assert.Equal(t, "cv", string(res.body))
		}},
	{name: "HEAD", method: "HEAD", path: "/v1/attachments/{attA}/a.txt", wantStatus: 200,
		check: func(t *testing.T, _ *env, _ *fixture, res *response) {
			assert.Empty(t, res.body)
			assert.Equal(t, int64(len(textA)), res.ContentLength)
			assert.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
			assert.Equal(t, "sandbox", res.Header.Get("Content-Security-Policy"))
		}},
	{name: "range", method: "GET", path: "/v1/attachments/{attA}/a.txt", hdr: []string{"Range", "bytes=0-4"}, wantStatus: 206,
		check: func(t *testing.T, _ *env, _ *fixture, res *response) {
			assert.Equal(t, textA[:5], string(res.body))
			assert.Equal(t, "bytes 0-4/16", res.Header.Get("Content-Range"))
			assert.Equal(t, "sandbox", res.Header.Get("Content-Security-Policy"))
		}},
	{name: "suffix range", method: "GET", path: "/v1/attachments/{attA}/a.txt", hdr: []string{"Range", "bytes=-5"}, wantStatus: 206,
		check: func(t *testing.T, _ *env, _ *fixture, res *response) {
			assert.Equal(t, textA[len(textA)-5:], string(res.body))
		}},
	{name: "unsatisfiable range", method: "GET", path: "/v1/attachments/{attA}/a.txt", hdr: []string{"Range", "bytes=100-200"}, wantStatus: 416,
		wantErr: &wantErr{"invalid_request_error", "range_not_satisfiable", ""}},
	{name: "If-None-Match", method: "GET", path: "/v1/attachments/{attA}/a.txt", hdr: []string{"If-None-Match", `"` + sha(textA) + `"`}, wantStatus: 304,
		check: func(t *testing.T, _ *env, _ *fixture, res *response) { assert.Empty(t, res.body) }},
	{name: "If-None-Match of other bytes", method: "GET", path: "/v1/attachments/{attA}/a.txt", hdr: []string{"If-None-Match", `"0000"`}, wantStatus: 200},
	{name: "If-Match fails", method: "GET", path: "/v1/attachments/{attA}/a.txt", hdr: []string{"If-Match", `"0000"`}, wantStatus: 412,
		wantErr: &wantErr{"invalid_request_error", "precondition_failed", ""}},
	{name: "If-Modified-Since", method: "GET", path: "/v1/attachments/{attA}/a.txt", hdr: []string{"If-Modified-Since", "Fri, 01 Jan 2100 00:00:00 GMT"}, wantStatus: 304},
	{name: "If-Range with the ETag", method: "GET", path: "/v1/attachments/{attA}/a.txt", hdr: []string{"Range", "bytes=0-1", "If-Range", `"` + sha(textA) + `"`}, wantStatus: 206},
	{name: "If-Range with another ETag", method: "GET", path: "/v1/attachments/{attA}/a.txt", hdr: []string{"Range", "bytes=0-1", "If-Range", `"0000"`}, wantStatus: 200},
	// Another name of a visible attachment redirects to the current one
	// (testOldFileURLs checks the 308 itself); the client follows it with
	// its token, to the same origin.
	{name: "other file name", method: "GET", path: "/v1/attachments/{attA}/b.txt", wantStatus: 200, check: servedAs("a.txt", textA)},
	{name: "file name differs in case", method: "GET", path: "/v1/attachments/{attA}/A.txt", wantStatus: 200, check: servedAs("a.txt", textA)},
	{name: "other name of one hidden by the policy", as: "mallory", method: "GET", path: "/v1/attachments/{attP}/other.txt", wantStatus: 404, wantErr: errNotFound},
	{name: "other name of another's in no conversation", as: "bob", method: "GET", path: "/v1/attachments/{attN}/other.txt", wantStatus: 404, wantErr: errNotFound},
	{name: "other name without a token", as: "-", method: "GET", path: "/v1/attachments/{attA}/b.txt", wantStatus: 401},
	{name: "unknown attachment", method: "GET", path: "/v1/attachments/att_01jzzzzzzzzzzzzzzzzzzzzzzz/a.txt", wantStatus: 404, wantErr: errNotFound},
	{name: "hidden by the policy", as: "mallory", method: "GET", path: "/v1/attachments/{attP}/p.txt", wantStatus: 404, wantErr: errNotFound},
	{name: "another's in no conversation", as: "bob", method: "GET", path: "/v1/attachments/{attN}/n.txt", wantStatus: 404, wantErr: errNotFound},
	{name: "POST", method: http.MethodPost, path: "/v1/attachments/{attA}/a.txt", wantStatus: 405, wantErr: errMethod},
}

// testInlineTypes serves a file of each type: inline exactly for the types
// attachments.Inline accepts (PDF and SVG are downloads), and always in a
// sandbox.
func testInlineTypes(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{})
	for _, tc := range []struct {
		name, ctype, disp string
	}{
		{"doc.pdf", "application/pdf", "attachment"},
		{"logo.svg", "image/svg+xml", "attachment"},
		{"page.xhtml", "application/xhtml+xml", "attachment"},
		{"data.xml", "text/xml", "attachment"},
		{"sound.wav", "audio/x-wav", "attachment"},
		{"clip.mov", "video/quicktime", "attachment"},
		{"photo.jpg", "image/jpeg", "inline"},
		{"anim.gif", "image/gif", "inline"},
		{"song.mp3", "audio/mpeg", "inline"},
		{"clip.webm", "video/webm", "inline"},
		{"clip.mp4", "video/mp4", "inline"},
		{"plain.txt", "text/plain; charset=utf-8", "inline"},
		// Issue 30: UTF-7 (and any charset but UTF-8 and ASCII) is a download.
		{"seven.txt", "text/plain; charset=utf-7", "attachment"},
		{"sixteen.txt", "text/plain; charset=utf-16le", "attachment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := e.upload(t, "alice", "types", tc.name, tc.ctype, "bytes of "+tc.name)
			res := e.as(t, "alice", "GET", "/v1/attachments/"+id+"/"+tc.name, nil)
			require.Equal(t, http.StatusOK, res.StatusCode, "body: %s", res.body)
			fileHeaders(tc.ctype, tc.disp+`; filename="`+tc.name+`"; filename*=UTF-8''`+tc.name)(t, e, nil, res)
			assert.Equal(t, tc.disp == "inline", attachments.Inline(tc.ctype), "the adapter and attachments.Inline agree")
		})
	}
}
