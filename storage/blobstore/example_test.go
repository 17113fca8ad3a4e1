package blobstore_test

import (
	"context"
	"fmt"
	"log"
	"net/url"
	"os"
	"path/filepath"

	_ "gocloud.dev/blob/fileblob" // file:// buckets

	"github.com/parleychat/parley/storage/blobstore"
)

// ExampleOpen opens a folder as the bucket of attachments' bytes and
// closes it. S3, Google Cloud Storage and Azure are opened the same way,
// with their URLs and driver packages (see the package documentation).
func ExampleOpen() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "parley-files")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// file:///abs/path; create_dir=true creates the folder if it is missing.
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(dir), RawQuery: "create_dir=true"}
	files, err := blobstore.Open(ctx, u.String())
	if err != nil {
		log.Fatal(err)
	}
	defer files.Close()
	// files is the attachments.BlobStore that attachments.New takes.

	ok, err := files.Bucket().IsAccessible(ctx)
	fmt.Println("accessible:", ok, err)

	// Output:
	// accessible: true <nil>
}
