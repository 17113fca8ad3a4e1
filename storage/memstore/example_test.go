package memstore_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// Example wires the services over in-memory storage, as a unit test of
// code that uses them would: a contact sends a message with a file, another
// reacts, and the conversation is listed.
func Example() {
	ctx := context.Background()

	store, blobs := memstore.New(), memstore.NewBlobStore()
	msgs, err := messaging.New(ctx, store, blobs, nil)
	if err != nil {
		panic(err)
	}
	defer msgs.Close()
	files := msgs.Files()

	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	if err != nil {
		panic(err)
	}
	bob, err := msgs.SaveContact(ctx, messaging.Contact{Username: "bob"})
	if err != nil {
		panic(err)
	}

	notes, err := files.Upload(ctx, alice, attachments.Upload{
		Filename:       "notes.txt",
		ConversationID: "team",
		Body:           strings.NewReader("bring snacks\n"),
	})
	if err != nil {
		panic(err)
	}
	m, err := msgs.Create(ctx, alice, messaging.NewMessage{
		ConversationID: "team",
		Text:           "Meeting at noon",
		Attachments:    []string{notes.ID},
	})
	if err != nil {
		panic(err)
	}

	_, err = msgs.React(ctx, bob, m.ID, "👍")
	if err != nil {
		panic(err)
	}

	page, err := msgs.Messages(ctx, bob, "team", messaging.ListOptions{})
	if err != nil {
		panic(err)
	}
	for _, m := range page.Data {
		fmt.Printf("%s: %s\n", m.Contact.Username, m.Text)
		for _, r := range m.Reactions {
			fmt.Printf("  %s %v\n", r.Name, r.Reactors)
		}
		for _, a := range m.Attachments {
			fmt.Printf("  %s (%s, %d bytes)\n", a.Filename, a.FileType, a.FileSize)
		}
	}
	fmt.Println("more:", page.HasMore)
	// Output:
	// alice: Meeting at noon
	//   👍 [bob]
	//   notes.txt (text/plain; charset=utf-8, 13 bytes)
	// more: false
}
