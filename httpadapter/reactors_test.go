package httpadapter_test

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/messaging"
)

// reactorNames returns the usernames of a reactors list's data.
func reactorNames(t *testing.T, body map[string]any) []string {
	t.Helper()
	var out []string
	for _, it := range body["data"].([]any) {
		r := it.(map[string]any)
		assert.Equal(t, "reactor", r["object"])
		assert.IsType(t, float64(0), r["reacted_at"], "reacted_at is Unix seconds")
		out = append(out, r["username"].(string))
	}
	return out
}

// TestPopularReaction: a message with 150 reactors of one reaction embeds
// the first 100 and counts all 150 in reaction_counts; the reactors list
// pages through every one, in the order they came, by username cursors,
// to whoever may see the message.
func TestPopularReaction(t *testing.T) {
	const n = 150
	for _, b := range backendtest.All(t) {
		t.Run(b.Name, func(t *testing.T) {
			e := newEnv(t, b.New(t), envConfig{})
			fx := e.fixture(t)
			names := make([]string, n)
			for i := range n {
				c, err := e.msgs.SaveContact(e.ctx, messaging.Contact{Username: fmt.Sprintf("user%03d", i)})
				require.NoError(t, err)
				names[i] = c.Username
				_, err = e.msgs.Update(e.ctx, c, fx.msgP, messaging.Update{React: []string{"tada"}})
				require.NoError(t, err)
			}
			res := e.as(t, "alice", "PUT", "/v1/messages/"+fx.msgP, form("reactions[eyes][]=alice"))
			require.Equal(t, 200, res.StatusCode, "%s", res.body)
			for _, res := range []*response{res, e.as(t, "alice", "GET", "/v1/messages/"+fx.msgP, nil)} {
				m := res.json(t)
				rs := m["reactions"].([]any)
				require.Len(t, rs, 2)
				tada := rs[0].(map[string]any)["tada"].([]any)
				assert.Len(t, tada, 100, "a message embeds the first 100 reactors of a reaction")
				assert.Equal(t, "user000", tada[0])
				assert.Equal(t, "user099", tada[99])
				assert.Equal(t, map[string]any{"tada": float64(n), "eyes": float64(1)}, m["reaction_counts"])
			}
			list := e.as(t, "alice", "GET", "/v1/messages?conversation_id="+fx.private, nil).json(t)["data"].([]any)
			require.NotEmpty(t, list)
			assert.Len(t, list[0].(map[string]any)["reactions"].([]any)[0].(map[string]any)["tada"], 100, "in a list too")
			assert.Equal(t, float64(n), list[0].(map[string]any)["reaction_counts"].(map[string]any)["tada"])

			path := "/v1/messages/" + fx.msgP + "/reactions/tada"
			var all []string
			after := ""
			for page := 0; ; page++ {
				q := "?limit=40"
				if after != "" {
					q += "&starting_after=" + after
				}
				res := e.as(t, "bob", "GET", path+q, nil)
				require.Equal(t, 200, res.StatusCode, "%s", res.body)
				body := res.json(t)
				assert.Equal(t, "list", body["object"])
				got := reactorNames(t, body)
				all = append(all, got...)
				if !body["has_more"].(bool) {
					break
				}
				require.Less(t, page, 10)
				after = got[len(got)-1]
			}
			assert.Equal(t, names, all, "every reactor, once, in the order they came")

			body := e.as(t, "bob", "GET", path+"?limit=3&ending_before=user100", nil).json(t)
			assert.Equal(t, []string{"user097", "user098", "user099"}, reactorNames(t, body), "ending_before: those just before, still in order")
			assert.Equal(t, true, body["has_more"])
			body = e.as(t, "bob", "GET", path+"?limit=3&ending_before=user003", nil).json(t)
			assert.Equal(t, []string{"user000", "user001", "user002"}, reactorNames(t, body))
			assert.Equal(t, false, body["has_more"])
			body = e.as(t, "bob", "GET", path, nil).json(t)
			assert.Len(t, body["data"], 10, "the default limit")

			body = e.as(t, "bob", "GET", "/v1/messages/"+fx.msgP+"/reactions/nobody_used_it", nil).json(t)
			assert.Equal(t, []any{}, body["data"], "a name nobody used has no reactors")
			assert.Equal(t, false, body["has_more"])

			assertError(t, e.as(t, "bob", "GET", path+"?starting_after=bob", nil), 400, wantErr{"invalid_request_error", "parameter_invalid", "starting_after"})
			assertError(t, e.as(t, "bob", "GET", path+"?ending_before=nobody", nil), 400, wantErr{"invalid_request_error", "parameter_invalid", "ending_before"})
			assertError(t, e.as(t, "bob", "GET", path+"?starting_after=user001&ending_before=user009", nil), 400, wantErr{"invalid_request_error", "parameter_invalid", "ending_before"})
			assertError(t, e.as(t, "bob", "GET", path+"?limit=101", nil), 400, wantErr{"invalid_request_error", "parameter_invalid", "limit"})
			assertError(t, e.as(t, "bob", "GET", "/v1/messages/"+fx.msgP+"/reactions/"+url.PathEscape("a b"), nil), 400, wantErr{"invalid_request_error", "parameter_invalid", "name"})

			// mallory may not see the conversation: the message is unknown to
			// her, as one that does not exist.
			hidden := e.as(t, "mallory", "GET", path, nil)
			assertError(t, hidden, 404, wantErr{"not_found_error", "", ""})
			ghost := e.as(t, "mallory", "GET", "/v1/messages/msg_0000000000000000000000000/reactions/tada", nil)
			assert.Equal(t, ghost.StatusCode, hidden.StatusCode)
			assert.NotContains(t, string(hidden.body), "user0")
		})
	}
}

// TestReactorRenamed: the reactors list and the message show a reactor's
// username as stored now.
func TestReactorRenamed(t *testing.T) {
	e := newEnv(t, backendtest.All(t)[0].New(t), envConfig{})
	fx := e.fixture(t)
	bob := e.users["bob"]
	bob.Username = "robert"
	_, err := e.msgs.SaveContact(e.ctx, bob)
	require.NoError(t, err)
	m := e.as(t, "alice", "GET", "/v1/messages/"+fx.msgB, nil).json(t)
	assert.Equal(t, []any{map[string]any{"thumbs_up": []any{"alice", "robert"}}}, m["reactions"])
	body := e.as(t, "alice", "GET", "/v1/messages/"+fx.msgB+"/reactions/thumbs_up", nil).json(t)
	assert.Equal(t, []string{"alice", "robert"}, reactorNames(t, body))
	body = e.as(t, "alice", "GET", "/v1/messages/"+fx.msgB+"/reactions/thumbs_up?starting_after=robert", nil).json(t)
	assert.Empty(t, body["data"])
}
