package httpadapter_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/storage/memstore"
)

// These tests hold defect 2 of issue 10: one authenticated 1 MiB request
// naming 43,000 distinct reactions cost about 11 s of server CPU before its
// 400, in every body format, because each reaction was looked up linearly
// among those before it.

// manyReactions returns bodies of about size bytes that name as many
// distinct reactions of alice as fit, in each format.
func manyReactions(size int) map[string]*reqBody {
	var names []string
	n := 0
	for i := 0; n < size; i++ {
		name := fmt.Sprintf("r%d", i)
		names = append(names, name)
		n += len(name) + len("&reactions%5B%5D%5B%5D=alice")
	}
	var f strings.Builder
	for i, name := range names {
		if i > 0 {
			f.WriteByte('&')
		}
		f.WriteString(url.QueryEscape("reactions["+name+"][]") + "=alice")
	}
	obj := map[string][]string{}
	var arr []map[string][]string
	var parts []part
	for i, name := range names {
		obj[name] = []string{"alice"}
		arr = append(arr, map[string][]string{name: {"alice"}})
		if i < size/160 { // a part's framing is about 150 bytes
			parts = append(parts, field("reactions["+name+"][]", "alice"))
		}
	}
	jo, _ := json.Marshal(map[string]any{"reactions": obj})
	ja, _ := json.Marshal(map[string]any{"reactions": arr})
	return map[string]*reqBody{
		"form":              form(f.String()),
		"json_object":       jsonBody(string(jo)),
		"json_array":        jsonBody(string(ja)),
		"multipart":         multipartBody(parts...),
		"form_one_reaction": form(strings.Repeat("reactions[x][]=alice&", size/21)),
	}
}

// timePUT returns how long the handler takes to answer a PUT of body: the
// fastest of three, so that a pause of a loaded machine (or of the race
// detector) in one of them does not count.
func timePUT(t *testing.T, e *env, path string, body *reqBody) (*response, time.Duration) {
	t.Helper()
	var res *response
	fastest := time.Duration(math.MaxInt64)
	for range 3 {
		start := time.Now()
		res = e.as(t, "alice", "PUT", path, body)
		fastest = min(fastest, time.Since(start))
	}
	return res, fastest
}

func TestManyReactionsAreCheap(t *testing.T) {
	const size = 1 << 20
	e := newEnv(t, memstore.New().Driver(), envConfig{opts: httpadapter.Options{MaxBodyBytes: 2 * size}})
	fx := e.fixture(t)
	// The yardstick: a body of the same size whose parameters each cost a
	// constant (one pair of an unknown name), so that the bound holds on a
	// slow machine and under the race detector alike.
	yardstick := form("read=true" + strings.Repeat("&x=1", size/4))
	for name, body := range manyReactions(size) {
		t.Run(name, func(t *testing.T) {
			// Linear work costs about what the yardstick does; the quadratic
			// lookups cost 40 to 150 times more. Each is measured next to
			// the yardstick, up to five times, and allowed 15 times its
			// cost: a busy machine slows one measurement (5 times was
			// exceeded three times in a row at a load average of 20 on
			// two cores), quadratic work is slow in all.
			var elapsed, unit time.Duration
			for range 5 {
				_, unit = timePUT(t, e, "/v1/messages/"+fx.msgB, yardstick)
				var res *response
				res, elapsed = timePUT(t, e, "/v1/messages/"+fx.msgB, body)
				require.Equal(t, 400, res.StatusCode, "%s", res.body)
				if elapsed < 15*unit+100*time.Millisecond {
					return
				}
			}
			t.Errorf("a 1 MiB body of %s took %v; a linear one %v", name, elapsed, unit)
		})
	}
	// Nothing changed.
	res := e.as(t, "alice", "GET", "/v1/messages/"+fx.msgB, nil)
	require.Equal(t, 200, res.StatusCode)
	assert.Len(t, res.json(t)["reactions"], 1)
}

// TestPairsPerRequestBounded: a body of more than 1,000 parameters is a
// 400; 1,000 are served (unknown parameters are ignored).
func TestPairsPerRequestBounded(t *testing.T) {
	e := newEnv(t, memstore.New().Driver(), envConfig{opts: httpadapter.Options{MaxBodyBytes: 1 << 20}})
	fx := e.fixture(t)
	body := func(n int) string {
		return "read=true" + strings.Repeat("&x=1", n-1)
	}
	res := e.as(t, "bob", "PUT", "/v1/messages/"+fx.msgA, form(body(1000)))
	assert.Equal(t, 200, res.StatusCode, "%s", res.body)
	res = e.as(t, "bob", "PUT", "/v1/messages/"+fx.msgA, form(body(1001)))
	assertError(t, res, 400, wantErr{typ: "invalid_request_error", code: "body_invalid"})

	members := make([]string, 1001)
	for i := range members {
		members[i] = fmt.Sprintf(`"x%d": 1`, i)
	}
	res = e.as(t, "bob", "PUT", "/v1/messages/"+fx.msgA, jsonBody(`{"read": true, `+strings.Join(members, ", ")+`}`))
	assertError(t, res, 400, wantErr{typ: "invalid_request_error", code: "body_invalid"})

	parts := []part{field("read", "true")}
	for range 1000 {
		parts = append(parts, field("x", "1"))
	}
	res = e.as(t, "bob", "PUT", "/v1/messages/"+fx.msgA, multipartBody(parts...))
	assertError(t, res, 400, wantErr{typ: "invalid_request_error", code: "body_invalid"})
}

// TestJSONTextMustBeValid: invalid UTF-8 or half a surrogate pair in a
// JSON body is a 400, as in a form (issue 10, defect 6: JSON read them as
// U+FFFD).
func TestJSONTextMustBeValid(t *testing.T) {
	e := newEnv(t, memstore.New().Driver(), envConfig{})
	for _, body := range []string{
		"{\"conversation_id\": \"general\", \"message\": \"a\xffb\"}",
		`{"conversation_id": "general", "message": "a\ud800b"}`,
		`{"conversation_id": "general", "message": "a\udc00b"}`,
		`{"conversation_id": "general", "message": "a\ud800\u0041"}`,
	} {
		res := e.as(t, "alice", "POST", "/v1/messages", jsonBody(body))
		assertError(t, res, 400, wantErr{typ: "invalid_request_error", code: "body_invalid"})
	}
	// A pair, escaped or not, and an escaped backslash before a u are text.
	for _, text := range []string{`\ud83c\udf89`, "🎉", `\\ud800`} {
		res := e.as(t, "alice", "POST", "/v1/messages", jsonBody(`{"conversation_id": "general", "message": "`+text+`"}`))
		assert.Equal(t, 201, res.StatusCode, "%s", res.body)
	}
}

// TestHostsBoundDerivedURLs: without BaseURL, file_url follows the Host a
// client sends; with Options.Hosts, a Host that is not listed gets URLs of
// the first host (issue 10, defect 6).
func TestHostsBoundDerivedURLs(t *testing.T) {
	for _, tc := range []struct {
		hosts []string
		host  string
		want  string
	}{
		{nil, "evil.example", "http://evil.example/v1/attachments/"},
		{[]string{"chat.example.com", "127.0.0.1:1"}, "evil.example", "http://chat.example.com/v1/attachments/"},
		{[]string{"chat.example.com", "alt.example.com"}, "ALT.example.com", "http://ALT.example.com/v1/attachments/"},
	} {
		e := newEnv(t, memstore.New().Driver(), envConfig{opts: httpadapter.Options{Hosts: tc.hosts}})
		id := e.upload(t, "alice", "general", "a.txt", "text/plain", "x")
		res := e.as(t, "alice", "GET", "/v1/attachments/"+id, nil, "Host", tc.host)
		require.Equal(t, 200, res.StatusCode, "%s", res.body)
		assert.True(t, strings.HasPrefix(res.json(t)["file_url"].(string), tc.want), "%v %s: %s", tc.hosts, tc.host, res.json(t)["file_url"])
	}
}
