package parleytest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/parleytest"
)

// A running API with two callers: alice sends over HTTP, bob reads the
// conversation. In a test, parleytest.New(t, nil) does what NewServer and
// Close do here.
func Example() {
	chat, err := parleytest.NewServer(nil)
	if err != nil {
		panic(err)
	}
	defer chat.Close()

	alice, bob := chat.Caller("alice"), chat.Caller("bob")
	err = alice.Call("POST", "/v1/messages", url.Values{"conversation_id": {"team"}, "message": {"Lunch at noon?"}}, nil)
	if err != nil {
		panic(err)
	}

	var page struct {
		Data []struct {
			Message string
			Contact struct{ Username string }
		}
	}
	if err := bob.Call("GET", "/v1/messages", url.Values{"conversation_id": {"team"}}, &page); err != nil {
		panic(err)
	}
	for _, m := range page.Data {
		fmt.Printf("%s: %s\n", m.Contact.Username, m.Message)
	}
	// Output:
	// alice: Lunch at noon?
}

// The services behind the API take the callers' contacts: set up state in
// Go, check it over HTTP, and the other way round.
func ExampleServer_services() {
	chat, err := parleytest.NewServer(nil)
	if err != nil {
		panic(err)
	}
	defer chat.Close()
	ctx := context.Background()
	alice, bob := chat.Caller("alice"), chat.Caller("bob")

	m, err := chat.Messages.Create(ctx, alice.Contact, messaging.NewMessage{ConversationID: "team", Text: "Ship it?"})
	if err != nil {
		panic(err)
	}
	// bob reacts over HTTP…
	if err := bob.Call("PUT", "/v1/messages/"+m.ID, url.Values{"reactions[ship][]": {"bob"}}, nil); err != nil {
		panic(err)
	}
	// … and the service sees it.
	m, err = chat.Messages.Get(ctx, alice.Contact, m.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(m.Text, m.Reactions)
	// Output:
	// Ship it? [{ship [bob] 1}]
}

// Upload a file, link it to a message, and download it from its file_url
// with the caller's client, which carries the caller's token.
func ExampleCaller_Upload() {
	chat, err := parleytest.NewServer(nil)
	if err != nil {
		panic(err)
	}
	defer chat.Close()
	alice, bob := chat.Caller("alice"), chat.Caller("bob")

	var att struct {
		ID      string
		FileURL string `json:"file_url"`
	}
	err = alice.Upload(url.Values{"conversation_id": {"team"}}, "notes.txt", strings.NewReader("meeting notes\n"), &att)
	if err != nil {
		panic(err)
	}
	var m struct {
		Attachments []struct{ Filename string }
	}
	err = alice.Call("POST", "/v1/messages", url.Values{"conversation_id": {"team"}, "message": {"Notes attached"}, "attachments[]": {att.ID}}, &m)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(m.Attachments), m.Attachments[0].Filename)

	res, err := bob.Client().Get(att.FileURL)
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	fmt.Printf("%d %q\n", res.StatusCode, b)
	// Output:
	// 1 notes.txt
	// 200 "meeting notes\n"
}

// Follow a caller's events in Go while others write over HTTP.
func ExampleServer_events() {
	chat, err := parleytest.NewServer(nil)
	if err != nil {
		panic(err)
	}
	defer chat.Close()
	ctx := context.Background()
	alice, bob := chat.Caller("alice"), chat.Caller("bob")

	sub, err := chat.Events.Subscribe(ctx, bob.Contact, events.SubscribeOptions{ConversationID: "team"})
	if err != nil {
		panic(err)
	}
	defer sub.Close()
	err = alice.Call("POST", "/v1/messages", url.Values{"conversation_id": {"team"}, "message": {"Standup in 5"}}, nil)
	if err != nil {
		panic(err)
	}
	e, err := sub.Next(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(e.Type, e.Message.Contact.Username, e.Message.Text)
	// Output:
	// message.created alice Standup in 5
}

// A failure is an *Error with the status and the API's error object, and
// errors.Is tests it against the messaging kinds.
func ExampleError() {
	chat, err := parleytest.NewServer(nil)
	if err != nil {
		panic(err)
	}
	defer chat.Close()

	err = chat.Caller("alice").Call("POST", "/v1/messages", url.Values{"message": {"hi"}}, nil)
	var e *parleytest.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Type, e.Code, e.Param)
	}
	err = chat.Caller("alice").Call("GET", "/v1/messages/msg_00000000000000000000000000", nil, nil)
	fmt.Println(errors.Is(err, messaging.ErrNotFound))
	// Output:
	// 400 invalid_request_error parameter_missing conversation_id
	// true
}

// A host's own Authenticator and a Policy look up contacts and
// memberships: Setup stores them with the built services before the
// server answers, so the test's first request finds them.
func ExampleOptions_setup() {
	sessions := map[string]messaging.Contact{} // the host's sessions, filled by Setup
	chat, err := parleytest.NewServer(&parleytest.Options{
		Messaging: &messaging.Options{Policy: messaging.MembersOnly()},
		Setup: func(ctx context.Context, msgs *messaging.Service) error {
			ann, err := msgs.SaveContact(ctx, messaging.Contact{ID: "user-1", Username: "ann"}) // the host's user id
			if err != nil {
				return err
			}
			sessions["session-ann"] = ann
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
	if err != nil {
		panic(err)
	}
	defer chat.Close()

	for _, session := range []string{"session-ann", "session-nobody"} {
		req, _ := http.NewRequest("POST", chat.URL+"/v1/messages", strings.NewReader("conversation_id=team&message=hi"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Session", session)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		res.Body.Close()
		fmt.Println(session, res.StatusCode)
	}
	// Output:
	// session-ann 201
	// session-nobody 401
}
