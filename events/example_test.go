package events_test

import (
	"context"
	"fmt"

	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// A subscription follows the changes of a conversation live: each event
// carries the message as it is after the change.
func Example() {
	ctx := context.Background()
	store := memstore.New() // or sqlstore.Open(ctx, dsn, nil)
	msgs, err := messaging.New(ctx, store, memstore.NewBlobStore(), nil)
	if err != nil {
		panic(err)
	}
	defer msgs.Close()
	feed := msgs.Events() // every write records its events

	alice, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	bob, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "bob"})
	sub, err := feed.Subscribe(ctx, bob, events.SubscribeOptions{ConversationID: "team"})
	if err != nil {
		panic(err)
	}
	defer sub.Close()

	m, _ := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "Ship it?"})
	_, _ = msgs.Update(ctx, bob, m.ID, messaging.Update{React: []string{"ship"}})
	_ = msgs.Delete(ctx, alice, m.ID)

	for range 3 {
		e, err := sub.Next(ctx)
		if err != nil {
			panic(err)
		}
		switch {
		case e.Message != nil:
			fmt.Println(e.Type, e.Message.Text, e.Message.Reactions)
		default:
			fmt.Println(e.Type, e.DeletedID == m.ID)
		}
	}
	// Output:
	// message.created Ship it? []
	// message.updated Ship it? [{ship [bob] 1}]
	// message.deleted true
}

// A handler runs after each commit, at least once per event, in order; its
// failure never fails the write (it is retried).
func ExampleFeed_Handle() {
	ctx := context.Background()
	store := memstore.New()
	msgs, err := messaging.New(ctx, store, memstore.NewBlobStore(), nil)
	if err != nil {
		panic(err)
	}
	defer msgs.Close()
	feed := msgs.Events()

	notified := make(chan string)
	err = feed.Handle(ctx, "notify", func(ctx context.Context, e messaging.Event) error {
		if e.Type == messaging.EventMessageCreated {
			notified <- e.Message.Contact.Username + " wrote in " + e.ConversationID + ": " + e.Message.Text
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	alice, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	_, _ = msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "Standup in 5"})
	fmt.Println(<-notified)
	// Output:
	// alice wrote in team: Standup in 5
}
