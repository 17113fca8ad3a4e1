package attachments_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"strings"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// Upload streams a file into the blob store; Open reads it back; Rename
// changes the name only.
func ExampleService_Upload() {
	ctx := context.Background()
	store := memstore.New()
	msgs, err := messaging.New(ctx, store, memstore.NewBlobStore(), nil)
	if err != nil {
		panic(err)
	}
	defer msgs.Close()
	files := msgs.Files()

	a, err := files.Upload(ctx, messaging.Contact{ID: "ctc_alice"}, attachments.Upload{
		Filename:       "../../etc/report.csv", // cleaned to its base name
		ConversationID: "team",
		Body:           strings.NewReader("q,amount\n1,100\n"),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(a.Filename, a.FileType, a.FileSize)

	a, err = files.Rename(ctx, messaging.Contact{ID: "ctc_alice"}, a.ID, "q1.csv")
	if err != nil {
		panic(err)
	}
	_, r, err := files.Open(ctx, messaging.Contact{ID: "ctc_bob"}, a.ID) // bob sees the conversation
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

// Reserve, send the bytes, Complete: an upload whose bytes skip the host.
// Where the blob store signs URLs (S3, GCS, Azure), the client PUTs the
// bytes to Reservation.URL with its Method and Headers; elsewhere (a
// folder, memory) URL is "" and the bytes go through the host, PutContent.
// Complete checks the size, SHA-256 and type of what arrived.
func ExampleService_Reserve() {
	ctx := context.Background()
	msgs, err := messaging.New(ctx, memstore.New(), memstore.NewBlobStore(), nil)
	if err != nil {
		panic(err)
	}
	defer msgs.Close()
	files, alice := msgs.Files(), messaging.Contact{ID: "ctc_alice"}

	data := []byte("minutes of the meeting\n")
	sum := sha256.Sum256(data)
	r, err := files.Reserve(ctx, alice, attachments.NewUpload{
		Filename: "minutes.txt", FileSize: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), ConversationID: "team",
	})
	if err != nil {
		panic(err)
	}
	if r.URL == "" { // an in-memory store signs no URL: through the host
		if _, err := files.PutContent(ctx, alice, r.ID, bytes.NewReader(data)); err != nil {
			panic(err)
		}
	}
	a, err := files.Complete(ctx, alice, r.ID, messaging.Idempotency{})
	if err != nil {
		panic(err)
	}
	fmt.Println(a.Filename, a.FileSize, a.FileType)
	// Output: minutes.txt 23 text/plain; charset=utf-8
}

// Upload a file, then link it to a message as the message is sent; or
// upload straight into a message of the caller's with MessageID.
func ExampleService_Upload_link() {
	ctx := context.Background()
	store := memstore.New()
	msgs, err := messaging.New(ctx, store, memstore.NewBlobStore(), nil)
	if err != nil {
		panic(err)
	}
	defer msgs.Close()
	files := msgs.Files()
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	if err != nil {
		panic(err)
	}

	notes, err := files.Upload(ctx, alice, attachments.Upload{Filename: "notes.txt", ConversationID: "team", Body: strings.NewReader("meeting notes\n")})
	if err != nil {
		panic(err)
	}
	m, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "Notes attached", Attachments: []string{notes.ID}})
	if err != nil {
		panic(err)
	}
	slides, err := files.Upload(ctx, alice, attachments.Upload{Filename: "slides.pdf", MessageID: m.ID, Body: strings.NewReader("%PDF-1.7\n")})
	if err != nil {
		panic(err)
	}
	fmt.Println(slides.MessageID == m.ID, slides.ConversationID, slides.FileType)

	m, err = msgs.Get(ctx, alice, m.ID)
	if err != nil {
		panic(err)
	}
	for _, a := range m.Attachments {
		fmt.Println(a.Filename, a.FileSize, a.MessageID == m.ID)
	}
	// Output:
	// true team application/pdf
	// notes.txt 14 true
	// slides.pdf 9 true
}

// Images get their size at upload, and previews on request: made once,
// kept beside the file, a JPEG for an opaque image.
func ExampleService_Preview() {
	ctx := context.Background()
	msgs, err := messaging.New(ctx, memstore.New(), memstore.NewBlobStore(), nil)
	if err != nil {
		panic(err)
	}
	defer msgs.Close()
	files := msgs.Files()
	alice := messaging.Contact{ID: "ctc_alice"}

	photo := image.NewGray(image.Rect(0, 0, 1600, 1200))
	var b bytes.Buffer
	if err := jpeg.Encode(&b, photo, nil); err != nil {
		panic(err)
	}
	a, err := files.Upload(ctx, alice, attachments.Upload{Filename: "photo.jpg", ConversationID: "team", Body: &b})
	if err != nil {
		panic(err)
	}
	fmt.Println(a.FileType, a.ImageWidth, a.ImageHeight)

	_, p, err := files.Preview(ctx, alice, a.ID, attachments.PreviewSmall)
	if err != nil {
		panic(err)
	}
	defer p.Body.Close()
	c, err := jpeg.DecodeConfig(p.Body)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Type, c.Width, c.Height)
	// Output:
	// image/jpeg 1600 1200
	// image/jpeg 256 192
}
