package httpadapter_test

import (
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/ids"
)

// TestAuthorizationMatrix sends every endpoint's request as each kind of
// caller, about alice's message, file and conversation in a conversation
// that the policy hides from mallory, each cell in a fresh fixture:
//
//   - author:   alice, who made them;
//   - other:    bob, who may see them but not change what is alice's;
//   - none:     no Authorization header;
//   - bad:      a bearer token nobody has;
//   - excluded: mallory, whom the policy does not let see the conversation.
//
// It checks the status the README gives each, that a refused request changes
// nothing, and that the excluded caller cannot tell that any of it exists:
// her answers are those for ids that name nothing (404, never 403), and
// no answer of hers holds the hidden ids, texts or file.
func TestAuthorizationMatrix(t *testing.T) {
	type cell = int // the status for a caller; 0: the one for unknown ids
	endpoints := []struct {
		name, method, path string
		body               func(caller string) *reqBody
		author, other      cell
		excluded           cell
	}{
		{"list messages of the conversation", "GET", "/v1/messages?conversation_id={private}", nil, 200, 200, 200},
		{"list messages after the message", "GET", "/v1/messages?starting_after={msgP}", nil, 200, 200, 0},
		{"create a message", "POST", "/v1/messages", bodyOf("conversation_id={private}&message=hello"), 201, 201, 0},
		{"get the message", "GET", "/v1/messages/{msgP}", nil, 200, 200, 0},
		{"edit the message", "PUT", "/v1/messages/{msgP}", bodyOf("message=edited"), 200, 403, 0},
		{"react to the message", "PUT", "/v1/messages/{msgP}", func(c string) *reqBody { return form("reactions[tada][]=" + c) }, 200, 200, 0},
		{"mark the message read", "PUT", "/v1/messages/{msgP}", bodyOf("read=true"), 200, 200, 0},
		{"link a file to the message", "PUT", "/v1/messages/{msgP}", bodyOf("attachments[]={attP}"), 200, 403, 0},
		{"remove a reaction", "DELETE", "/v1/messages/{msgP}/reactions/thumbs_up", nil, 200, 200, 0},
		{"list the reactors of a reaction", "GET", "/v1/messages/{msgP}/reactions/thumbs_up", nil, 200, 200, 0},
		{"delete the message", "DELETE", "/v1/messages/{msgP}", nil, 200, 403, 0},
		{"list conversations", "GET", "/v1/conversations", nil, 200, 200, 200},
		{"get the conversation", "GET", "/v1/conversations/{private}", nil, 200, 200, 0},
		{"mark the conversation read", "PUT", "/v1/conversations/{private}", bodyOf("read_through={msgP}"), 200, 200, 0},
		{"list files", "GET", "/v1/attachments", nil, 200, 200, 200},
		{"list files of the conversation", "GET", "/v1/attachments?conversation_id={private}", nil, 200, 200, 200},
		{"list files after the file", "GET", "/v1/attachments?starting_after={attP}", nil, 200, 200, 0},
		{"upload into the conversation", "POST", "/v1/attachments", func(string) *reqBody {
			return multipartBody(field("conversation_id", "{private}"), file("u.txt", "text/plain", "upload"))
		}, 201, 201, 0},
		{"upload into the message", "POST", "/v1/attachments", func(string) *reqBody {
			return multipartBody(field("message_id", "{msgP}"), file("u.txt", "text/plain", "upload"))
		}, 201, 403, 0},
		{"get the file", "GET", "/v1/attachments/{attP}", nil, 200, 200, 0},
		{"download the file", "GET", "/v1/attachments/{attP}/p.txt", nil, 200, 200, 0},
		{"rename the file", "PUT", "/v1/attachments/{attP}", bodyOf("filename=renamed.txt"), 200, 403, 0},
		{"delete the file", "DELETE", "/v1/attachments/{attP}", nil, 200, 403, 0},
	}
	callers := []struct{ name, token string }{
		{"author", "tok-alice"}, {"other", "tok-bob"}, {"none", ""}, {"bad", "tok-nobody"}, {"excluded", "tok-mallory"},
	}
	var cells atomic.Int64
	t.Cleanup(func() { // after the backends' parallel subtests
		t.Logf("authorization matrix: %d endpoints × %d callers, %d cells run", len(endpoints), len(callers), cells.Load())
	})
	for _, b := range backendtest.All(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, b.New(t), envConfig{})
			for _, ep := range endpoints {
				for _, c := range callers {
					t.Run(ep.name+"/"+c.name, func(t *testing.T) {
						cells.Add(1)
						fx := e.fixture(t)
						var body *reqBody
						if ep.body != nil {
							body = ep.body(strings.TrimPrefix(c.token, "tok-"))
							body = &reqBody{body.ctype, fx.vars.Replace(body.data)}
						}
						path := fx.vars.Replace(ep.path)
						before := e.snapshot(t)
						res := e.do(t, ep.method, path, c.token, body)

						want := map[string]cell{"author": ep.author, "other": ep.other, "none": 401, "bad": 401, "excluded": ep.excluded}[c.name]
						if want == 0 {
							// As for ids that name nothing.
							ghost := ghostVars(fx)
							var gbody *reqBody
							if ep.body != nil {
								gb := ep.body("mallory")
								gbody = &reqBody{gb.ctype, ghost.Replace(gb.data)}
							}
							gres := e.do(t, ep.method, ghost.Replace(ep.path), c.token, gbody)
							assert.NotEqual(t, 403, gres.StatusCode, "ghost: %s", gres.body)
							assert.Equal(t, gres.StatusCode, res.StatusCode, "%s: the hidden resource answers otherwise than an unknown one: %s", c.name, res.body)
							assert.Equal(t, normalizeIDs(string(gres.body)), normalizeIDs(string(res.body)), "the answers differ beyond the ids sent")
							want = gres.StatusCode
						}
						require.Equal(t, want, res.StatusCode, "%s %s as %s: %s", ep.method, path, c.name, res.body)
						if res.StatusCode >= 400 {
							e.assertUnchanged(t, before)
						}
						if c.name == "excluded" {
							for _, secret := range []string{fx.msgP, fx.attP, fx.private, "a secret", "private file"} {
								if strings.Contains(path, secret) || body != nil && strings.Contains(body.data, secret) {
									// She sent it: an error may repeat it, as for any id.
									continue
								}
								assert.NotContains(t, string(res.body), secret, "the excluded caller sees %q", secret)
							}
						}
						if c.name == "none" || c.name == "bad" {
							assert.Contains(t, res.Header.Get("WWW-Authenticate"), "Bearer")
						}
					})
				}
			}
		})
	}
}

func bodyOf(form string) func(string) *reqBody {
	return func(string) *reqBody { return &reqBody{"application/x-www-form-urlencoded", form} }
}

// ghostVars replaces the fixture's hidden ids with ids of the same kinds
// that name nothing.
func ghostVars(fx *fixture) *strings.Replacer {
	return strings.NewReplacer(
		"{private}", "private-nothing-"+fmt.Sprint(fixtureSeq.Load()), "{msgP}", ids.New(ids.Message), "{attP}", ids.New(ids.Attachment),
		"{conv}", fx.conv,
	)
}

var idPattern = regexp.MustCompile(`(msg|att|req|ctc)_[0-9a-z]{26}|private-[a-z0-9-]+`)

// normalizeIDs replaces ids and private conversation names with a mark.
func normalizeIDs(s string) string { return idPattern.ReplaceAllString(s, "ID") }
