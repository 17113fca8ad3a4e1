package blobstore_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	_ "gocloud.dev/blob/fileblob" // file:// bucket URLs

	"github.com/parleychat/parley/storage/blobstore"
)

// ExampleOpen opens a local directory as a bucket, stores a file and reads
// it back. S3, GCS and Azure buckets are opened the same way, with their
// URLs and driver packages (see the package documentation).
func ExampleOpen() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "parley-files")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	files, err := blobstore.Open(ctx, "file://"+dir)
	if err != nil {
		log.Fatal(err)
	}
	defer files.Close()

	// attachments.Service does this on an upload, under a key of its own.
	if err := files.Put(ctx, "attachments/example", "text/plain", strings.NewReader("hello")); err != nil {
		log.Fatal(err)
	}
	r, err := files.Open(ctx, "attachments/example")
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(b))

	// Output:
	// hello
}
