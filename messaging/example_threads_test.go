package messaging_test

import (
	"context"
	"fmt"

	"github.com/parleychat/parley/messaging"
)

// A reply names its root with ParentID. Replies stay out of the
// conversation's list and counts; the root carries its thread's counts,
// and each caller has its own unread replies.
func ExampleService_Threads() {
	ctx := context.Background()
	msgs := newServices()
	alice, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	bob, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "bob"})
	root, _ := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "Lunch at noon?"})
	_, _ = msgs.Create(ctx, bob, messaging.NewMessage{ConversationID: "team", Text: "Yes", ParentID: root.ID})
	last, err := msgs.Create(ctx, bob, messaging.NewMessage{ConversationID: "team", Text: "Where?", ParentID: root.ID})
	if err != nil {
		panic(err)
	}

	c, _ := msgs.Conversation(ctx, bob, "team")
	fmt.Println("messages in the conversation:", c.MessageCount)
	page, _ := msgs.Threads(ctx, alice, messaging.ListOptions{})
	for _, t := range page.Data {
		fmt.Printf("%q: %d replies, %d unread\n", t.Root.Text, t.ReplyCount, t.UnreadCount)
	}
	t, _ := msgs.MarkThreadRead(ctx, alice, root.ID, last.ID)
	fmt.Println("unread after reading:", t.UnreadCount)
	for m, err := range msgs.AllReplies(ctx, alice, root.ID, messaging.ListOptions{}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(m.Text)
	}
	// Output:
	// messages in the conversation: 1
	// "Lunch at noon?": 2 replies, 2 unread
	// unread after reading: 0
	// Where?
	// Yes
}

// Deleting a root that has replies leaves its tombstone, so that the
// thread stays readable; it goes with its last reply.
func ExampleService_Delete_threadRoot() {
	ctx := context.Background()
	msgs := newServices()
	alice, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	root, _ := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "Draft"})
	reply, _ := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "Notes", ParentID: root.ID})

	_ = msgs.Delete(ctx, alice, root.ID)
	m, _ := msgs.Get(ctx, alice, root.ID)
	fmt.Println(m.Deleted, m.ReplyCount, m.Text == "")
	_ = msgs.Delete(ctx, alice, reply.ID)
	_, err := msgs.Get(ctx, alice, root.ID)
	fmt.Println(messaging.KindOf(err) == messaging.ErrNotFound)
	// Output:
	// true 1 true
	// true
}
