package httpadapter_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/storage/storetest"
)

// TestDeletedIsGoneFromEvents: once a message (and its file) is deleted,
// neither the list of past events nor a resumed stream shows its text or
// its file, to a caller who saw them live (whose rendering of them the
// adapter kept) and to one admitted to the conversation after the delete;
// the events about them show only {"id", "object", "deleted": true}, and a
// conversation's last_message its tombstone.
func TestDeletedIsGoneFromEvents(t *testing.T) {
	const secret = "the-secret-words"
	eachStore(t, func(t *testing.T, store storetest.Store) {
		e := newEventsEnv(t, store, events.Options{})
		live := e.stream(t, "bob", "conversation_id=private-x")
		send := func(text string, atts ...string) string {
			t.Helper()
			body := "conversation_id=private-x&message=" + text
			for _, a := range atts {
				body += "&attachments[]=" + a
			}
			res := e.as(t, "alice", "POST", "/v1/messages", form(body))
			require.Equal(t, http.StatusCreated, res.StatusCode)
			return res.json(t)["id"].(string)
		}
		send("before")
		first := live.next(t) // resumed after below
		file := e.upload(t, "alice", "private-x", "secret-plans.txt", "text/plain", secret)
		id := send(secret, file)
		res := e.as(t, "bob", "PUT", "/v1/conversations/private-x", form("read_through="+id))
		require.Equal(t, http.StatusOK, res.StatusCode)
		// bob's stream renders them live, before the delete.
		var seen []string
		for len(seen) < 3 || seen[len(seen)-1] != "conversation.read" {
			f := live.next(t)
			seen = append(seen, f.typ)
			if f.typ == "message.created" {
				assert.Contains(t, f.data, secret, "live, before the delete")
			}
		}
		require.Equal(t, http.StatusOK, e.as(t, "alice", "DELETE", "/v1/messages/"+id, nil).StatusCode)
		send("after")

		check := func(t *testing.T, what, body string) {
			t.Helper()
			assert.NotContains(t, body, secret, what)
			assert.NotContains(t, body, "secret-plans", what)
		}
		listed := func(t *testing.T, user string) []any {
			t.Helper()
			res := e.as(t, user, "GET", "/v1/events?conversation_id=private-x&limit=100", nil)
			require.Equal(t, http.StatusOK, res.StatusCode)
			check(t, user+"'s list", string(res.body))
			return res.json(t)["data"].([]any)
		}
		resumed := func(t *testing.T, user string) {
			t.Helper()
			s := e.stream(t, user, "conversation_id=private-x", "Last-Event-ID", first.id)
			for {
				f := s.next(t)
				check(t, user+"'s resumed "+f.typ, f.data)
				if f.typ == "message.created" && strings.Contains(f.data, `"message":"after"`) {
					return
				}
			}
		}

		data := listed(t, "bob")
		byType := map[string]map[string]any{}
		for _, d := range data {
			ev := d.(map[string]any)
			obj, _ := ev["data"].(map[string]any)["object"].(map[string]any)
			if ev["type"] == "message.created" && obj["id"] == id {
				assert.Equal(t, map[string]any{"id": id, "object": "message", "deleted": true}, obj, "the event about the deleted message")
			}
			if ev["type"] == "attachment.created" {
				assert.Equal(t, map[string]any{"id": file, "object": "attachment", "deleted": true}, obj, "the event about its file")
			}
			byType[ev["type"].(string)] = obj
		}
		require.Contains(t, byType, "conversation.read")
		last := byType["conversation.read"]["last_message"].(map[string]any)
		assert.Equal(t, id, last["id"])
		assert.Equal(t, true, last["deleted"], "last_message is the tombstone")
		resumed(t, "bob")

		// mallory may not see private-x until admitted, after the delete.
		assert.Empty(t, listed(t, "mallory"))
		e.pol.admit("private-x")
		assert.NotEmpty(t, listed(t, "mallory"))
		resumed(t, "mallory")
	})
}

// TestDeletedAfterItsFileIsGoneFromEvents: a message whose file was
// deleted first, then the message, shows nothing of its text in the list
// of past events nor in a resumed stream, although the adapter kept its
// rendering from a read between the two deletes.
func TestDeletedAfterItsFileIsGoneFromEvents(t *testing.T) {
	const secret = "the-secret-words"
	eachStore(t, func(t *testing.T, store storetest.Store) {
		e := newEventsEnv(t, store, events.Options{})
		live := e.stream(t, "bob", "conversation_id=private-x")
		res := e.as(t, "alice", "POST", "/v1/messages", form("conversation_id=private-x&message=before"))
		require.Equal(t, http.StatusCreated, res.StatusCode)
		first := live.next(t) // resumed after below
		file := e.upload(t, "alice", "private-x", "secret-plans.txt", "text/plain", "plans")
		res = e.as(t, "alice", "POST", "/v1/messages", form("conversation_id=private-x&message="+secret+"&attachments[]="+file))
		require.Equal(t, http.StatusCreated, res.StatusCode)
		id := res.json(t)["id"].(string)
		res = e.as(t, "alice", "POST", "/v1/messages", form("conversation_id=private-x&message=after"))
		require.Equal(t, http.StatusCreated, res.StatusCode)

		list := func() string {
			t.Helper()
			res := e.as(t, "bob", "GET", "/v1/events?conversation_id=private-x&limit=100", nil)
			require.Equal(t, http.StatusOK, res.StatusCode)
			return string(res.body)
		}
		resumed := func() string {
			t.Helper()
			s := e.stream(t, "bob", "conversation_id=private-x", "Last-Event-ID", first.id)
			var all strings.Builder
			for {
				f := s.next(t)
				all.WriteString(f.data)
				if f.typ == "message.created" && strings.Contains(f.data, `"message":"after"`) {
					return all.String()
				}
			}
		}
		require.Contains(t, list(), secret, "before the deletes")
		require.Equal(t, http.StatusOK, e.as(t, "alice", "DELETE", "/v1/attachments/"+file, nil).StatusCode)
		// Read (and rendered) between the two deletes: the text without the file.
		body := list()
		require.Contains(t, body, secret, "only the file is deleted")
		require.NotContains(t, body, "secret-plans")
		require.Contains(t, resumed(), secret)
		require.Equal(t, http.StatusOK, e.as(t, "alice", "DELETE", "/v1/messages/"+id, nil).StatusCode)

		assert.NotContains(t, list(), secret, "the list, after the message's delete")
		assert.NotContains(t, resumed(), secret, "a resume, after the message's delete")
	})
}

// TestEventsLostTellsNothingOfOthers: a stream that resumes after an event
// no longer kept starts with events.lost, whose id (to resume after) is
// the caller's own newest event, never the installation's newest when
// that one is of a conversation the caller may not see; none when the
// caller sees no event.
func TestEventsLostTellsNothingOfOthers(t *testing.T) {
	const pruned = "evt_01jz8k3x4y5z6a7b8c9d0e1f2g"
	eachStore(t, func(t *testing.T, store storetest.Store) {
		e := newEventsEnv(t, store, events.Options{})
		for _, conv := range []string{"general", "private-x"} {
			res := e.as(t, "alice", "POST", "/v1/messages", form("conversation_id="+conv+"&message=hi"))
			require.Equal(t, http.StatusCreated, res.StatusCode)
		}
		newest := func(user, conv string) string {
			t.Helper()
			res := e.as(t, user, "GET", "/v1/events?limit=1&conversation_id="+conv, nil)
			require.Equal(t, http.StatusOK, res.StatusCode)
			data := res.json(t)["data"].([]any)
			require.Len(t, data, 1)
			return data[0].(map[string]any)["id"].(string)
		}
		general, private := newest("alice", "general"), newest("alice", "private-x")

		lost := e.stream(t, "alice", "", "Last-Event-ID", pruned).next(t)
		assert.Equal(t, "events.lost", lost.typ)
		assert.Equal(t, private, lost.id, "alice sees the newest event")

		for _, query := range []string{"conversation_id=general", "conversation_id=private-x", ""} {
			lost := e.stream(t, "mallory", query, "Last-Event-ID", pruned).next(t)
			assert.Equal(t, "events.lost", lost.typ)
			assert.NotEqual(t, private, lost.id, "%q: mallory may not see private-x", query)
			assert.NotEqual(t, private, lost.object(t)["id"])
			if query == "conversation_id=general" {
				assert.Equal(t, general, lost.id, "mallory's own newest")
			} else {
				assert.Empty(t, lost.id, "%q: mallory sees no event there", query)
				assert.Nil(t, lost.object(t)["id"])
			}
		}
	})
}
