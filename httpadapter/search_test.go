package httpadapter_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testSearch is the flow of GET /v1/messages/search on a backend: words
// folded, the last a prefix, pages both ways, the caller's access, edits
// and deletes, and the query's rules.
func testSearch(t *testing.T, newStore newStoreFunc) {
	e := newEnv(t, newStore(t), envConfig{})
	send := func(conv, text string) string {
		t.Helper()
		res := e.as(t, "alice", "POST", "/v1/messages", form("conversation_id="+conv+"&message="+url.QueryEscape(text)))
		require.Equal(t, 201, res.StatusCode, "body: %s", res.body)
		return res.json(t)["id"].(string)
	}
	search := func(user, query string, more ...string) ([]string, bool) {
		t.Helper()
		path := "/v1/messages/search?query=" + url.QueryEscape(query)
		if len(more) > 0 {
			path += "&" + strings.Join(more, "&")
		}
		return listIDs(t, e.as(t, user, "GET", path, nil))
	}
	var plans []string // oldest first
	for i := range 7 {
		plans = append(plans, send("search-public", fmt.Sprintf("Quarterly PLAN nr. %d, Straße", i)))
	}
	secret := send("private-search", "quarterly plan, secret")
	cafe := send("search-public", "Un CAFÉ à l'école")
	send("search-public", "nothing to see")

	got, more := search("alice", "quart")
	assert.Equal(t, []string{secret, plans[6], plans[5], plans[4], plans[3], plans[2], plans[1], plans[0]}, got)
	assert.False(t, more)
	got, _ = search("mallory", "quarterly plan", "conversation_id=search-public", "limit=3")
	assert.Equal(t, []string{plans[6], plans[5], plans[4]}, got, "mallory sees the public conversation only")
	got, more = search("alice", "plan", "conversation_id=search-public", "limit=3", "starting_after="+plans[4])
	assert.Equal(t, []string{plans[3], plans[2], plans[1]}, got)
	assert.True(t, more)
	got, more = search("alice", "plan", "conversation_id=search-public", "limit=3", "ending_before="+plans[1])
	assert.Equal(t, []string{plans[4], plans[3], plans[2]}, got)
	assert.True(t, more)
	got, _ = search("mallory", "secret")
	assert.Empty(t, got, "not in the caller's scope")
	got, _ = search("alice", "strasse")
	assert.Len(t, got, 7)
	got, _ = search("alice", "ecole cafe")
	assert.Equal(t, []string{cafe}, got)

	// Edited: found by the new text only; deleted: never.
	res := e.as(t, "alice", "PUT", "/v1/messages/"+cafe, form("message=tea time"))
	require.Equal(t, 200, res.StatusCode, "body: %s", res.body)
	got, _ = search("alice", "cafe")
	assert.Empty(t, got)
	got, _ = search("alice", "TEA")
	assert.Equal(t, []string{cafe}, got)
	require.Equal(t, 200, e.as(t, "alice", "DELETE", "/v1/messages/"+cafe, nil).StatusCode)
	got, _ = search("alice", "tea")
	assert.Empty(t, got)

	for _, tc := range []struct {
		path  string
		param string
		code  string
	}{
		{"/v1/messages/search", "query", "parameter_missing"},
		{"/v1/messages/search?query=", "query", "parameter_missing"},
		{"/v1/messages/search?query=%21%3F", "query", "parameter_invalid"},
		{"/v1/messages/search?query=" + strings.Repeat("a", 257), "query", "parameter_invalid"},
		{"/v1/messages/search?query=a&query=b", "query", "parameter_invalid"},
		{"/v1/messages/search?query=plan%00", "query", "parameter_invalid"},
		{"/v1/messages/search?query=quarterly%0Aplan", "query", "parameter_invalid"},
		{"/v1/messages/search?query=plan&limit=101", "limit", "parameter_invalid"},
		{"/v1/messages/search?query=plan&starting_after=" + cafe, "starting_after", "parameter_invalid"},
		{"/v1/messages/search?query=plan&ending_before=" + secret + "&conversation_id=search-public", "ending_before", "parameter_invalid"},
	} {
		assertError(t, e.as(t, "alice", "GET", tc.path, nil), 400, wantErr{"invalid_request_error", tc.code, tc.param})
	}
	got, _ = search("alice", strings.Repeat("a", 256))
	assert.Empty(t, got, "256 characters are a query")
}
