package httpadapter_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func missing(param string) *wantErr {
	return &wantErr{"invalid_request_error", "parameter_missing", param}
}

func invalid(param string) *wantErr {
	return &wantErr{"invalid_request_error", "parameter_invalid", param}
}

var (
	errBody       = &wantErr{"invalid_request_error", "body_invalid", ""}
	errMediaType  = &wantErr{"invalid_request_error", "unsupported_media_type", ""}
	errTooLarge   = &wantErr{"invalid_request_error", "too_large", ""}
	errPermission = &wantErr{"permission_error", "permission_denied", ""}
	errConflict   = &wantErr{"conflict_error", "conflict", "attachments"}
)

// newMessage is what a created message must look like.
var newMessage = map[string]any{
	"object":           "message",
	"conversation_id":  "{conv}",
	"message":          "hello",
	"contact.id":       "{alice}",
	"contact.username": "alice",
	"reactions":        []any{},
	"attachments":      []any{},
	"read_at":          nil,
	"updated_at":       nil,
	"created_at":       notNull,
}

// created checks a 201: its Location names the new resource.
func created(collection string) func(t *testing.T, e *env, fx *fixture, res *response) {
	return func(t *testing.T, e *env, _ *fixture, res *response) {
		id, _ := res.json(t)["id"].(string)
		require.NotEmpty(t, id)
		assert.Equal(t, e.prefix+"/v1/"+collection+"/"+id, res.Header.Get("Location"))
		got := e.as(t, "alice", "GET", "/v1/"+collection+"/"+id, nil)
		assert.Equal(t, 200, got.StatusCode, "the created resource can be read back")
	}
}

// drop removes a key in with.
type dropT struct{}

var drop = dropT{}

// with returns a copy of m with the given key, value pairs set (or dropped).
func with(m map[string]any, kv ...any) map[string]any {
	c := make(map[string]any, len(m)+len(kv)/2)
	for k, v := range m {
		c[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == drop {
			delete(c, kv[i].(string))
			continue
		}
		c[kv[i].(string)] = kv[i+1]
	}
	return c
}

var createMessageCases = []apiCase{
	{name: "form", method: "POST", path: "/v1/messages", body: form("conversation_id={conv}&message=hello"),
		wantStatus: 201, want: newMessage, check: created("messages")},
	{name: "JSON", method: "POST", path: "/v1/messages", body: jsonBody(`{"conversation_id":"{conv}","message":"hello"}`),
		wantStatus: 201, want: newMessage, check: created("messages")},
	{name: "JSON with charset", method: "POST", path: "/v1/messages", body: raw("application/json; charset=utf-8", `{"conversation_id":"{conv}","message":"hello"}`),
		wantStatus: 201, want: newMessage},
	{name: "multipart", method: "POST", path: "/v1/messages", body: multipartBody(field("conversation_id", "{conv}"), field("message", "hello")),
		wantStatus: 201, want: newMessage, check: created("messages")},
	{name: "multiline text", method: "POST", path: "/v1/messages", body: form("conversation_id={conv}&message=line+1%0A%09line+2"),
		wantStatus: 201, want: with(newMessage, "message", "line 1\n\tline 2")},
	{name: "unknown parameters are ignored", method: "POST", path: "/v1/messages", body: form("conversation_id={conv}&message=hello&color=blue"),
		wantStatus: 201, want: newMessage},
	{name: "with attachments[]", method: "POST", path: "/v1/messages", body: form("conversation_id={conv}&message=hello&attachments[]={attA}&attachments[]={attU}"),
		wantStatus: 201, want: with(newMessage, "attachments", drop,
			"attachments.0.id", "{attA}", "attachments.0.message_id", notNull, "attachments.0.filename", "a.txt",
			"attachments.1.id", "{attU}", "attachments.1.filename", "résumé 1.txt"),
		check: func(t *testing.T, e *env, fx *fixture, res *response) {
			m := res.json(t)
			att := m["attachments"].([]any)[0].(map[string]any)
			assert.Equal(t, m["id"], att["message_id"])
			assert.Equal(t, e.url+"/v1/attachments/"+fx.attA+"/a.txt", att["file_url"])
			att = m["attachments"].([]any)[1].(map[string]any)
			assert.Equal(t, e.url+"/v1/attachments/"+fx.attU+"/r%C3%A9sum%C3%A9%201.txt", att["file_url"])
		}},
	{name: "with attachments in JSON", method: "POST", path: "/v1/messages", body: jsonBody(`{"conversation_id":"{conv}","message":"hello","attachments":["{attA}"]}`),
		wantStatus: 201, want: with(newMessage, "attachments", drop, "attachments.0.id", "{attA}")},
	{name: "unlinked attachment of no conversation", method: "POST", path: "/v1/messages", body: form("conversation_id={conv}&message=hello&attachments[]={attN}"),
		wantStatus: 201, want: with(newMessage, "attachments", drop, "attachments.0.id", "{attN}", "attachments.0.conversation_id", "{conv}")},
	{name: "missing conversation_id", method: "POST", path: "/v1/messages", body: form("message=hello"),
		wantStatus: 400, wantErr: missing("conversation_id")},
	{name: "missing message", method: "POST", path: "/v1/messages", body: form("conversation_id={conv}"),
		wantStatus: 400, wantErr: missing("message")},
	{name: "no body", method: "POST", path: "/v1/messages",
		wantStatus: 400, wantErr: missing("conversation_id")},
	{name: "blank message", method: "POST", path: "/v1/messages", body: form("conversation_id={conv}&message=+%0A+"),
		wantStatus: 400, wantErr: invalid("message")},
	{name: "control character", method: "POST", path: "/v1/messages", body: form("conversation_id={conv}&message=a%01b"),
		wantStatus: 400, wantErr: invalid("message")},
	{name: "NUL", method: "POST", path: "/v1/messages", body: jsonBody(`{"conversation_id":"{conv}","message":"a\u0000b"}`),
		wantStatus: 400, wantErr: invalid("message")},
	{name: "invalid UTF-8", method: "POST", path: "/v1/messages", body: form("conversation_id={conv}&message=%FF%FE"),
		wantStatus: 400, wantErr: invalid("message")},
	{name: "too long", method: "POST", path: "/v1/messages", body: form("conversation_id={conv}&message=" + strings.Repeat("é", 4001)),
		wantStatus: 400, wantErr: invalid("message")},
	{name: "bad conversation_id", method: "POST", path: "/v1/messages", body: form("conversation_id=a+b&message=hello"),
		wantStatus: 400, wantErr: invalid("conversation_id")},
	{name: "long conversation_id", method: "POST", path: "/v1/messages", body: form("conversation_id=" + strings.Repeat("c", 129) + "&message=hello"),
		wantStatus: 400, wantErr: invalid("conversation_id")},
	{name: "conversation_id twice", method: "POST", path: "/v1/messages", body: form("conversation_id={conv}&conversation_id={conv}&message=hello"),
		wantStatus: 400, wantErr: invalid("conversation_id")},
	{name: "message twice in multipart", method: "POST", path: "/v1/messages", body: multipartBody(field("conversation_id", "{conv}"), field("message", "a"), field("message", "b")),
		wantStatus: 400, wantErr: invalid("message")},
	{name: "message twice in JSON", method: "POST", path: "/v1/messages", body: jsonBody(`{"conversation_id":"{conv}","message":"a","message":"b"}`),
		wantStatus: 400, wantErr: invalid("message")},
	{name: "bracketed single value", method: "POST", path: "/v1/messages", body: form("conversation_id={conv}&message[]=hello"),
		wantStatus: 400, wantErr: invalid("message")},
	{name: "JSON number for a string", method: "POST", path: "/v1/messages", body: jsonBody(`{"conversation_id":"{conv}","message":42}`),
		wantStatus: 400, wantErr: invalid("message")},
	{name: "JSON string for an array", method: "POST", path: "/v1/messages", body: jsonBody(`{"conversation_id":"{conv}","message":"hi","attachments":"{attA}"}`),
		wantStatus: 400, wantErr: invalid("attachments")},
	{name: "JSON array of numbers", method: "POST", path: "/v1/messages", body: jsonBody(`{"conversation_id":"{conv}","message":"hi","attachments":[1]}`),
		wantStatus: 400, wantErr: invalid("attachments")},
	{name: "JSON not an object", method: "POST", path: "/v1/messages", body: jsonBody(`["{conv}","hello"]`),
		wantStatus: 400, wantErr: errBody},
	{name: "multipart without its closing boundary", method: "POST", path: "/v1/messages", body: raw("multipart/form-data; boundary=xyz",
		"--xyz\r\nContent-Disposition: form-data; name=\"conversation_id\"\r\n\r\n{conv}\r\n--xyz\r\nContent-Disposition: form-data; name=\"message\"\r\n\r\nhi\r\n--xyz\r\n"),
		wantStatus: 400, wantErr: errBody},
	{name: "malformed JSON", method: "POST", path: "/v1/messages", body: jsonBody(`{"conversation_id":"{conv}",`),
		wantStatus: 400, wantErr: errBody},
	{name: "JSON with trailing data", method: "POST", path: "/v1/messages", body: jsonBody(`{"conversation_id":"{conv}","message":"hi"} {}`),
		wantStatus: 400, wantErr: errBody},
	{name: "empty JSON body", method: "POST", path: "/v1/messages", body: jsonBody(``),
		wantStatus: 400, wantErr: errBody},
	{name: "malformed form", method: "POST", path: "/v1/messages", body: form("conversation_id=%zz&message=hello"),
		wantStatus: 400, wantErr: errBody},
	{name: "malformed multipart", method: "POST", path: "/v1/messages", body: raw("multipart/form-data; boundary=xyz", "garbage"),
		wantStatus: 400, wantErr: errBody},
	{name: "multipart without boundary", method: "POST", path: "/v1/messages", body: raw("multipart/form-data", "garbage"),
		wantStatus: 400, wantErr: errBody},
	{name: "text/plain", method: "POST", path: "/v1/messages", body: raw("text/plain", "hello"),
		wantStatus: 415, wantErr: errMediaType},
	{name: "XML", method: "POST", path: "/v1/messages", body: raw("application/xml", "<message/>"),
		wantStatus: 415, wantErr: errMediaType},
	{name: "body without Content-Type", method: "POST", path: "/v1/messages", body: raw("", "conversation_id=c&message=hello"),
		wantStatus: 415, wantErr: errMediaType},
	{name: "body over the limit", method: "POST", path: "/v1/messages", body: form("conversation_id={conv}&message=" + strings.Repeat("a", testMaxBody)),
		wantStatus: 413, wantErr: errTooLarge},
	{name: "JSON body over the limit", method: "POST", path: "/v1/messages", body: jsonBody(`{"conversation_id":"{conv}","message":"` + strings.Repeat("a", testMaxBody) + `"}`),
		wantStatus: 413, wantErr: errTooLarge},
	{name: "multipart body over the limit", method: "POST", path: "/v1/messages", body: multipartBody(field("conversation_id", "{conv}"), field("message", strings.Repeat("a", testMaxBody))),
		wantStatus: 413, wantErr: errTooLarge},
	{name: "another uploader's attachment", method: "POST", path: "/v1/messages", body: form("conversation_id={conv}&message=hello&attachments[]={attB}"),
		wantStatus: 403, wantErr: &wantErr{"permission_error", "permission_denied", "attachments"}},
	{name: "attachment linked to another message", method: "POST", path: "/v1/messages", body: form("conversation_id={conv}&message=hello&attachments[]={attL}"),
		wantStatus: 409, wantErr: errConflict},
	{name: "attachment of another conversation", method: "POST", path: "/v1/messages", body: form("conversation_id={conv}&message=hello&attachments[]={attP}"),
		wantStatus: 400, wantErr: invalid("attachments")},
	{name: "unknown attachment", method: "POST", path: "/v1/messages", body: form("conversation_id={conv}&message=hello&attachments[]=att_01jzzzzzzzzzzzzzzzzzzzzzzz"),
		wantStatus: 400, wantErr: invalid("attachments")},
	{name: "attachment listed twice", method: "POST", path: "/v1/messages", body: form("conversation_id={conv}&message=hello&attachments[]={attA}&attachments[]={attA}"),
		wantStatus: 400, wantErr: invalid("attachments")},
	{name: "too many attachments", method: "POST", path: "/v1/messages", body: form("conversation_id={conv}&message=hello" + strings.Repeat("&attachments[]={attA}", 11)),
		wantStatus: 400, wantErr: invalid("attachments")},
	{name: "conversation hidden by the policy", as: "mallory", method: "POST", path: "/v1/messages", body: form("conversation_id={private}&message=hello"),
		wantStatus: 404, wantErr: &wantErr{"not_found_error", "resource_missing", "conversation_id"}},
}

var getMessageCases = []apiCase{
	{name: "own", method: "GET", path: "/v1/messages/{msgA}", wantStatus: 200,
		want: map[string]any{"id": "{msgA}", "object": "message", "message": "hi from alice", "contact.username": "alice",
			"contact.phone_number": "+100alice", "contact.last_active_at": notNull,
			"attachments.0.id": "{attL}", "attachments.0.object": "attachment", "attachments.0.message_id": "{msgA}",
			"attachments.0.filename": "linked.png", "attachments.0.file_type": "image/png", "attachments.0.file_size": len(pngData),
			"attachments.0.sha256": sha(pngData), "reactions": []any{}},
		check: func(t *testing.T, e *env, fx *fixture, res *response) {
			url, _ := lookup(res.json(t), "attachments.0.file_url")
			assert.Equal(t, e.url+"/v1/attachments/"+fx.attL+"/linked.png", url)
			file := e.as(t, "alice", "GET", url.(string), nil)
			assert.Equal(t, 200, file.StatusCode)
			assert.Equal(t, pngData, string(file.body))
		}},
	{name: "another's, with reactions", as: "mallory", method: "GET", path: "/v1/messages/{msgB}", wantStatus: 200,
		want: map[string]any{"id": "{msgB}", "contact.username": "bob", "reactions": []any{map[string]any{"thumbs_up": []any{"alice", "bob"}}},
			"updated_at": notNull, "read_at": nil}},
	{name: "HEAD", method: "HEAD", path: "/v1/messages/{msgA}", wantStatus: 200},
	{name: "unknown id", method: "GET", path: "/v1/messages/msg_01jzzzzzzzzzzzzzzzzzzzzzzz", wantStatus: 404, wantErr: errNotFound},
	{name: "malformed id", method: "GET", path: "/v1/messages/nope", wantStatus: 404, wantErr: errNotFound},
	{name: "attachment id", method: "GET", path: "/v1/messages/{attA}", wantStatus: 404, wantErr: errNotFound},
	{name: "hidden by the policy", as: "mallory", method: "GET", path: "/v1/messages/{msgP}", wantStatus: 404, wantErr: errNotFound,
		check: func(t *testing.T, e *env, fx *fixture, res *response) {
			unknown := e.as(t, "mallory", "GET", "/v1/messages/msg_01jzzzzzzzzzzzzzzzzzzzzzzz", nil)
			var a, b map[string]any
			require.NoError(t, json.Unmarshal(res.body, &a))
			require.NoError(t, json.Unmarshal(unknown.body, &b))
			assert.Equal(t, a["error"].(map[string]any)["type"], b["error"].(map[string]any)["type"], "no hint that it exists")
		}},
}

var updateMessageCases = []apiCase{
	{name: "edit text", method: "PUT", path: "/v1/messages/{msgA}", body: form("message=edited"),
		wantStatus: 200, want: map[string]any{"id": "{msgA}", "message": "edited", "updated_at": notNull, "attachments.0.id": "{attL}"}},
	{name: "edit text in JSON", method: "PUT", path: "/v1/messages/{msgA}", body: jsonBody(`{"message":"edited"}`),
		wantStatus: 200, want: map[string]any{"message": "edited", "updated_at": notNull}},
	{name: "edit text in multipart", method: "PUT", path: "/v1/messages/{msgA}", body: multipartBody(field("message", "edited")),
		wantStatus: 200, want: map[string]any{"message": "edited", "updated_at": notNull}},
	{name: "edit another's", as: "bob", method: "PUT", path: "/v1/messages/{msgA}", body: form("message=mine+now"),
		wantStatus: 403, wantErr: errPermission},
	{name: "edit to blank", method: "PUT", path: "/v1/messages/{msgA}", body: form("message=+"),
		wantStatus: 400, wantErr: invalid("message")},
	{name: "edit to empty", method: "PUT", path: "/v1/messages/{msgA}", body: form("message="),
		wantStatus: 400, wantErr: missing("message")},
	{name: "react in bracket notation", as: "bob", method: "PUT", path: "/v1/messages/{msgA}", body: form("reactions[thumbs_up][]=bob"),
		wantStatus: 200, want: map[string]any{"reactions": []any{map[string]any{"thumbs_up": []any{"bob"}}}, "updated_at": notNull}},
	{name: "react, percent-encoded brackets", as: "bob", method: "PUT", path: "/v1/messages/{msgA}", body: form("reactions%5Bthumbs_up%5D%5B%5D=bob"),
		wantStatus: 200, want: map[string]any{"reactions": []any{map[string]any{"thumbs_up": []any{"bob"}}}}},
	{name: "reactions merge", as: "alice", method: "PUT", path: "/v1/messages/{msgB}", body: form("reactions[heart][]=alice&reactions[thumbs_up][]=alice&reactions[smile][]=alice"),
		wantStatus: 200, want: map[string]any{"reactions": []any{
			map[string]any{"thumbs_up": []any{"alice", "bob"}},
			map[string]any{"heart": []any{"alice"}},
			map[string]any{"smile": []any{"alice"}},
		}}},
	{name: "reactions as a JSON array", as: "mallory", method: "PUT", path: "/v1/messages/{msgB}", body: jsonBody(`{"reactions":[{"thumbs_up":["mallory"]},{"party":["mallory"]}]}`),
		wantStatus: 200, want: map[string]any{"reactions": []any{
			map[string]any{"thumbs_up": []any{"alice", "bob", "mallory"}},
			map[string]any{"party": []any{"mallory"}},
		}}},
	{name: "reactions as a JSON object", as: "mallory", method: "PUT", path: "/v1/messages/{msgB}", body: jsonBody(`{"reactions":{"party":["mallory"]}}`),
		wantStatus: 200, want: map[string]any{"reactions": []any{
			map[string]any{"thumbs_up": []any{"alice", "bob"}},
			map[string]any{"party": []any{"mallory"}},
		}}},
	{name: "reaction in another's name", as: "bob", method: "PUT", path: "/v1/messages/{msgA}", body: form("reactions[thumbs_up][]=alice"),
		wantStatus: 403, wantErr: &wantErr{"permission_error", "permission_denied", "reactions"}},
	{name: "reaction name with a space", method: "PUT", path: "/v1/messages/{msgA}", body: form("reactions[a+b][]=alice"),
		wantStatus: 400, wantErr: invalid("reactions")},
	{name: "reaction without reactor", method: "PUT", path: "/v1/messages/{msgA}", body: form("reactions[smile][]="),
		wantStatus: 400, wantErr: invalid("reactions")},
	{name: "malformed reactions key", method: "PUT", path: "/v1/messages/{msgA}", body: form("reactions[smile=alice"),
		wantStatus: 400, wantErr: invalid("reactions")},
	{name: "reactions without brackets", method: "PUT", path: "/v1/messages/{msgA}", body: form("reactions=smile"),
		wantStatus: 400, wantErr: invalid("reactions")},
	{name: "reactions of the wrong JSON type", method: "PUT", path: "/v1/messages/{msgA}", body: jsonBody(`{"reactions":{"smile":"alice"}}`),
		wantStatus: 400, wantErr: invalid("reactions")},
	{name: "reactions as a JSON string", method: "PUT", path: "/v1/messages/{msgA}", body: jsonBody(`{"reactions":"smile"}`),
		wantStatus: 400, wantErr: invalid("reactions")},
	{name: "mark read", as: "mallory", method: "PUT", path: "/v1/messages/{msgA}", body: form("read=true"),
		wantStatus: 200, want: map[string]any{"read_at": notNull, "updated_at": nil}},
	{name: "mark read in JSON", method: "PUT", path: "/v1/messages/{msgB}", body: jsonBody(`{"read":true}`),
		wantStatus: 200, want: map[string]any{"read_at": notNull}},
	{name: "mark unread", method: "PUT", path: "/v1/messages/{msgA}", body: form("read=false"),
		wantStatus: 200, want: map[string]any{"read_at": nil},
		check: func(t *testing.T, e *env, fx *fixture, _ *response) {
			first := e.as(t, "bob", "PUT", "/v1/messages/"+fx.msgA, form("read=true")).json(t)["read_at"]
			require.NotNil(t, first)
			again := e.as(t, "alice", "PUT", "/v1/messages/"+fx.msgA, jsonBody(`{"read":true}`)).json(t)["read_at"]
			assert.Equal(t, first, again, "read_at is set once, to the first read")
			assert.Nil(t, e.as(t, "alice", "PUT", "/v1/messages/"+fx.msgA, jsonBody(`{"read":false}`)).json(t)["read_at"])
		}},
	{name: "read not a boolean", method: "PUT", path: "/v1/messages/{msgA}", body: form("read=yes"),
		wantStatus: 400, wantErr: invalid("read")},
	{name: "read as a JSON string", method: "PUT", path: "/v1/messages/{msgA}", body: jsonBody(`{"read":"true"}`),
		wantStatus: 400, wantErr: invalid("read")},
	{name: "read twice", method: "PUT", path: "/v1/messages/{msgA}", body: form("read=true&read=false"),
		wantStatus: 400, wantErr: invalid("read")},
	{name: "nothing to update", method: "PUT", path: "/v1/messages/{msgA}", body: form("color=blue"),
		wantStatus: 400, wantErr: &wantErr{"invalid_request_error", "parameter_missing", ""}},
	{name: "no body", method: "PUT", path: "/v1/messages/{msgA}",
		wantStatus: 400, wantErr: &wantErr{"invalid_request_error", "parameter_missing", ""}},
	{name: "JSON nulls are absent", method: "PUT", path: "/v1/messages/{msgA}", body: jsonBody(`{"message":null,"read":null}`),
		wantStatus: 400, wantErr: &wantErr{"invalid_request_error", "parameter_missing", ""}},
	{name: "link an attachment", method: "PUT", path: "/v1/messages/{msgA}", body: form("attachments[]={attA}"),
		wantStatus: 200, want: map[string]any{"attachments.0.id": "{attA}", "attachments.0.message_id": "{msgA}", "attachments.1.id": "{attL}", "updated_at": notNull}}, // oldest first
	{name: "link an attachment, indexed", method: "PUT", path: "/v1/messages/{msgA}", body: form("attachments[0]={attA}&attachments[1]={attU}"),
		wantStatus: 200, want: map[string]any{"attachments.0.id": "{attA}", "attachments.1.id": "{attL}", "attachments.2.id": "{attU}"}},
	{name: "relink to the same message", method: "PUT", path: "/v1/messages/{msgA}", body: form("attachments[]={attL}"),
		wantStatus: 200, want: map[string]any{"attachments.0.id": "{attL}"}},
	{name: "link to another's message", as: "bob", method: "PUT", path: "/v1/messages/{msgA}", body: form("attachments[]={attB}"),
		wantStatus: 403, wantErr: errPermission},
	{name: "link an attachment linked elsewhere", method: "PUT", path: "/v1/messages/{msgP}", body: jsonBody(`{"attachments":["{attL}"]}`),
		wantStatus: 409, wantErr: errConflict},
	{name: "link another uploader's attachment", method: "PUT", path: "/v1/messages/{msgA}", body: form("attachments[]={attB}"),
		wantStatus: 403, wantErr: &wantErr{"permission_error", "permission_denied", "attachments"}},
	{name: "unknown message", method: "PUT", path: "/v1/messages/msg_01jzzzzzzzzzzzzzzzzzzzzzzz", body: form("read=true"),
		wantStatus: 404, wantErr: errNotFound},
	{name: "hidden by the policy", as: "mallory", method: "PUT", path: "/v1/messages/{msgP}", body: form("read=true"),
		wantStatus: 404, wantErr: errNotFound},
	{name: "415", method: "PUT", path: "/v1/messages/{msgA}", body: raw("text/csv", "message,edited"),
		wantStatus: 415, wantErr: errMediaType},
	{name: "413", method: "PUT", path: "/v1/messages/{msgA}", body: form("message=" + strings.Repeat("a", testMaxBody+1)),
		wantStatus: 413, wantErr: errTooLarge},
	{name: "a bad field rejects the whole update", method: "PUT", path: "/v1/messages/{msgA}", body: form("message=edited&read=true&reactions[a+b][]=alice"),
		wantStatus: 400, wantErr: invalid("reactions")},
}

var removeReactionCases = []apiCase{
	{name: "own", as: "alice", method: "DELETE", path: "/v1/messages/{msgB}/reactions/thumbs_up",
		wantStatus: 200, want: map[string]any{"id": "{msgB}", "reactions": []any{map[string]any{"thumbs_up": []any{"bob"}}}}},
	{name: "the last reactor", as: "alice", method: "DELETE", path: "/v1/messages/{msgB}/reactions/thumbs_up",
		wantStatus: 200, check: func(t *testing.T, e *env, fx *fixture, _ *response) {
			res := e.as(t, "bob", "DELETE", "/v1/messages/"+fx.msgB+"/reactions/thumbs_up", nil)
			require.Equal(t, 200, res.StatusCode)
			assert.Equal(t, []any{}, res.json(t)["reactions"], "a reaction with no reactors disappears")
		}},
	{name: "not there", as: "mallory", method: "DELETE", path: "/v1/messages/{msgB}/reactions/heart",
		wantStatus: 200, want: map[string]any{"reactions": []any{map[string]any{"thumbs_up": []any{"alice", "bob"}}}}},
	{name: "not reacted with that name", as: "mallory", method: "DELETE", path: "/v1/messages/{msgB}/reactions/thumbs_up",
		wantStatus: 200, want: map[string]any{"reactions": []any{map[string]any{"thumbs_up": []any{"alice", "bob"}}}}},
	{name: "bad name", method: "DELETE", path: "/v1/messages/{msgB}/reactions/a%20b",
		wantStatus: 400, wantErr: invalid("name")},
	{name: "unknown message", method: "DELETE", path: "/v1/messages/msg_01jzzzzzzzzzzzzzzzzzzzzzzz/reactions/thumbs_up",
		wantStatus: 404, wantErr: errNotFound},
	{name: "hidden by the policy", as: "mallory", method: "DELETE", path: "/v1/messages/{msgP}/reactions/thumbs_up",
		wantStatus: 404, wantErr: errNotFound},
}

var deleteMessageCases = []apiCase{
	{name: "own, with its attachments", method: "DELETE", path: "/v1/messages/{msgA}",
		wantStatus: 200, want: map[string]any{"id": "{msgA}", "deleted": true},
		check: func(t *testing.T, e *env, fx *fixture, _ *response) {
			assertError(t, e.as(t, "alice", "GET", "/v1/messages/"+fx.msgA, nil), 404, *errNotFound)
			assertError(t, e.as(t, "alice", "DELETE", "/v1/messages/"+fx.msgA, nil), 404, *errNotFound)
			assertError(t, e.as(t, "alice", "GET", "/v1/attachments/"+fx.attL, nil), 404, *errNotFound)
			assertError(t, e.as(t, "alice", "GET", "/v1/attachments/"+fx.attL+"/linked.png", nil), 404, *errNotFound)
			_, err := e.mem.Open(e.ctx, "attachments/"+fx.attL)
			assert.Error(t, err, "the file is gone")
			pending, err := e.store.PendingDeletions(e.ctx, 100)
			require.NoError(t, err)
			assert.NotContains(t, pending, "attachments/"+fx.attL)
			// Unlinked attachments are untouched.
			assert.Equal(t, 200, e.as(t, "alice", "GET", "/v1/attachments/"+fx.attA, nil).StatusCode)
		}},
	{name: "another's", as: "bob", method: "DELETE", path: "/v1/messages/{msgA}", wantStatus: 403, wantErr: errPermission},
	{name: "unknown", method: "DELETE", path: "/v1/messages/msg_01jzzzzzzzzzzzzzzzzzzzzzzz", wantStatus: 404, wantErr: errNotFound},
	{name: "hidden by the policy", as: "mallory", method: "DELETE", path: "/v1/messages/{msgP}", wantStatus: 404, wantErr: errNotFound},
}
