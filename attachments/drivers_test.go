package attachments_test

// The drivers of the bucket URLs the tests open, imported as a host
// imports them.
import (
	_ "gocloud.dev/blob/fileblob" // file:// buckets
	_ "gocloud.dev/blob/memblob"  // mem:// buckets

	_ "github.com/parleychat/parley/storage/blobstore/s3" // s3:// buckets
)
