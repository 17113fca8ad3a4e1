package attachments_test

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/storage/memstore"
)

// Upload streams a file into the blob store; Open reads it back; Rename
// changes the name only.
func ExampleService_Upload() {
	ctx := context.Background()
	files := attachments.New(memstore.New(), memstore.NewBlobStore(), nil)

	a, err := files.Upload(ctx, "ctc_alice", attachments.Upload{
		Filename:       "../../etc/report.csv", // cleaned to its base name
		ConversationID: "team",
		Body:           strings.NewReader("q,amount\n1,100\n"),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(a.Filename, a.FileType, a.FileSize)

	a, err = files.Rename(ctx, "ctc_alice", a.ID, "q1.csv")
	if err != nil {
		panic(err)
	}
	_, r, err := files.Open(ctx, "ctc_bob", a.ID) // bob sees the conversation
	if err != nil {
		panic(err)
	}
	defer r.Close()
	b, _ := io.ReadAll(r)
	fmt.Printf("%s: %q\n", a.Filename, b)
	// Output:
	// report.csv text/plain; charset=utf-8 15
	// q1.csv: "q,amount\n1,100\n"
}
