package httpadapter_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var newAttachment = map[string]any{
	"object":          "attachment",
	"message_id":      nil,
	"conversation_id": nil,
	"filename":        "notes.txt",
	"file_type":       "text/plain",
	"file_size":       len("some notes"),
	"sha256":          sha("some notes"),
	"created_at":      notNull,
	"file_url":        notNull,
}

// fileURLServes checks that file_url of the response serves data.
func fileURLServes(data string) func(t *testing.T, e *env, fx *fixture, res *response) {
	return func(t *testing.T, e *env, fx *fixture, res *response) {
		created("attachments")(t, e, fx, res)
		a := res.json(t)
		u, _ := a["file_url"].(string)
		assert.Equal(t, e.url+"/v1/attachments/"+a["id"].(string)+"/"+url.PathEscape(a["filename"].(string)), u)
		file := e.as(t, "alice", "GET", u, nil)
		require.Equal(t, 200, file.StatusCode)
		assert.Equal(t, data, string(file.body))
	}
}

// unclosedUpload is a multipart body (boundary xyz) of the file notes.txt,
// cut after its bytes: no delimiter follows.
const unclosedUpload = "--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"notes.txt\"\r\nContent-Type: text/plain\r\n\r\nsome notes"

var uploadCases = []apiCase{
	{name: "file", method: "POST", path: "/v1/attachments", body: multipartBody(file("notes.txt", "text/plain", "some notes")),
		wantStatus: 201, want: newAttachment, check: fileURLServes("some notes")},
	{name: "into a conversation", method: "POST", path: "/v1/attachments", body: multipartBody(field("conversation_id", "{conv}"), file("notes.txt", "text/plain", "some notes")),
		wantStatus: 201, want: with(newAttachment, "conversation_id", "{conv}"), check: fileURLServes("some notes")},
	{name: "linked to a message", method: "POST", path: "/v1/attachments", body: multipartBody(field("message_id", "{msgA}"), file("notes.txt", "text/plain", "some notes")),
		wantStatus: 201, want: with(newAttachment, "conversation_id", "{conv}", "message_id", "{msgA}"),
		check: func(t *testing.T, e *env, fx *fixture, res *response) {
			id := res.json(t)["id"]
			m := e.as(t, "alice", "GET", "/v1/messages/"+fx.msgA, nil).json(t)
			got, _ := lookup(m, "attachments.1.id")
			assert.Equal(t, id, got)
		}},
	{name: "unknown fields are ignored", method: "POST", path: "/v1/attachments", body: multipartBody(field("purpose", "x"), file("notes.txt", "text/plain", "some notes"), field("after", "y")),
		wantStatus: 201, want: newAttachment},
	{name: "type sniffed", method: "POST", path: "/v1/attachments", body: multipartBody(file("pic", "", pngData)),
		wantStatus: 201, want: map[string]any{"file_type": "image/png", "filename": "pic"}},
	{name: "octet-stream sniffed", method: "POST", path: "/v1/attachments", body: multipartBody(file("pic.bin", "application/octet-stream", pngData)),
		wantStatus: 201, want: map[string]any{"file_type": "image/png"}},
	{name: "path stripped from the name", method: "POST", path: "/v1/attachments", body: multipartBody(file(`C:\Users\a\notes.txt`, "text/plain", "some notes")),
		wantStatus: 201, want: newAttachment},
	{name: "empty file", method: "POST", path: "/v1/attachments", body: multipartBody(file("empty.txt", "text/plain", "")),
		wantStatus: 201, want: map[string]any{"file_size": 0, "sha256": sha("")}},
	{name: "file at the limit", method: "POST", path: "/v1/attachments", body: multipartBody(file("big.bin", "application/x-big", strings.Repeat("x", testMaxUpload))),
		wantStatus: 201, want: map[string]any{"file_size": testMaxUpload}},
	{name: "missing file", method: "POST", path: "/v1/attachments", body: multipartBody(field("conversation_id", "{conv}")),
		wantStatus: 400, wantErr: missing("file")},
	{name: "no parts", method: "POST", path: "/v1/attachments", body: multipartBody(),
		wantStatus: 400, wantErr: missing("file")},
	{name: "two files", method: "POST", path: "/v1/attachments", body: multipartBody(file("a.txt", "text/plain", "a"), file("b.txt", "text/plain", "b")),
		wantStatus: 400, wantErr: invalid("file")},
	{name: "file without a name", method: "POST", path: "/v1/attachments", body: multipartBody(part{name: "file", data: "data"}),
		wantStatus: 400, wantErr: invalid("file")},
	{name: "name that cleans to nothing", method: "POST", path: "/v1/attachments", body: multipartBody(file("..", "text/plain", "x")),
		wantStatus: 400, wantErr: invalid("filename")},
	{name: "conversation_id after the file", method: "POST", path: "/v1/attachments", body: multipartBody(file("a.txt", "text/plain", "a"), field("conversation_id", "{conv}")),
		wantStatus: 400, wantErr: invalid("conversation_id")},
	{name: "message_id after a large file", method: "POST", path: "/v1/attachments", body: multipartBody(file("a.txt", "text/plain", strings.Repeat("a", 3000)), field("message_id", "{msgA}")),
		wantStatus: 400, wantErr: invalid("message_id")},
	{name: "conversation_id twice", method: "POST", path: "/v1/attachments", body: multipartBody(field("conversation_id", "{conv}"), field("conversation_id", "{conv}"), file("a.txt", "", "a")),
		wantStatus: 400, wantErr: invalid("conversation_id")},
	{name: "bad conversation_id", method: "POST", path: "/v1/attachments", body: multipartBody(field("conversation_id", "a b"), file("a.txt", "", "a")),
		wantStatus: 400, wantErr: invalid("conversation_id")},
	{name: "empty message_id", method: "POST", path: "/v1/attachments", body: multipartBody(field("message_id", ""), file("a.txt", "", "a")),
		wantStatus: 400, wantErr: invalid("message_id")},
	{name: "conversation_id differs from the message's", method: "POST", path: "/v1/attachments", body: multipartBody(field("conversation_id", "{private}"), field("message_id", "{msgA}"), file("a.txt", "", "a")),
		wantStatus: 400, wantErr: invalid("conversation_id")},
	{name: "another's message", method: "POST", path: "/v1/attachments", body: multipartBody(field("message_id", "{msgB}"), file("a.txt", "", "a")),
		wantStatus: 403, wantErr: &wantErr{"permission_error", "permission_denied", "message_id"}},
	{name: "unknown message", method: "POST", path: "/v1/attachments", body: multipartBody(field("message_id", "msg_01jzzzzzzzzzzzzzzzzzzzzzzz"), file("a.txt", "", "a")),
		wantStatus: 404, wantErr: &wantErr{"not_found_error", "resource_missing", "message_id"}},
	{name: "conversation hidden by the policy", as: "mallory", method: "POST", path: "/v1/attachments", body: multipartBody(field("conversation_id", "{private}"), file("a.txt", "", "a")),
		wantStatus: 404, wantErr: &wantErr{"not_found_error", "resource_missing", "conversation_id"}},
	{name: "over the size limit", method: "POST", path: "/v1/attachments", body: multipartBody(file("big.bin", "", strings.Repeat("x", testMaxUpload+1))),
		wantStatus: 413, wantErr: &wantErr{"invalid_request_error", "too_large", "file"}},
	{name: "far over the size limit", method: "POST", path: "/v1/attachments", body: multipartBody(file("big.bin", "", strings.Repeat("x", testMaxUpload+testMaxBody+1))),
		wantStatus: 413, wantErr: &wantErr{"invalid_request_error", "too_large", "file"}},
	{name: "linked upload over the size limit", method: "POST", path: "/v1/attachments", body: multipartBody(field("message_id", "{msgA}"), file("big.bin", "", strings.Repeat("x", testMaxUpload+1))),
		wantStatus: 413, wantErr: &wantErr{"invalid_request_error", "too_large", "file"}},
	{name: "JSON", method: "POST", path: "/v1/attachments", body: jsonBody(`{"file":"x"}`),
		wantStatus: 415, wantErr: errMediaType},
	{name: "form", method: "POST", path: "/v1/attachments", body: form("file=x"),
		wantStatus: 415, wantErr: errMediaType},
	{name: "no body", method: "POST", path: "/v1/attachments",
		wantStatus: 415, wantErr: errMediaType},
	{name: "malformed multipart", method: "POST", path: "/v1/attachments", body: raw("multipart/form-data; boundary=xyz", "--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\ntruncated"),
		wantStatus: 400, wantErr: errBody},
	// Issue 30: a body cut after a delimiter line, before the closing
	// "--xyz--", was stored as complete.
	{name: "no closing boundary", method: "POST", path: "/v1/attachments", body: raw("multipart/form-data; boundary=xyz", unclosedUpload+"\r\n--xyz\r\n"),
		wantStatus: 400, wantErr: errBody},
	{name: "no closing boundary after a field", method: "POST", path: "/v1/attachments", body: raw("multipart/form-data; boundary=xyz", unclosedUpload+"\r\n--xyz\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\ny\r\n--xyz\r\n"),
		wantStatus: 400, wantErr: errBody},
	{name: "no closing boundary into a message", method: "POST", path: "/v1/attachments", body: raw("multipart/form-data; boundary=xyz", "--xyz\r\nContent-Disposition: form-data; name=\"message_id\"\r\n\r\n{msgA}\r\n"+unclosedUpload[len("--xyz\r\n"):]+"\r\n--xyz\r\n"),
		wantStatus: 400, wantErr: errBody},
	{name: "delimiter without its dashes", method: "POST", path: "/v1/attachments", body: raw("multipart/form-data; boundary=xyz", unclosedUpload+"\r\n--xyz"),
		wantStatus: 400, wantErr: errBody},
	{name: "closing boundary without CRLF", method: "POST", path: "/v1/attachments", body: raw("multipart/form-data; boundary=xyz", unclosedUpload+"\r\n--xyz--"),
		wantStatus: 201, want: map[string]any{"file_size": len("some notes")}},
	{name: "closing boundary and an epilogue", method: "POST", path: "/v1/attachments", body: raw("multipart/form-data; boundary=xyz", unclosedUpload+"\r\n--xyz--\r\nepilogue"),
		wantStatus: 201, want: map[string]any{"file_size": len("some notes")}},
}

var getAttachmentCases = []apiCase{
	{name: "own", method: "GET", path: "/v1/attachments/{attA}", wantStatus: 200,
		want: map[string]any{"id": "{attA}", "object": "attachment", "filename": "a.txt", "file_type": "text/plain; charset=utf-8",
			"file_size": len(textA), "sha256": sha(textA), "message_id": nil, "conversation_id": "{conv}"},
		check: func(t *testing.T, e *env, fx *fixture, res *response) {
			assert.Equal(t, e.url+"/v1/attachments/"+fx.attA+"/a.txt", res.json(t)["file_url"])
			assert.NotContains(t, res.json(t), "key", "the blob key is not shown")
		}},
	{name: "linked", as: "bob", method: "GET", path: "/v1/attachments/{attL}", wantStatus: 200,
		want: map[string]any{"message_id": "{msgA}"}},
	{name: "another's in a visible conversation", as: "bob", method: "GET", path: "/v1/attachments/{attA}", wantStatus: 200},
	{name: "another's in no conversation", as: "bob", method: "GET", path: "/v1/attachments/{attN}", wantStatus: 404, wantErr: errNotFound},
	{name: "own in no conversation", method: "GET", path: "/v1/attachments/{attN}", wantStatus: 200, want: map[string]any{"conversation_id": nil}},
	{name: "hidden by the policy", as: "mallory", method: "GET", path: "/v1/attachments/{attP}", wantStatus: 404, wantErr: errNotFound},
	{name: "unknown", method: "GET", path: "/v1/attachments/att_01jzzzzzzzzzzzzzzzzzzzzzzz", wantStatus: 404, wantErr: errNotFound},
	{name: "malformed id", method: "GET", path: "/v1/attachments/x", wantStatus: 404, wantErr: errNotFound},
}

var renameAttachmentCases = []apiCase{
	{name: "form", method: "PUT", path: "/v1/attachments/{attA}", body: form("filename=renamed+%C3%A9.txt"),
		wantStatus: 200, want: map[string]any{"id": "{attA}", "filename": "renamed é.txt", "sha256": sha(textA)},
		check: func(t *testing.T, e *env, fx *fixture, res *response) {
			newURL := e.url + "/v1/attachments/" + fx.attA + "/renamed%20%C3%A9.txt"
			assert.Equal(t, newURL, res.json(t)["file_url"])
			got := e.as(t, "alice", "GET", "/v1/attachments/"+fx.attA, nil).json(t)
			assert.Equal(t, "renamed é.txt", got["filename"])
			assert.Equal(t, newURL, got["file_url"])
			file := e.as(t, "alice", "GET", newURL, nil)
			require.Equal(t, 200, file.StatusCode)
			assert.Equal(t, textA, string(file.body), "the bytes are the same")
			old := e.as(t, "alice", "GET", "/v1/attachments/"+fx.attA+"/a.txt", nil)
			require.Equal(t, 200, old.StatusCode, "the old file_url redirects to the new one")
			assert.Equal(t, newURL, old.Request.URL.String())
			assert.Equal(t, textA, string(old.body))
		}},
	{name: "JSON", method: "PUT", path: "/v1/attachments/{attA}", body: jsonBody(`{"filename":"b.txt"}`),
		wantStatus: 200, want: map[string]any{"filename": "b.txt"}},
	{name: "multipart", method: "PUT", path: "/v1/attachments/{attA}", body: multipartBody(field("filename", "b.txt")),
		wantStatus: 200, want: map[string]any{"filename": "b.txt"}},
	{name: "name cleaned", method: "PUT", path: "/v1/attachments/{attA}", body: form("filename=../../etc/b.txt"),
		wantStatus: 200, want: map[string]any{"filename": "b.txt"}},
	{name: "linked attachment in its message", method: "PUT", path: "/v1/attachments/{attL}", body: form("filename=c.png"),
		wantStatus: 200, check: func(t *testing.T, e *env, fx *fixture, _ *response) {
			m := e.as(t, "alice", "GET", "/v1/messages/"+fx.msgA, nil).json(t)
			name, _ := lookup(m, "attachments.0.filename")
			u, _ := lookup(m, "attachments.0.file_url")
			assert.Equal(t, "c.png", name)
			assert.Equal(t, e.url+"/v1/attachments/"+fx.attL+"/c.png", u)
		}},
	{name: "another's", as: "bob", method: "PUT", path: "/v1/attachments/{attA}", body: form("filename=b.txt"),
		wantStatus: 403, wantErr: errPermission},
	{name: "missing filename", method: "PUT", path: "/v1/attachments/{attA}", body: form("name=b.txt"),
		wantStatus: 400, wantErr: missing("filename")},
	{name: "bad filename", method: "PUT", path: "/v1/attachments/{attA}", body: form("filename=.."),
		wantStatus: 400, wantErr: invalid("filename")},
	{name: "empty filename", method: "PUT", path: "/v1/attachments/{attA}", body: jsonBody(`{"filename":"  "}`),
		wantStatus: 400, wantErr: invalid("filename")},
	{name: "filename twice", method: "PUT", path: "/v1/attachments/{attA}", body: form("filename=a&filename=b"),
		wantStatus: 400, wantErr: invalid("filename")},
	{name: "filename not a string", method: "PUT", path: "/v1/attachments/{attA}", body: jsonBody(`{"filename":["b.txt"]}`),
		wantStatus: 400, wantErr: invalid("filename")},
	{name: "unknown", method: "PUT", path: "/v1/attachments/att_01jzzzzzzzzzzzzzzzzzzzzzzz", body: form("filename=b.txt"),
		wantStatus: 404, wantErr: errNotFound},
	{name: "hidden by the policy", as: "mallory", method: "PUT", path: "/v1/attachments/{attP}", body: form("filename=b.txt"),
		wantStatus: 404, wantErr: errNotFound},
	{name: "415", method: "PUT", path: "/v1/attachments/{attA}", body: raw("text/plain", "b.txt"),
		wantStatus: 415, wantErr: errMediaType},
}

var deleteAttachmentCases = []apiCase{
	{name: "own", method: "DELETE", path: "/v1/attachments/{attA}",
		wantStatus: 200, want: map[string]any{"id": "{attA}", "deleted": true},
		check: func(t *testing.T, e *env, fx *fixture, _ *response) {
			assertError(t, e.as(t, "alice", "GET", "/v1/attachments/"+fx.attA, nil), 404, *errNotFound)
			assertError(t, e.as(t, "alice", "GET", "/v1/attachments/"+fx.attA+"/a.txt", nil), 404, *errNotFound)
			assertError(t, e.as(t, "alice", "DELETE", "/v1/attachments/"+fx.attA, nil), 404, *errNotFound)
			_, err := e.mem.Open(e.ctx, "attachments/"+fx.attA)
			assert.Error(t, err, "the file is gone")
		}},
	{name: "linked, gone from its message", method: "DELETE", path: "/v1/attachments/{attL}",
		wantStatus: 200, check: func(t *testing.T, e *env, fx *fixture, _ *response) {
			m := e.as(t, "alice", "GET", "/v1/messages/"+fx.msgA, nil).json(t)
			assert.Equal(t, []any{}, m["attachments"])
		}},
	{name: "another's", as: "bob", method: "DELETE", path: "/v1/attachments/{attA}", wantStatus: 403, wantErr: errPermission},
	{name: "unknown", method: "DELETE", path: "/v1/attachments/att_01jzzzzzzzzzzzzzzzzzzzzzzz", wantStatus: 404, wantErr: errNotFound},
	{name: "hidden by the policy", as: "mallory", method: "DELETE", path: "/v1/attachments/{attP}", wantStatus: 404, wantErr: errNotFound},
}

var listParamCases = []apiCase{
	{name: "messages of a conversation", method: "GET", path: "/v1/messages?conversation_id={conv}", wantStatus: 200,
		want: map[string]any{"object": "list", "has_more": false, "data.0.id": "{msgB}", "data.1.id": "{msgA}",
			"data.1.attachments.0.id": "{attL}"},
		check: func(t *testing.T, e *env, fx *fixture, res *response) {
			assert.Len(t, res.json(t)["data"], 2)
			u, _ := lookup(res.json(t), "data.1.attachments.0.file_url")
			assert.Equal(t, e.url+"/v1/attachments/"+fx.attL+"/linked.png", u)
		}},
	{name: "attachments of a conversation", method: "GET", path: "/v1/attachments?conversation_id={conv}&limit=2", wantStatus: 200,
		want: map[string]any{"object": "list", "has_more": true, "data.0.id": "{attU}", "data.1.id": "{attH}", "data.0.file_url": notNull}},
	{name: "unknown parameters are ignored", method: "GET", path: "/v1/messages?conversation_id={conv}&color=blue", wantStatus: 200},
	{name: "limit not an integer", method: "GET", path: "/v1/messages?limit=ten", wantStatus: 400, wantErr: invalid("limit")},
	{name: "limit empty", method: "GET", path: "/v1/messages?limit=", wantStatus: 400, wantErr: invalid("limit")},
	{name: "limit 0", method: "GET", path: "/v1/messages?limit=0", wantStatus: 400, wantErr: invalid("limit")},
	{name: "limit negative", method: "GET", path: "/v1/attachments?limit=-1", wantStatus: 400, wantErr: invalid("limit")},
	{name: "limit 101", method: "GET", path: "/v1/messages?limit=101", wantStatus: 400, wantErr: invalid("limit")},
	{name: "limit 1.5", method: "GET", path: "/v1/attachments?limit=1.5", wantStatus: 400, wantErr: invalid("limit")},
	{name: "limit twice", method: "GET", path: "/v1/messages?limit=5&limit=500", wantStatus: 400, wantErr: invalid("limit")},
	{name: "limit 100", method: "GET", path: "/v1/messages?limit=100", wantStatus: 200},
	{name: "conversation_id twice", method: "GET", path: "/v1/attachments?conversation_id=a&conversation_id=b", wantStatus: 400, wantErr: invalid("conversation_id")},
	{name: "bad conversation_id", method: "GET", path: "/v1/messages?conversation_id=a%20b", wantStatus: 400, wantErr: invalid("conversation_id")},
	{name: "both cursors", method: "GET", path: "/v1/messages?starting_after={msgA}&ending_before={msgB}", wantStatus: 400, wantErr: invalid("ending_before")},
	{name: "both cursors on attachments", method: "GET", path: "/v1/attachments?starting_after={attA}&ending_before={attB}", wantStatus: 400, wantErr: invalid("ending_before")},
	{name: "unknown cursor", method: "GET", path: "/v1/messages?starting_after=msg_01jzzzzzzzzzzzzzzzzzzzzzzz", wantStatus: 400, wantErr: invalid("starting_after")},
	{name: "cursor of another list", method: "GET", path: "/v1/messages?conversation_id={conv}&ending_before={msgP}", wantStatus: 400, wantErr: invalid("ending_before")},
	{name: "attachment cursor of another list", method: "GET", path: "/v1/attachments?conversation_id={conv}&starting_after={attP}", wantStatus: 400, wantErr: invalid("starting_after")},
	{name: "hidden conversation lists nothing", as: "mallory", method: "GET", path: "/v1/messages?conversation_id={private}", wantStatus: 200,
		want: map[string]any{"data": []any{}, "has_more": false}},
	{name: "malformed query", method: "GET", path: "/v1/messages?limit=%zz", wantStatus: 400,
		wantErr: &wantErr{"invalid_request_error", "parameter_invalid", ""}},
}
