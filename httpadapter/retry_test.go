package httpadapter_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/storetest"
)

// These tests check Idempotency-Key (the README's "Retries") and the revisions
// of messages through the whole handler, on every backend.

var (
	errKeyReused = &wantErr{"idempotency_error", "idempotency_key_reused", ""}
	errKeyInUse  = &wantErr{"conflict_error", "idempotency_key_in_use", ""}
	errBadKey    = &wantErr{"invalid_request_error", "parameter_invalid", ""}
)

// answer is what a client sees of a response: the status, the headers that
// matter and the body.
type answer struct {
	status   int
	location string
	ctype    string
	body     string
}

func answerOf(res *response) answer {
	return answer{res.StatusCode, res.Header.Get("Location"), res.Header.Get("Content-Type"), string(res.body)}
}

// key sends the request with an Idempotency-Key.
func (e *env) key(t testing.TB, user, key, method, path string, body *reqBody) *response {
	t.Helper()
	return e.as(t, user, method, path, body, "Idempotency-Key", key)
}

// count returns the number of messages of a conversation, as alice lists
// them.
func (e *env) count(t testing.TB, conv string) int {
	t.Helper()
	res := e.as(t, "alice", "GET", "/v1/messages?limit=100&conversation_id="+conv, nil)
	require.Equal(t, 200, res.StatusCode, "body: %s", res.body)
	data, _ := res.json(t)["data"].([]any)
	return len(data)
}

// testRetriedPOST: a POST retried ten times with one key, one after
// another, creates one message, and every answer is the first one, replays
// marked Idempotent-Replayed.
func testRetriedPOST(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{})
	body := form("conversation_id=retried&message=sent+once")
	var first answer
	for i := range 10 {
		res := e.key(t, "alice", "send-1", "POST", "/v1/messages", body)
		require.Equal(t, 201, res.StatusCode, "try %d: %s", i, res.body)
		if i == 0 {
			first = answerOf(res)
			assert.Empty(t, res.Header.Get("Idempotent-Replayed"), "the first answer is no replay")
			continue
		}
		assert.Equal(t, "true", res.Header.Get("Idempotent-Replayed"), "try %d", i)
		assert.Equal(t, first, answerOf(res), "try %d answers as the first", i)
	}
	assert.Equal(t, 1, e.count(t, "retried"), "one message")

	// The same parameters in another encoding are the same request.
	res := e.key(t, "alice", "send-1", "POST", "/v1/messages", jsonBody(`{"message":"sent once","conversation_id":"retried"}`))
	assert.Equal(t, first, answerOf(res))
	assert.Equal(t, "true", res.Header.Get("Idempotent-Replayed"))

	// Without a key, every POST sends.
	e.as(t, "alice", "POST", "/v1/messages", body)
	e.as(t, "alice", "POST", "/v1/messages", body)
	assert.Equal(t, 3, e.count(t, "retried"))
}

// testRetriedAtOnce: ten copies of a POST sent at once with one key create
// one message. A copy that arrives while the first is under way is a 409
// (idempotency_key_in_use, Retry-After); retried as a client would, every
// copy ends with the first answer.
func testRetriedAtOnce(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{})
	// alice's activity is recorded first, once. Else the copies touch her
	// at once, and across a second's turn their times differ: an answer
	// made before the last touch committed shows her last_active_at a
	// second behind the replays, which read her as she is now.
	require.Equal(t, http.StatusOK, e.as(t, "alice", "GET", "/v1/conversations", nil).StatusCode)
	const n = 10
	answers := make([]answer, n)
	conflicts := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			for {
				res := e.key(t, "alice", "at-once", "POST", "/v1/messages", form("conversation_id=at-once&message=hello"))
				if res.StatusCode == http.StatusConflict {
					assertError(t, res, 409, *errKeyInUse)
					assert.Equal(t, "1", res.Header.Get("Retry-After"))
					conflicts[i]++
					time.Sleep(5 * time.Millisecond)
					continue
				}
				answers[i] = answerOf(res)
				return
			}
		})
	}
	close(start)
	wg.Wait()
	require.Equal(t, 201, answers[0].status, "body: %s", answers[0].body)
	for i := range n {
		assert.Equal(t, answers[0], answers[i], "copy %d (after %d conflicts) answers as the others", i, conflicts[i])
	}
	assert.Equal(t, 1, e.count(t, "at-once"), "one message")
}

// testKeyReusedOtherBody: a key reused with other parameters is a 400
// idempotency_error and changes nothing; a key of another caller does not
// collide.
func testKeyReusedOtherBody(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{})
	res := e.key(t, "alice", "k-1", "POST", "/v1/messages", form("conversation_id=reuse&message=first"))
	require.Equal(t, 201, res.StatusCode)
	id := res.json(t)["id"].(string)
	before := e.snapshot(t)
	for _, tc := range []struct {
		method, path string
		body         *reqBody
	}{
		{"POST", "/v1/messages", form("conversation_id=reuse&message=second")},
		{"POST", "/v1/messages", form("conversation_id=elsewhere&message=first")},
		{"POST", "/v1/messages", form("conversation_id=reuse&message=first&attachments[]=att_01jzzzzzzzzzzzzzzzzzzzzzzz")},
		{"PUT", "/v1/messages/" + id, form("message=first")},
	} {
		res := e.key(t, "alice", "k-1", tc.method, tc.path, tc.body)
		assertError(t, res, 400, *errKeyReused)
		assert.Empty(t, res.Header.Get("Idempotent-Replayed"))
	}
	e.assertUnchanged(t, before)

	// Bob's "k-1" is his own.
	res = e.key(t, "bob", "k-1", "POST", "/v1/messages", form("conversation_id=reuse&message=second"))
	require.Equal(t, 201, res.StatusCode, "body: %s", res.body)
	assert.Empty(t, res.Header.Get("Idempotent-Replayed"))
	assert.Equal(t, "bob", res.json(t)["contact"].(map[string]any)["username"])
	assert.Equal(t, 2, e.count(t, "reuse"))
}

// blockingStore holds keyed creates of messages until released.
type blockingStore struct {
	storetest.Store
	entered chan struct{}
	release chan struct{}
}

func (s *blockingStore) CreateMessageKeyed(ctx context.Context, m messaging.Message, atts []string, rec driver.Recorder, done driver.IdempotencyRecord) error {
	s.entered <- struct{}{}
	<-s.release
	return s.Store.CreateMessageKeyed(ctx, m, atts, rec, done)
}

// testRetryWhileRunning: a retry while the first request is under way is a
// 409 that changes nothing; once the first is done, the retry replays it.
func testRetryWhileRunning(t *testing.T, newStore newStoreFunc) {
	store := &blockingStore{Store: newStore(t), entered: make(chan struct{}, 1), release: make(chan struct{})}
	e := newEnv(t, store, envConfig{})
	body := form("conversation_id=slow&message=slow")
	first := make(chan *response, 1)
	go func() { first <- e.key(t, "alice", "slow-1", "POST", "/v1/messages", body) }()
	<-store.entered
	res := e.key(t, "alice", "slow-1", "POST", "/v1/messages", body)
	assertError(t, res, 409, *errKeyInUse)
	assert.Equal(t, "1", res.Header.Get("Retry-After"))
	res = e.key(t, "alice", "slow-1", "POST", "/v1/messages", form("conversation_id=slow&message=other"))
	assertError(t, res, 409, *errKeyInUse) // under way: whatever the parameters
	close(store.release)
	got := <-first
	require.Equal(t, 201, got.StatusCode, "body: %s", got.body)
	res = e.key(t, "alice", "slow-1", "POST", "/v1/messages", body)
	assert.Equal(t, answerOf(got), answerOf(res))
	assert.Equal(t, "true", res.Header.Get("Idempotent-Replayed"))
	assert.Equal(t, 1, e.count(t, "slow"))
}

// testUploadRetried: an upload retried with one key stores one file; the
// same key with other bytes is refused and stores nothing.
func testUploadRetried(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{})
	blobs := e.blobCount(t)
	upload := func(data string) *reqBody {
		return multipartBody(field("conversation_id", "files"), file("report.csv", "text/csv", data))
	}
	var first answer
	for i := range 5 {
		res := e.key(t, "alice", "up-1", "POST", "/v1/attachments", upload("a,b,c"))
		require.Equal(t, 201, res.StatusCode, "try %d: %s", i, res.body)
		if i == 0 {
			first = answerOf(res)
			continue
		}
		assert.Equal(t, "true", res.Header.Get("Idempotent-Replayed"), "try %d", i)
		assert.Equal(t, first, answerOf(res), "try %d answers as the first", i)
	}
	assert.Equal(t, blobs+1, e.blobCount(t), "one object in the bucket")
	res := e.as(t, "alice", "GET", "/v1/attachments?conversation_id=files", nil)
	assert.Len(t, res.json(t)["data"], 1, "one attachment")

	before := e.snapshot(t)
	res = e.key(t, "alice", "up-1", "POST", "/v1/attachments", upload("other bytes"))
	assertError(t, res, 400, *errKeyReused)
	e.assertUnchanged(t, before)
	assert.Equal(t, blobs+1, e.blobCount(t))
}

// testEditsRetried: a retried edit replays; every edit that changed the
// text is a revision, newest first; a rename retried replays too.
func testEditsRetried(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{})
	res := e.as(t, "alice", "POST", "/v1/messages", form("conversation_id=edits&message=v1"))
	require.Equal(t, 201, res.StatusCode)
	id := res.json(t)["id"].(string)
	path := "/v1/messages/" + id
	edit := e.key(t, "alice", "edit-2", "PUT", path, form("message=v2"))
	require.Equal(t, 200, edit.StatusCode, "body: %s", edit.body)
	require.Equal(t, 200, e.as(t, "alice", "PUT", path, form("message=v3")).StatusCode)
	again := e.key(t, "alice", "edit-2", "PUT", path, form("message=v2"))
	assert.Equal(t, 200, again.StatusCode)
	assert.Equal(t, "v3", again.json(t)["message"], "the retry answers the message as it is now, and edits nothing")
	assert.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.Equal(t, 200, e.as(t, "alice", "PUT", path, form("reactions[ok][]=alice")).StatusCode)

	res = e.as(t, "bob", "GET", path+"/revisions", nil)
	require.Equal(t, 200, res.StatusCode, "body: %s", res.body)
	v := res.json(t)
	assert.Equal(t, "list", v["object"])
	assert.Equal(t, false, v["has_more"])
	data := v["data"].([]any)
	require.Len(t, data, 2, "two edits, the retry none: %s", res.body)
	newest := data[0].(map[string]any)
	assert.Equal(t, "revision", newest["object"])
	assert.Equal(t, id, newest["message_id"])
	assert.Equal(t, "v2", newest["message"], "the text the last edit replaced")
	assert.True(t, strings.HasPrefix(newest["id"].(string), "rev_"))
	assert.NotNil(t, newest["created_at"])
	assert.Equal(t, "v1", data[1].(map[string]any)["message"])
	assert.Len(t, newest, 5, "id, object, message_id, message, created_at: %v", newest)

	att := e.upload(t, "alice", "edits", "a.txt", "", "bytes")
	rename := e.key(t, "alice", "rename-1", "PUT", "/v1/attachments/"+att, form("filename=b.txt"))
	require.Equal(t, 200, rename.StatusCode, "body: %s", rename.body)
	require.Equal(t, 200, e.as(t, "alice", "PUT", "/v1/attachments/"+att, form("filename=c.txt")).StatusCode)
	again = e.key(t, "alice", "rename-1", "PUT", "/v1/attachments/"+att, form("filename=b.txt"))
	assert.Equal(t, answerOf(e.as(t, "alice", "GET", "/v1/attachments/"+att, nil)), answerOf(again), "the attachment as it is now")
	assert.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	assert.Equal(t, "c.txt", e.as(t, "alice", "GET", "/v1/attachments/"+att, nil).json(t)["filename"])

	// Deleted since: a replay answers what a fresh request would.
	require.Less(t, e.as(t, "alice", "DELETE", "/v1/attachments/"+att, nil).StatusCode, 300)
	assert.Equal(t, 404, e.key(t, "alice", "rename-1", "PUT", "/v1/attachments/"+att, form("filename=b.txt")).StatusCode)
	require.Less(t, e.as(t, "alice", "DELETE", path, nil).StatusCode, 300)
	assert.Equal(t, 404, e.key(t, "alice", "edit-2", "PUT", path, form("message=v2")).StatusCode)
}

// testRevisionPages: the revisions list pages like every list, and shows
// only to those who may see the message.
func testRevisionPages(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{})
	alice := e.users["alice"]
	m, err := e.msgs.Create(e.ctx, alice, messaging.NewMessage{ConversationID: "private-revs", Text: "v0"})
	require.NoError(t, err)
	for i := 1; i <= 25; i++ {
		text := fmt.Sprintf("v%d", i)
		_, err := e.msgs.Update(e.ctx, alice, m.ID, messaging.Update{Text: &text})
		require.NoError(t, err)
	}
	path := "/v1/messages/" + m.ID + "/revisions"
	texts := func(res *response) []string {
		t.Helper()
		require.Equal(t, 200, res.StatusCode, "body: %s", res.body)
		var out []string
		for _, d := range res.json(t)["data"].([]any) {
			out = append(out, d.(map[string]any)["message"].(string))
		}
		return out
	}
	ids := func(res *response) []string {
		var out []string
		for _, d := range res.json(t)["data"].([]any) {
			out = append(out, d.(map[string]any)["id"].(string))
		}
		return out
	}
	page := e.as(t, "bob", "GET", path, nil)
	assert.Equal(t, []string{"v24", "v23", "v22", "v21", "v20", "v19", "v18", "v17", "v16", "v15"}, texts(page), "default limit 10, newest first")
	assert.Equal(t, true, page.json(t)["has_more"])
	last := ids(page)[9]
	next := e.as(t, "bob", "GET", path+"?limit=5&starting_after="+last, nil)
	assert.Equal(t, []string{"v14", "v13", "v12", "v11", "v10"}, texts(next))
	back := e.as(t, "bob", "GET", path+"?limit=5&ending_before="+ids(next)[0], nil)
	assert.Equal(t, []string{"v19", "v18", "v17", "v16", "v15"}, texts(back))
	assert.Equal(t, true, back.json(t)["has_more"])
	tail := e.as(t, "bob", "GET", path+"?limit=100&starting_after="+ids(next)[4], nil)
	assert.Len(t, texts(tail), 10)
	assert.Equal(t, false, tail.json(t)["has_more"])

	assertError(t, e.as(t, "mallory", "GET", path, nil), 404, *errNotFound)
	assertError(t, e.as(t, "bob", "GET", "/v1/messages/msg_01jzzzzzzzzzzzzzzzzzzzzzzz/revisions", nil), 404, *errNotFound)
	assertError(t, e.as(t, "bob", "GET", path+"?limit=0", nil), 400, *invalid("limit"))
	assertError(t, e.as(t, "bob", "GET", path+"?starting_after=rev_01jzzzzzzzzzzzzzzzzzzzzzzz", nil), 400, *invalid("starting_after"))
	assertError(t, e.as(t, "bob", "GET", path+"?starting_after="+last+"&ending_before="+last, nil), 400, *invalid("ending_before"))
	other, err := e.msgs.Create(e.ctx, alice, messaging.NewMessage{ConversationID: "c", Text: "other"})
	require.NoError(t, err)
	assert.Empty(t, texts(e.as(t, "bob", "GET", "/v1/messages/"+other.ID+"/revisions", nil)), "an unedited message has none")
	assertError(t, e.as(t, "bob", "GET", "/v1/messages/"+other.ID+"/revisions?starting_after="+last, nil), 400, *invalid("starting_after"))

	// Deleted with the message.
	require.Equal(t, 200, e.as(t, "alice", "DELETE", "/v1/messages/"+m.ID, nil).StatusCode)
	assertError(t, e.as(t, "alice", "GET", path, nil), 404, *errNotFound)
}

// testMalformedKeys: a key that is empty, too long, not text or sent twice
// is a 400 that changes nothing; keys on GET and DELETE are ignored.
func testMalformedKeys(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{})
	body := form("conversation_id=keys&message=x")
	before := e.snapshot(t)
	for _, key := range []string{"", strings.Repeat("k", 256), "a\tb", "\xff"} {
		res := e.key(t, "alice", key, "POST", "/v1/messages", body)
		assertError(t, res, 400, *errBadKey)
	}
	req, err := http.NewRequest("POST", e.url+"/v1/messages", strings.NewReader(body.data))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tok-alice")
	req.Header.Set("Content-Type", body.ctype)
	req.Header.Add("Idempotency-Key", "one")
	req.Header.Add("Idempotency-Key", "two")
	res, err := e.srv.Client().Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, 400, res.StatusCode, "a key given twice")
	e.assertUnchanged(t, before)

	res2 := e.key(t, "alice", strings.Repeat("é", 255), "POST", "/v1/messages", body)
	assert.Equal(t, 201, res2.StatusCode, "255 characters is fine: %s", res2.body)
	id := res2.json(t)["id"].(string)
	got := e.key(t, "alice", "get-key", "GET", "/v1/messages/"+id, nil)
	assert.Equal(t, 200, got.StatusCode)
	assert.Empty(t, got.Header.Get("Idempotent-Replayed"))
	del := e.key(t, "alice", strings.Repeat("é", 255), "DELETE", "/v1/messages/"+id, nil)
	assert.Equal(t, 200, del.StatusCode, "a DELETE ignores the key: %s", del.body)
}

// TestRetriesMakeOneEvent: a retried send, upload and edit make the events
// of one change each: a replay writes nothing, and so records no event.
func TestRetriesMakeOneEvent(t *testing.T) {
	eachStore(t, func(t *testing.T, store storetest.Store) {
		e := newEventsEnv(t, store, events.Options{})
		var id string
		for range 3 {
			res := e.key(t, "alice", "send", "POST", "/v1/messages", form("conversation_id=evts&message=once"))
			require.Equal(t, 201, res.StatusCode, "body: %s", res.body)
			id = res.json(t)["id"].(string)
		}
		for range 2 {
			res := e.key(t, "alice", "upload", "POST", "/v1/attachments", multipartBody(field("message_id", id), file("a.txt", "text/plain", "bytes")))
			require.Equal(t, 201, res.StatusCode, "body: %s", res.body)
			res = e.key(t, "alice", "edit", "PUT", "/v1/messages/"+id, form("message=twice"))
			require.Equal(t, 200, res.StatusCode, "body: %s", res.body)
		}
		res := e.as(t, "alice", "GET", "/v1/events?conversation_id=evts&limit=100", nil)
		require.Equal(t, 200, res.StatusCode, "body: %s", res.body)
		var got []string
		for _, d := range res.json(t)["data"].([]any) {
			got = append([]string{d.(map[string]any)["type"].(string)}, got...) // oldest first
		}
		assert.Equal(t, []string{"message.created", "attachment.created", "message.updated", "message.updated"}, got,
			"one send, one upload into the message, one edit")
	})
}
