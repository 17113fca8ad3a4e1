package parleytest_test

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/parleytest"
	"github.com/parleychat/parley/storage/memstore"
)

// TestThreeLines is the package documentation's test, as a host writes it.
func TestThreeLines(t *testing.T) {
	chat := parleytest.New(t, nil)
	err := chat.Caller("alice").Call("POST", "/v1/messages", url.Values{"conversation_id": {"team"}, "message": {"hi"}}, nil)
	require.NoError(t, err)

	page, err := chat.Messages.Messages(t.Context(), chat.Caller("bob").Contact, "team", messaging.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	assert.Equal(t, "hi", page.Data[0].Text)
	assert.Equal(t, "alice", page.Data[0].Contact.Username)
}

// TestClosedByCleanup: the server stops when the test that made it ends,
// also with an event stream open, which ends rather than holding the
// cleanup up.
func TestClosedByCleanup(t *testing.T) {
	var (
		base   string
		stream *http.Response
		lines  *bufio.Scanner
	)
	t.Run("inner", func(t *testing.T) {
		chat := parleytest.New(t, nil)
		base = chat.URL
		req, err := chat.Caller("bob").NewRequest("GET", "/v1/events", nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "text/event-stream")
		stream, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, stream.StatusCode)
		require.NoError(t, chat.Caller("alice").Call("POST", "/v1/messages", url.Values{"conversation_id": {"team"}, "message": {"hi"}}, nil))
		// The stream delivers the message (after the commit, so wait for
		// it here: the cleanup may otherwise close the server first).
		lines = bufio.NewScanner(stream.Body)
		delivered := make(chan bool, 1)
		go func() {
			for lines.Scan() {
				if lines.Text() == "event: message.created" {
					delivered <- true
					return
				}
			}
			delivered <- false
		}()
		select {
		case ok := <-delivered:
			require.True(t, ok, "the stream ended before the event")
		case <-time.After(10 * time.Second):
			t.Fatal("the event was not delivered")
		}
	})
	defer stream.Body.Close()

	// The stream ended when the test's cleanup closed the server.
	done := make(chan struct{})
	go func() {
		for lines.Scan() {
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the event stream is still open after the test's cleanup")
	}

	_, err := http.Get(base + "/v1/messages")
	assert.Error(t, err, "the server still answers after the test's cleanup")
}

// TestCallers: each caller is its own contact with its own token; the same
// username gives the same caller; a wrong token is refused.
func TestCallers(t *testing.T) {
	chat := parleytest.New(t, nil)
	alice, bob := chat.Caller("alice"), chat.Caller("bob")
	assert.Same(t, alice, chat.Caller("alice"))
	assert.NotEqual(t, alice.Token, bob.Token)
	assert.NotEqual(t, alice.Contact.ID, bob.Contact.ID)
	assert.NotEmpty(t, alice.Contact.ID)

	for _, c := range []*parleytest.Caller{alice, bob} {
		var m struct {
			Contact struct{ ID, Username string }
		}
		require.NoError(t, c.Call("POST", "/v1/messages", url.Values{"conversation_id": {"team"}, "message": {"from " + c.Contact.Username}}, &m))
		assert.Equal(t, c.Contact.ID, m.Contact.ID)
		assert.Equal(t, c.Contact.Username, m.Contact.Username)
	}

	forged := *alice
	forged.Token = "not-a-token"
	err := forged.Call("GET", "/v1/messages", nil, nil)
	var e *parleytest.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusUnauthorized, e.Status)
	assert.Equal(t, "authentication_error", e.Type)
	assert.ErrorIs(t, err, messaging.ErrUnauthenticated)
	assert.NotErrorIs(t, err, messaging.ErrNotFound)

	host, err := chat.AddCaller(messaging.Contact{ID: "user-42", Username: "carol"})
	require.NoError(t, err)
	assert.Same(t, host, chat.Caller("carol"))
	var m struct{ Contact struct{ ID string } }
	require.NoError(t, host.Call("POST", "/v1/messages", url.Values{"conversation_id": {"team"}, "message": {"hi"}}, &m))
	assert.Equal(t, "user-42", m.Contact.ID)

	assert.Panics(t, func() { chat.Caller("no spaces allowed") })
	_, err = chat.AddCaller(messaging.Contact{Username: "[x]"})
	assert.ErrorIs(t, err, messaging.ErrInvalid)
}

// TestCallerConcurrently: callers asked for at once by parallel subtests
// get one Caller per username, as later calls do.
func TestCallerConcurrently(t *testing.T) {
	chat := parleytest.New(t, nil)
	const n = 16
	got := make([]*parleytest.Caller, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { got[i] = chat.Caller("alice") })
	}
	wg.Wait()
	for _, c := range got {
		assert.Same(t, got[0], c)
	}
	assert.Same(t, got[0], chat.Caller("alice"))
}

// TestCall: parameters go in the query of a GET and DELETE and in a form
// body otherwise; errors carry the error object.
func TestCall(t *testing.T) {
	chat := parleytest.New(t, nil)
	alice, bob := chat.Caller("alice"), chat.Caller("bob")
	var sent struct{ ID string }
	for i := range 3 {
		require.NoError(t, alice.Call("POST", "/v1/messages", url.Values{"conversation_id": {"team"}, "message": {"m" + string(rune('0'+i))}}, &sent))
	}
	var page struct {
		Data    []struct{ Message string }
		HasMore bool `json:"has_more"`
	}
	require.NoError(t, bob.Call("GET", "/v1/messages?conversation_id=team", url.Values{"limit": {"2"}}, &page))
	require.Len(t, page.Data, 2)
	assert.Equal(t, "m2", page.Data[0].Message)
	assert.True(t, page.HasMore)

	err := bob.Call("DELETE", "/v1/messages/"+sent.ID, nil, nil)
	assert.ErrorIs(t, err, messaging.ErrPermission)
	var e *parleytest.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "permission_error", e.Type)
	assert.Contains(t, e.Error(), "403 Forbidden type=permission_error")

	require.NoError(t, alice.Call("DELETE", "/v1/messages/"+sent.ID, nil, nil))
	_, err = chat.Messages.Get(t.Context(), alice.Contact, sent.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound)

	require.NoError(t, alice.Call("HEAD", "/v1/messages", nil, &page))
	err = alice.Call("GET", "/v1/nothing", nil, nil)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
}

// TestTokenGoesOnlyToTheServer: the caller's client and requests carry its
// token to the server and to no other host (a signed URL is fetched
// without one).
func TestTokenGoesOnlyToTheServer(t *testing.T) {
	chat := parleytest.New(t, nil)
	alice := chat.Caller("alice")
	var got []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
	}))
	t.Cleanup(other.Close)

	res, err := alice.Client().Get(other.URL + "/file")
	require.NoError(t, err)
	res.Body.Close()
	req, err := alice.NewRequest("GET", other.URL+"/file", nil)
	require.NoError(t, err)
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, []string{"", ""}, got)

	res, err = alice.Client().Get(chat.URL + "/v1/messages")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	req, err = alice.NewRequest("GET", "/v1/messages", nil)
	require.NoError(t, err)
	assert.Equal(t, "Bearer "+alice.Token, req.Header.Get("Authorization"))

	// A header of the request's own wins.
	req, err = http.NewRequest("GET", chat.URL+"/v1/messages", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+chat.Caller("bob").Token)
	res, err = alice.Client().Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
}

// TestUpload: the fields come before the file part, so message_id links
// the upload at once; the bytes are those sent.
func TestUpload(t *testing.T) {
	chat := parleytest.New(t, nil)
	alice := chat.Caller("alice")
	m, err := chat.Messages.Create(t.Context(), alice.Contact, messaging.NewMessage{ConversationID: "team", Text: "see file"})
	require.NoError(t, err)
	var att struct {
		ID        string
		MessageID string `json:"message_id"`
		FileSize  int64  `json:"file_size"`
	}
	require.NoError(t, alice.Upload(url.Values{"message_id": {m.ID}}, "a.txt", strings.NewReader("hello"), &att))
	assert.Equal(t, m.ID, att.MessageID)
	assert.EqualValues(t, 5, att.FileSize)
	_, body, err := chat.Files.Open(t.Context(), alice.Contact, att.ID)
	require.NoError(t, err)
	defer body.Close()
	b := make([]byte, 16)
	n, _ := body.Read(b)
	assert.Equal(t, "hello", string(b[:n]))
}

// TestOptions reach the services and the adapter.
func TestOptions(t *testing.T) {
	store := memstore.New()
	chat := parleytest.New(t, &parleytest.Options{
		Store:       store,
		Messaging:   &messaging.Options{Policy: messaging.MembersOnly()},
		Attachments: &attachments.Options{MaxUploadBytes: 4},
	})
	assert.Same(t, store, chat.Store)
	alice, bob := chat.Caller("alice"), chat.Caller("bob")
	require.NoError(t, chat.Messages.AddMember(t.Context(), "team", alice.Contact.ID))
	require.NoError(t, alice.Call("POST", "/v1/messages", url.Values{"conversation_id": {"team"}, "message": {"hi"}}, nil))
	err := bob.Call("POST", "/v1/messages", url.Values{"conversation_id": {"team"}, "message": {"hi"}}, nil)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "bob is no member")

	err = alice.Upload(url.Values{"conversation_id": {"team"}}, "a.txt", strings.NewReader("hello"), nil)
	var e *parleytest.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusRequestEntityTooLarge, e.Status)
	assert.Equal(t, "file", e.Param)

	// The host's own authenticator replaces the tokens.
	own := parleytest.New(t, &parleytest.Options{HTTP: &httpadapter.Options{
		Authenticator: httpadapter.AuthenticatorFunc(func(r *http.Request) (messaging.Contact, error) {
			return messaging.Contact{}, messaging.ErrUnauthenticated
		}),
	}})
	err = own.Caller("alice").Call("GET", "/v1/messages", nil, nil)
	assert.ErrorIs(t, err, messaging.ErrUnauthenticated)

	_, err = parleytest.NewServer(&parleytest.Options{HTTP: &httpadapter.Options{BaseURL: "not a url"}})
	assert.Error(t, err)
}

// TestEventsOverHTTP: the Feed serves GET /v1/events, as a list too.
func TestEventsOverHTTP(t *testing.T) {
	chat := parleytest.New(t, nil)
	alice := chat.Caller("alice")
	require.NoError(t, alice.Call("POST", "/v1/messages", url.Values{"conversation_id": {"team"}, "message": {"hi"}}, nil))
	var page struct{ Data []struct{ Type string } }
	require.Eventually(t, func() bool {
		return chat.Caller("bob").Call("GET", "/v1/events", nil, &page) == nil && len(page.Data) == 1
	}, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, "message.created", page.Data[0].Type)
}

// TestCloseTwice: Close may be called again, as Cleanup will.
func TestCloseTwice(t *testing.T) {
	chat := parleytest.New(t, nil)
	chat.Close()
	chat.Close()
	err := chat.Caller("alice").Call("GET", "/v1/messages", nil, nil)
	var e *parleytest.Error
	assert.False(t, errors.As(err, &e), "a closed server answers nothing: %v", err)
	assert.Error(t, err)
}

// TestSetup: Setup runs with the built services before the server answers,
// so a host's Authenticator and a MembersOnly Policy find what it stored
// from the first request on, with no map filled after New; its error
// fails NewServer.
func TestSetup(t *testing.T) {
	var sessions map[string]messaging.Contact // written by Setup only, before any request
	var setupMsgs *messaging.Service
	chat := parleytest.New(t, &parleytest.Options{
		Messaging: &messaging.Options{Policy: messaging.MembersOnly()},
		Setup: func(ctx context.Context, msgs *messaging.Service) error {
			setupMsgs = msgs
			require.NotNil(t, msgs.Files())
			require.NotNil(t, msgs.Events())
			ann, err := msgs.SaveContact(ctx, messaging.Contact{ID: "user-1", Username: "ann"})
			if err != nil {
				return err
			}
			ben, err := msgs.SaveContact(ctx, messaging.Contact{ID: "user-2", Username: "ben"})
			if err != nil {
				return err
			}
			sessions = map[string]messaging.Contact{"s-ann": ann, "s-ben": ben}
			return msgs.AddMember(ctx, "team", ann.ID)
		},
		HTTP: &httpadapter.Options{
			Authenticator: httpadapter.AuthenticatorFunc(func(r *http.Request) (messaging.Contact, error) {
				if c, ok := sessions[r.Header.Get("X-Session")]; ok {
					return c, nil
				}
				return messaging.Contact{}, messaging.ErrUnauthenticated
			}),
		},
	})
	assert.Same(t, chat.Messages, setupMsgs, "Setup gets the services behind the API")

	post := func(session string) int {
		req, err := http.NewRequest("POST", chat.URL+"/v1/messages", strings.NewReader("conversation_id=team&message=hi"))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Session", session)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	assert.Equal(t, http.StatusCreated, post("s-ann"), "a member")
	assert.Equal(t, http.StatusNotFound, post("s-ben"), "not a member")
	assert.Equal(t, http.StatusUnauthorized, post("s-nobody"), "no session")

	// The seeded contacts are the services' too.
	page, err := chat.Messages.Messages(t.Context(), sessions["s-ann"], "team", messaging.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	assert.Equal(t, "user-1", page.Data[0].Contact.ID)

	boom := errors.New("boom")
	_, err = parleytest.NewServer(&parleytest.Options{Setup: func(context.Context, *messaging.Service) error { return boom }})
	assert.ErrorIs(t, err, boom)
}
