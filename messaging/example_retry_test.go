package messaging_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/parleychat/parley/messaging"
)

// A send with an idempotency key is safe to retry: the retry gets the
// first message back and sends nothing; the key with another text is
// refused.
func ExampleIdempotency() {
	ctx := context.Background()
	msgs := newServices()
	alice, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})

	var replayed bool
	in := messaging.NewMessage{ConversationID: "team", Text: "Lunch at noon?",
		Idempotency: messaging.Idempotency{Key: "a7e0c2b1-send", Replayed: &replayed}}
	first, _ := msgs.Create(ctx, alice, in)
	retry, _ := msgs.Create(ctx, alice, in) // the answer to the first was lost
	fmt.Println(retry.ID == first.ID, replayed)

	in.Text = "Lunch at one?"
	_, err := msgs.Create(ctx, alice, in)
	var e *messaging.Error
	fmt.Println(errors.As(err, &e) && e.Code == messaging.CodeKeyReused)

	page, _ := msgs.Messages(ctx, alice, "team", messaging.ListOptions{})
	fmt.Println(len(page.Data), "message")
	// Output:
	// true true
	// true
	// 1 message
}

// Every edit keeps the text it replaced, newest first.
func ExampleService_AllRevisions() {
	ctx := context.Background()
	msgs := newServices()
	alice, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	m, _ := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "Lunch at noon?"})
	for _, text := range []string{"Lunch at one?", "Lunch at one, at Rosa's?"} {
		if _, err := msgs.Update(ctx, alice, m.ID, messaging.Update{Text: &text}); err != nil {
			panic(err)
		}
	}
	for r, err := range msgs.AllRevisions(ctx, alice, m.ID, messaging.ListOptions{}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(r.Text)
	}
	// Output:
	// Lunch at one?
	// Lunch at noon?
}
