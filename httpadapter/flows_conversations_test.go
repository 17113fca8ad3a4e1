package httpadapter_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testConversations covers the README's Conversations paragraph.
func testConversations(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{})
	post := func(user, conv, text string) string {
		t.Helper()
		res := e.as(t, user, "POST", "/v1/messages", form("conversation_id="+conv+"&message="+text))
		require.Equal(t, 201, res.StatusCode, "body: %s", res.body)
		return res.json(t)["id"].(string)
	}
	get := func(user, conv string) map[string]any {
		t.Helper()
		res := e.as(t, user, "GET", "/v1/conversations/"+conv, nil)
		require.Equal(t, 200, res.StatusCode, "body: %s", res.body)
		return res.json(t)
	}

	// A conversation exists from its first message or filed attachment.
	assertError(t, e.as(t, "alice", "GET", "/v1/conversations/general", nil), 404, *errNotFound)
	m1 := post("alice", "general", "one")
	m2 := post("bob", "general", "two")
	m3 := post("bob", "general", "three")
	e.upload(t, "alice", "files", "a.txt", "text/plain", "file bytes")

	// The object, as the caller sees it.
	c := get("alice", "general")
	assert.Equal(t, "general", c["id"])
	assert.Equal(t, "conversation", c["object"])
	for _, k := range []string{"created_at", "updated_at", "message_count", "unread_count"} {
		assert.IsType(t, float64(0), c[k], k)
	}
	assert.EqualValues(t, 3, c["message_count"])
	assert.EqualValues(t, 2, c["unread_count"], "bob's two: the caller's own are never unread")
	assert.Nil(t, c["last_read_message_id"])
	last, ok := c["last_message"].(map[string]any)
	require.True(t, ok, "last_message is a Message: %v", c["last_message"])
	assert.Equal(t, m3, last["id"])
	assert.Equal(t, "message", last["object"])
	assert.Equal(t, last["created_at"], c["updated_at"], "updated_at is the time of the newest message")
	assert.EqualValues(t, 1, get("bob", "general")["unread_count"], "each caller has its own count")

	files := get("alice", "files")
	assert.Nil(t, files["last_message"])
	assert.EqualValues(t, 0, files["message_count"])
	assert.Equal(t, files["created_at"], files["updated_at"], "no message: updated_at is the time of creation")

	// read_through moves the caller's position forward, never back.
	res := e.as(t, "alice", "PUT", "/v1/conversations/general", form("read_through="+m2))
	require.Equal(t, 200, res.StatusCode, "body: %s", res.body)
	c = res.json(t)
	assert.Equal(t, "conversation", c["object"])
	assert.Equal(t, m2, c["last_read_message_id"])
	assert.EqualValues(t, 1, c["unread_count"])
	c = e.as(t, "alice", "PUT", "/v1/conversations/general", jsonBody(`{"read_through":"`+m1+`"}`)).json(t)
	assert.Equal(t, m2, c["last_read_message_id"], "an older message changes nothing")
	assert.EqualValues(t, 1, c["unread_count"])
	assert.EqualValues(t, 1, get("bob", "general")["unread_count"], "alice's reading is not bob's")

	// Bad input: a 400 that changes nothing.
	other := post("alice", "elsewhere", "x")
	before := e.snapshot(t)
	assertError(t, e.as(t, "alice", "PUT", "/v1/conversations/general", form("read_through="+other)), 400, *invalid("read_through"))
	assertError(t, e.as(t, "alice", "PUT", "/v1/conversations/general", form("read_through=msg_nope")), 400, *invalid("read_through"))
	assertError(t, e.as(t, "alice", "PUT", "/v1/conversations/general", form("")), 400, *missing("read_through"))
	assertError(t, e.as(t, "alice", "PUT", "/v1/conversations/general", form("read_through="+m2+"&read_through="+m3)), 400, *invalid("read_through"))
	assertError(t, e.as(t, "alice", "PUT", "/v1/conversations/nope", form("read_through="+m1)), 404, *errNotFound)
	assertError(t, e.as(t, "alice", "DELETE", "/v1/conversations/general", nil), 405, *errMethod)
	e.assertUnchanged(t, before)
	assert.Equal(t, m2, get("alice", "general")["last_read_message_id"])

	// Deleting a message keeps the counts exact.
	require.Equal(t, 200, e.as(t, "bob", "DELETE", "/v1/messages/"+m3, nil).StatusCode)
	c = get("alice", "general")
	assert.EqualValues(t, 0, c["unread_count"])
	assert.EqualValues(t, 2, c["message_count"])
	assert.Equal(t, m2, c["last_message"].(map[string]any)["id"])

	// The list: most recently active first, keyset paged both ways.
	var convs []string
	for i := range 5 {
		conv := fmt.Sprintf("room-%d", i)
		post("bob", conv, "hi")
		convs = append([]string{conv}, convs...)
	}
	post("bob", "general", "back") // general is active last
	want := append([]string{"general"}, convs...)
	want = append(want, "elsewhere", "files")
	got, more := listIDs(t, e.as(t, "alice", "GET", "/v1/conversations?limit=20", nil))
	assert.False(t, more)
	assert.Equal(t, want, got)
	page, more := listIDs(t, e.as(t, "alice", "GET", "/v1/conversations?limit=3", nil))
	assert.True(t, more)
	assert.Equal(t, want[:3], page)
	page, more = listIDs(t, e.as(t, "alice", "GET", "/v1/conversations?limit=3&starting_after="+want[2], nil))
	assert.True(t, more)
	assert.Equal(t, want[3:6], page)
	page, more = listIDs(t, e.as(t, "alice", "GET", "/v1/conversations?limit=3&ending_before="+want[6], nil))
	assert.True(t, more)
	assert.Equal(t, want[3:6], page, "ending_before: the items just newer, still newest first")
	list := e.as(t, "alice", "GET", "/v1/conversations?limit=1", nil).json(t)
	assert.Equal(t, "list", list["object"])
	item := list["data"].([]any)[0].(map[string]any)
	assert.Equal(t, get("alice", "general"), item, "a listed conversation is as GET shows it")
	// Default limit 10.
	for i := range 6 {
		post("bob", fmt.Sprintf("more-%d", i), "hi")
	}
	page, more = listIDs(t, e.as(t, "alice", "GET", "/v1/conversations", nil))
	assert.Len(t, page, 10, "ten a page by default")
	assert.True(t, more)
	assertError(t, e.as(t, "alice", "GET", "/v1/conversations?limit=0", nil), 400, *invalid("limit"))
	assertError(t, e.as(t, "alice", "GET", "/v1/conversations?limit=101", nil), 400, *invalid("limit"))
	assertError(t, e.as(t, "alice", "GET", "/v1/conversations?starting_after=nope", nil), 400, *invalid("starting_after"))
	assertError(t, e.as(t, "alice", "GET", "/v1/conversations?ending_before=nope", nil), 400, *invalid("ending_before"))
	assertError(t, e.as(t, "alice", "GET", "/v1/conversations?limit=2&limit=3", nil), 400, *invalid("limit"))
	assertError(t, e.as(t, "alice", "GET", "/v1/conversations?starting_after=general&ending_before=files", nil), 400, *invalid("ending_before"))

	// The policy: mallory may not see "private…" conversations.
	post("alice", "private-plans", "secret")
	assertError(t, e.as(t, "mallory", "GET", "/v1/conversations/private-plans", nil), 404, *errNotFound)
	assertError(t, e.as(t, "mallory", "PUT", "/v1/conversations/private-plans", form("read_through="+m1)), 404, *errNotFound)
	got, _ = listIDs(t, e.as(t, "alice", "GET", "/v1/conversations?limit=100", nil))
	assert.Contains(t, got, "private-plans")
	got, _ = listIDs(t, e.as(t, "mallory", "GET", "/v1/conversations?limit=100", nil))
	assert.NotContains(t, got, "private-plans")
	assertError(t, e.as(t, "mallory", "GET", "/v1/conversations?starting_after=private-plans", nil), 400, *invalid("starting_after"))
}
