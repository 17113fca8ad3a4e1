package httpadapter_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

// TestTyping: POST /v1/conversations/:id/typing answers the typing object
// and reaches the others' streams as a conversation.typing frame with no
// id, at most once a second per caller; it is never stored, and a caller
// who may not see the conversation gets a 404.
func TestTyping(t *testing.T) {
	eachStore(t, func(t *testing.T, store storetest.Store) {
		e := newEventsEnv(t, store, events.Options{})
		alice := e.stream(t, "alice", "")
		bob := e.stream(t, "bob", "conversation_id=general")
		mal := e.stream(t, "mallory", "")

		start := time.Now()
		res := e.as(t, "bob", "POST", "/v1/conversations/general/typing", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		typing := res.json(t)
		assert.Equal(t, "typing", typing["object"])
		assert.Equal(t, "general", typing["conversation_id"])
		assert.Equal(t, "bob", typing["contact"].(map[string]any)["username"])
		expires := time.Unix(int64(typing["expires_at"].(float64)), 0)
		assert.WithinDuration(t, start.Add(5*time.Second), expires, 2*time.Second)

		for _, s := range []*sseStream{alice, mal} {
			f := s.next(t)
			assert.Equal(t, "conversation.typing", f.typ)
			assert.Empty(t, f.id, "typing is not stored: no id to resume after")
			obj := f.object(t)
			assert.Nil(t, obj["id"])
			assert.Equal(t, "general", obj["conversation_id"])
			assert.Equal(t, typing, obj["data"].(map[string]any)["object"])
		}
		bob.none(t, 50*time.Millisecond) // one's own typing is not echoed

		e.as(t, "bob", "POST", "/v1/conversations/general/typing", nil) // within the second
		e.as(t, "alice", "POST", "/v1/conversations/private-x/typing", nil)
		e.as(t, "alice", "POST", "/v1/conversations/general/typing", nil)
		f := bob.next(t)
		assert.Equal(t, "conversation.typing", f.typ)
		assert.Equal(t, "alice", f.object(t)["data"].(map[string]any)["object"].(map[string]any)["contact"].(map[string]any)["username"])
		res = e.as(t, "mallory", "POST", "/v1/conversations/private-x/typing", nil)
		assertError(t, res, 404, wantErr{"not_found_error", "resource_missing", "conversation_id"})
		res = e.as(t, "bob", "POST", "/v1/conversations/"+strings.Repeat("x", 300)+"/typing", nil)
		assert.Equal(t, http.StatusBadRequest, res.StatusCode)
		e.as(t, "bob", "POST", "/v1/messages", form("conversation_id=general&message=sent"))
		assert.Equal(t, "message.created", alice.next(t).typ, "bob's second typing within the second was not sent")
		f = mal.next(t)
		assert.Equal(t, "conversation.typing", f.typ)
		assert.Equal(t, "general", f.object(t)["conversation_id"], "alice's typing in general, not in private-x, which mallory may not see")
		assert.Equal(t, "message.created", mal.next(t).typ)

		list := e.as(t, "alice", "GET", "/v1/events?limit=100", nil).json(t)
		for _, ev := range list["data"].([]any) {
			assert.NotEqual(t, "conversation.typing", ev.(map[string]any)["type"], "typing is not listed")
		}
	})
}

// TestTypingMalformedKey: typing is a POST, and a malformed
// Idempotency-Key on it is a 400, as on every other POST, that tells no
// one anything.
func TestTypingMalformedKey(t *testing.T) {
	e := newEventsEnv(t, memstore.New().Driver(), events.Options{})
	alice := e.stream(t, "alice", "")
	for _, key := range []string{"", strings.Repeat("k", 256)} {
		res := e.as(t, "bob", "POST", "/v1/conversations/general/typing", nil, "Idempotency-Key", key)
		assertError(t, res, 400, wantErr{"invalid_request_error", "parameter_invalid", ""})
	}
	e.as(t, "bob", "POST", "/v1/messages", form("conversation_id=general&message=sent"))
	assert.Equal(t, "message.created", alice.next(t).typ, "no typing was sent")
}
