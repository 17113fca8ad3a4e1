package httpadapter_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/messaging/driver"
)

// testThreads covers API.md's Threads section over HTTP.
func testThreads(t *testing.T, newStore newStoreFunc) {
	store := newStore(t)
	if _, ok := store.(driver.ThreadStore); !ok {
		t.Skip("the store keeps no threads (driver.ThreadStore)")
	}
	e := newEnv(t, store, envConfig{events: &events.Options{}})
	post := func(user, body string) map[string]any {
		t.Helper()
		res := e.as(t, user, "POST", "/v1/messages", form(body))
		require.Equal(t, 201, res.StatusCode, "body: %s", res.body)
		return res.json(t)
	}
	root := post("alice", "conversation_id=team&message=lunch")
	rootID := root["id"].(string)
	assert.Nil(t, root["parent_id"])
	assert.EqualValues(t, 0, root["reply_count"])
	assert.Nil(t, root["last_reply_at"])
	r1 := post("bob", "conversation_id=team&message=yes&parent_id="+rootID)
	assert.Equal(t, rootID, r1["parent_id"])
	res := e.as(t, "alice", "POST", "/v1/messages", jsonBody(`{"conversation_id":"team","message":"where?","parent_id":"`+rootID+`"}`))
	require.Equal(t, 201, res.StatusCode, "body: %s", res.body)
	r2 := res.json(t)

	// The root carries its counts; the conversation leaves replies out.
	got := e.as(t, "bob", "GET", "/v1/messages/"+rootID, nil).json(t)
	assert.EqualValues(t, 2, got["reply_count"])
	assert.Equal(t, r2["created_at"], got["last_reply_at"])
	list := e.as(t, "bob", "GET", "/v1/messages?conversation_id=team", nil).json(t)
	require.Len(t, list["data"], 1)
	conv := e.as(t, "bob", "GET", "/v1/conversations/team", nil).json(t)
	assert.EqualValues(t, 1, conv["message_count"])
	assert.EqualValues(t, 1, conv["unread_count"], "alice's reply is not counted in the conversation")

	// The thread's replies, newest first, paged by keyset.
	page := e.as(t, "bob", "GET", "/v1/messages?parent_id="+rootID+"&limit=1", nil).json(t)
	require.Len(t, page["data"], 1)
	assert.Equal(t, r2["id"], page["data"].([]any)[0].(map[string]any)["id"])
	assert.Equal(t, true, page["has_more"])
	page = e.as(t, "bob", "GET", "/v1/messages?parent_id="+rootID+"&limit=1&starting_after="+r2["id"].(string), nil).json(t)
	assert.Equal(t, r1["id"], page["data"].([]any)[0].(map[string]any)["id"])
	assert.Equal(t, false, page["has_more"])
	page = e.as(t, "bob", "GET", "/v1/messages?parent_id="+rootID+"&ending_before="+r1["id"].(string), nil).json(t)
	assert.Equal(t, r2["id"], page["data"].([]any)[0].(map[string]any)["id"])

	// Threads, with each caller's own unread replies.
	threads := e.as(t, "bob", "GET", "/v1/threads", nil).json(t)
	require.Len(t, threads["data"], 1)
	th := threads["data"].([]any)[0].(map[string]any)
	assert.Equal(t, rootID, th["id"])
	assert.Equal(t, "thread", th["object"])
	assert.Equal(t, "team", th["conversation_id"])
	assert.EqualValues(t, 2, th["reply_count"])
	assert.EqualValues(t, 1, th["unread_count"])
	assert.Nil(t, th["last_read_message_id"])
	assert.Equal(t, rootID, th["root"].(map[string]any)["id"])
	one := e.as(t, "mallory", "GET", "/v1/threads/"+rootID, nil).json(t)
	assert.EqualValues(t, 2, one["unread_count"], "one who never read it has every reply unread")
	assert.Empty(t, e.as(t, "mallory", "GET", "/v1/threads", nil).json(t)["data"], "mallory takes part in none")

	res = e.as(t, "bob", "PUT", "/v1/threads/"+rootID, form("read_through="+r2["id"].(string)))
	require.Equal(t, 200, res.StatusCode, "body: %s", res.body)
	th = res.json(t)
	assert.EqualValues(t, 0, th["unread_count"])
	assert.Equal(t, r2["id"], th["last_read_message_id"])

	// Bad input: 400s naming the parameter, changing nothing.
	other := post("alice", "conversation_id=other&message=x")["id"].(string)
	before := e.snapshot(t)
	assertError(t, e.as(t, "bob", "POST", "/v1/messages", form("conversation_id=team&message=x&parent_id="+r1["id"].(string))), 400, *invalid("parent_id"))
	assertError(t, e.as(t, "bob", "POST", "/v1/messages", form("conversation_id=team&message=x&parent_id="+other)), 400, *invalid("parent_id"))
	assertError(t, e.as(t, "bob", "POST", "/v1/messages", form("conversation_id=team&message=x&parent_id=nope")), 400, *invalid("parent_id"))
	// An empty parent_id names no root: not a message of the conversation.
	assertError(t, e.as(t, "bob", "POST", "/v1/messages", form("conversation_id=team&message=x&parent_id=")), 400, *invalid("parent_id"))
	assertError(t, e.as(t, "bob", "POST", "/v1/messages", jsonBody(`{"conversation_id":"team","message":"x","parent_id":""}`)), 400, *invalid("parent_id"))
	assertError(t, e.as(t, "bob", "POST", "/v1/messages", multipartBody(field("conversation_id", "team"), field("message", "x"), field("parent_id", ""))), 400, *invalid("parent_id"))
	assertError(t, e.as(t, "bob", "GET", "/v1/messages?parent_id="+r1["id"].(string), nil), 400, *invalid("parent_id"))
	assertError(t, e.as(t, "bob", "GET", "/v1/messages?parent_id=a&parent_id=b", nil), 400, *invalid("parent_id"))
	assertError(t, e.as(t, "bob", "PUT", "/v1/threads/"+rootID, form("read_through="+rootID)), 400, *invalid("read_through"))
	assertError(t, e.as(t, "bob", "PUT", "/v1/threads/"+rootID, form("")), 400, *missing("read_through"))
	assertError(t, e.as(t, "bob", "GET", "/v1/threads/"+r1["id"].(string), nil), 404, *errNotFound)
	assertError(t, e.as(t, "bob", "GET", "/v1/threads?starting_after="+other, nil), 400, *invalid("starting_after"))
	e.assertUnchanged(t, before)

	// The root deleted: a tombstone that keeps its place, takes no reply,
	// and goes with its last reply.
	res = e.as(t, "alice", "DELETE", "/v1/messages/"+rootID, nil)
	require.Equal(t, 200, res.StatusCode, "body: %s", res.body)
	tomb := e.as(t, "bob", "GET", "/v1/messages/"+rootID, nil)
	require.Equal(t, 200, tomb.StatusCode, "body: %s", tomb.body)
	assert.Equal(t, map[string]any{"id": rootID, "object": "message", "deleted": true, "conversation_id": "team",
		"reply_count": float64(2), "last_reply_at": r2["created_at"]}, tomb.json(t))
	list = e.as(t, "bob", "GET", "/v1/messages?conversation_id=team", nil).json(t)
	assert.Equal(t, true, list["data"].([]any)[0].(map[string]any)["deleted"])
	assertError(t, e.as(t, "bob", "POST", "/v1/messages", form("conversation_id=team&message=late&parent_id="+rootID)), 400, *invalid("parent_id"))
	assert.Equal(t, 200, e.as(t, "bob", "GET", "/v1/threads/"+rootID, nil).StatusCode)
	require.Equal(t, 200, e.as(t, "bob", "DELETE", "/v1/messages/"+r1["id"].(string), nil).StatusCode)
	require.Equal(t, 200, e.as(t, "alice", "DELETE", "/v1/messages/"+r2["id"].(string), nil).StatusCode)
	assertError(t, e.as(t, "bob", "GET", "/v1/messages/"+rootID, nil), 404, *errNotFound)

	// Events: a reply's carry its parent; thread.read goes to its reader.
	evs := e.as(t, "bob", "GET", "/v1/events?limit=100", nil).json(t)["data"].([]any)
	var sawCreated, sawDeleted, sawRead bool
	for _, v := range evs {
		ev := v.(map[string]any)
		obj, _ := ev["data"].(map[string]any)["object"].(map[string]any)
		switch ev["type"] {
		case "message.created":
			if obj["id"] == r1["id"] {
				sawCreated = true
				assert.Equal(t, rootID, obj["parent_id"])
			}
		case "message.deleted":
			if obj["id"] == r1["id"] {
				sawDeleted = true
				assert.Equal(t, rootID, obj["parent_id"])
			}
		case "thread.read":
			sawRead = true
			assert.Equal(t, "thread", obj["object"])
		}
	}
	assert.True(t, sawCreated && sawDeleted && sawRead, "created %v, deleted %v, read %v", sawCreated, sawDeleted, sawRead)
	for _, v := range e.as(t, "alice", "GET", "/v1/events?limit=100", nil).json(t)["data"].([]any) {
		assert.NotEqual(t, "thread.read", v.(map[string]any)["type"], "bob's thread.read is his alone")
	}
}

// testTombstoneWrites: a deleted root kept for its replies is a 404 to
// every request but its read (its revisions and reactors, which went with
// it, too) (API.md, Threads: "afterwards the id is a
// 404", the tombstone's GET the one exception), its sender's and others'
// alike, and none of them changes anything.
func testTombstoneWrites(t *testing.T, newStore newStoreFunc) {
	store := newStore(t)
	if _, ok := store.(driver.ThreadStore); !ok {
		t.Skip("the store keeps no threads (driver.ThreadStore)")
	}
	e := newEnv(t, store, envConfig{})
	post := func(user, body string) string {
		t.Helper()
		res := e.as(t, user, "POST", "/v1/messages", form(body))
		require.Equal(t, 201, res.StatusCode, "body: %s", res.body)
		return res.json(t)["id"].(string)
	}
	rootID := post("alice", "conversation_id=team&message=lunch")
	require.Equal(t, 200, e.as(t, "alice", "PUT", "/v1/messages/"+rootID, form("message=lunch?")).StatusCode)
	require.Equal(t, 200, e.as(t, "bob", "PUT", "/v1/messages/"+rootID, form("reactions[ok][]=bob")).StatusCode)
	post("bob", "conversation_id=team&message=yes&parent_id="+rootID)
	require.Equal(t, 200, e.as(t, "alice", "DELETE", "/v1/messages/"+rootID, nil).StatusCode)
	require.Equal(t, 200, e.as(t, "bob", "GET", "/v1/messages/"+rootID, nil).StatusCode, "the tombstone reads")
	attA := e.upload(t, "alice", "team", "a.txt", "text/plain", "a")
	attB := e.upload(t, "bob", "team", "b.txt", "text/plain", "b")

	before := e.snapshot(t)
	for _, user := range []string{"alice", "bob"} {
		att := map[string]string{"alice": attA, "bob": attB}[user]
		for _, tc := range []struct {
			name, method, path string
			body               *reqBody
			hdr                []string
		}{
			{"edit", "PUT", "/v1/messages/" + rootID, form("message=again"), nil},
			{"react", "PUT", "/v1/messages/" + rootID, form("reactions[ok][]=" + user), nil},
			{"react keyed", "PUT", "/v1/messages/" + rootID, form("reactions[ok][]=" + user), []string{"Idempotency-Key", "k-" + user}},
			{"read", "PUT", "/v1/messages/" + rootID, form("read=true"), nil},
			{"unread", "PUT", "/v1/messages/" + rootID, form("read=false"), nil},
			{"link a file", "PUT", "/v1/messages/" + rootID, form("attachments[]=" + att), nil},
			{"remove a reaction", "DELETE", "/v1/messages/" + rootID + "/reactions/ok", nil, nil},
			{"delete again", "DELETE", "/v1/messages/" + rootID, nil, nil},
			{"revisions", "GET", "/v1/messages/" + rootID + "/revisions", nil, nil},
			{"reactors", "GET", "/v1/messages/" + rootID + "/reactions/ok", nil, nil},
			{"upload into it", "POST", "/v1/attachments", multipartBody(field("message_id", rootID), file("u.txt", "text/plain", "u")), nil},
			{"reserve an upload into it", "POST", "/v1/uploads", form("filename=u.txt&file_size=1&file_type=text/plain&sha256=" + sha("u") + "&message_id=" + rootID), nil},
		} {
			t.Run(user+"/"+tc.name, func(t *testing.T) {
				res := e.as(t, user, tc.method, tc.path, tc.body, tc.hdr...)
				if tc.path == "/v1/attachments" || tc.path == "/v1/uploads" {
					assertError(t, res, 404, wantErr{"not_found_error", "resource_missing", "message_id"})
					return
				}
				assertError(t, res, 404, *errNotFound)
			})
		}
	}
	e.assertUnchanged(t, before)
}

// testTombstoneReadThrough: a deleted root kept for its replies keeps its
// place in its conversation (API.md, Threads) and is counted there, so
// read_through may name it, as any message of the conversation, and
// reading through it leaves nothing unread before it; a message deleted
// for good (no replies) is no message of the conversation: 400.
func testTombstoneReadThrough(t *testing.T, newStore newStoreFunc) {
	store := newStore(t)
	if _, ok := store.(driver.ThreadStore); !ok {
		t.Skip("the store keeps no threads (driver.ThreadStore)")
	}
	e := newEnv(t, store, envConfig{})
	post := func(user, body string) string {
		t.Helper()
		res := e.as(t, user, "POST", "/v1/messages", form(body))
		require.Equal(t, 201, res.StatusCode, "body: %s", res.body)
		return res.json(t)["id"].(string)
	}
	first := post("alice", "conversation_id=team&message=first")
	gone := post("alice", "conversation_id=team&message=oops")
	rootID := post("alice", "conversation_id=team&message=lunch")
	post("bob", "conversation_id=team&message=yes&parent_id="+rootID)
	require.Equal(t, 200, e.as(t, "alice", "DELETE", "/v1/messages/"+gone, nil).StatusCode)
	require.Equal(t, 200, e.as(t, "alice", "DELETE", "/v1/messages/"+rootID, nil).StatusCode)
	require.Equal(t, 200, e.as(t, "bob", "GET", "/v1/messages/"+rootID, nil).StatusCode, "the tombstone reads")
	conv := e.as(t, "bob", "GET", "/v1/conversations/team", nil).json(t)
	require.EqualValues(t, 2, conv["message_count"], "the tombstone is counted in its conversation")
	require.EqualValues(t, 2, conv["unread_count"])

	before := e.snapshot(t)
	assertError(t, e.as(t, "bob", "PUT", "/v1/conversations/team", form("read_through="+gone)), 400, *invalid("read_through"))
	e.assertUnchanged(t, before)

	res := e.as(t, "bob", "PUT", "/v1/conversations/team", form("read_through="+rootID))
	require.Equal(t, 200, res.StatusCode, "body: %s", res.body)
	conv = res.json(t)
	assert.Equal(t, rootID, conv["last_read_message_id"])
	assert.EqualValues(t, 0, conv["unread_count"], "nothing is left unread: the tombstone is the newest message")
	assert.Equal(t, conv, e.as(t, "bob", "GET", "/v1/conversations/team", nil).json(t))
	conv = e.as(t, "bob", "PUT", "/v1/conversations/team", form("read_through="+first)).json(t)
	assert.Equal(t, rootID, conv["last_read_message_id"], "an older message changes nothing")
}
