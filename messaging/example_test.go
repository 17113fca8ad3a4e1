package messaging_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// newServices wires the services over in-memory storage.
func newServices() *messaging.Service {
	store := memstore.New()
	msgs, err := messaging.New(context.Background(), store, memstore.NewBlobStore(), nil)
	if err != nil {
		panic(err)
	}
	return msgs
}

// Reactions merge: each caller reacts in its own name, nobody is added
// twice, and the order is the order of first use. Unreact takes reactions
// back.
func ExampleService_React() {
	ctx := context.Background()
	msgs := newServices()
	alice, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	bob, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "bob"})
	m, _ := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "Ship it?"})

	if _, err := msgs.React(ctx, bob, m.ID, "ship", "tada"); err != nil {
		panic(err)
	}
	_, _ = msgs.React(ctx, alice, m.ID, "eyes", "ship")
	_, _ = msgs.React(ctx, bob, m.ID, "ship") // already there: no change
	m, err := msgs.Unreact(ctx, bob, m.ID, "tada")
	if err != nil {
		panic(err)
	}
	for _, r := range m.Reactions {
		fmt.Println(r.Name, r.Reactors, r.Count)
	}
	// Output:
	// ship [bob alice] 2
	// eyes [alice] 1
}

// One Update edits the text and reacts, all of it or nothing; with an
// idempotency key, a retry changes nothing more.
func ExampleService_Update_reactions() {
	ctx := context.Background()
	msgs := newServices()
	alice, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	m, _ := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "Ship it?"})

	text := "Ship it!"
	u := messaging.Update{Text: &text, React: []string{"ship"}, Idempotency: messaging.Idempotency{Key: "edit-1"}}
	for range 2 { // a retry after a timeout
		var err error
		if m, err = msgs.Update(ctx, alice, m.ID, u); err != nil {
			panic(err)
		}
	}
	fmt.Println(m.Text, m.Reactions[0].Name, m.Reactions[0].Reactors)
	// Output:
	// Ship it! ship [alice]
}

// Lists are pages, newest first; StartingAfter the last item of a page
// gives the next one.
func ExampleService_Messages() {
	ctx := context.Background()
	msgs := newServices()
	alice, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	for i := 1; i <= 5; i++ {
		_, _ = msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: fmt.Sprint("message ", i)})
	}
	opts := messaging.ListOptions{Limit: 2}
	for {
		page, err := msgs.Messages(ctx, alice, "team", opts)
		if err != nil {
			panic(err)
		}
		for _, m := range page.Data {
			fmt.Println(m.Text)
		}
		if !page.HasMore {
			break
		}
		opts.StartingAfter = page.Data[len(page.Data)-1].ID
	}
	// Output:
	// message 5
	// message 4
	// message 3
	// message 2
	// message 1
}

// Errors are values: test the kind with errors.Is and read the field at
// fault with errors.As.
func Example_errors() {
	ctx := context.Background()
	msgs := newServices()
	alice, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	bob, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "bob"})

	_, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "   "})
	var e *messaging.Error
	if errors.Is(err, messaging.ErrInvalid) && errors.As(err, &e) {
		fmt.Printf("invalid %s: %s\n", e.Param, e.Message)
	}

	m, _ := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "mine"})
	err = msgs.Delete(ctx, bob, m.ID)
	fmt.Println(errors.Is(err, messaging.ErrPermission))

	_, err = msgs.Get(ctx, bob, "msg_00000000000000000000000000")
	fmt.Println(errors.Is(err, messaging.ErrNotFound), messaging.KindOf(err))
	// Output:
	// invalid message: message must not be empty
	// true
	// true not found
}

// AllMessages walks every page of a list; break out of the loop to stop
// early. Every list has such an iterator: All and the list's name.
func ExampleService_AllMessages() {
	ctx := context.Background()
	msgs := newServices()
	alice, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	for i := range 5 {
		if _, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: fmt.Sprint("message ", i)}); err != nil {
			panic(err)
		}
	}
	// Two messages a page: three pages, read as they are needed.
	for m, err := range msgs.AllMessages(ctx, alice, "team", messaging.ListOptions{Limit: 2}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(m.Text)
	}
	// Output:
	// message 4
	// message 3
	// message 2
	// message 1
	// message 0
}

// A host with users of its own stores each as a contact under its own id,
// and passes that contact as the caller.
func ExampleService_SaveContact_hostIDs() {
	ctx := context.Background()
	msgs := newServices()
	u, err := msgs.SaveContact(ctx, messaging.Contact{ID: "user-42", Username: "alice"})
	if err != nil {
		panic(err)
	}
	m, _ := msgs.Create(ctx, u, messaging.NewMessage{ConversationID: "team", Text: "hi"})
	fmt.Println(m.Contact.ID, m.Contact.Username)
	// Output: user-42 alice
}

// Each reader has its own read position and unread count; under
// MembersOnly, a contact sees the conversations it is a member of.
func ExampleService_Conversations() {
	ctx := context.Background()
	store := memstore.New()
	msgs, err := messaging.New(ctx, store, memstore.NewBlobStore(), &messaging.Options{Policy: messaging.MembersOnly()})
	if err != nil {
		panic(err)
	}
	defer msgs.Close()
	alice, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	bob, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "bob"})
	for _, who := range []messaging.Contact{alice, bob} {
		if err := msgs.AddMember(ctx, "team", who.ID); err != nil {
			panic(err)
		}
	}
	first, _ := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "one"})
	_, _ = msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "two"})

	page, _ := msgs.Conversations(ctx, bob, messaging.ListOptions{})
	for _, c := range page.Data {
		fmt.Println(c.ID, c.MessageCount, c.UnreadCount, c.LastMessage.Text)
	}
	c, _ := msgs.MarkRead(ctx, bob, "team", first.ID)
	fmt.Println("bob has", c.UnreadCount, "unread")
	// Output:
	// team 2 2 two
	// bob has 1 unread
}

// Create sends a message as the caller: the service makes its id and
// times, and the caller, as stored, is its sender.
func ExampleService_Create() {
	ctx := context.Background()
	msgs := newServices()
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	if err != nil {
		panic(err)
	}
	m, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "Hello, team"})
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.HasPrefix(m.ID, "msg_"), m.ConversationID, m.Contact.Username, m.Text)
	fmt.Println(m.CreatedAt.IsZero(), m.ReadAt.IsZero(), len(m.Reactions), len(m.Attachments))
	// Output:
	// true team alice Hello, team
	// false true 0 0
}
