package httpadapter_test

// The drivers of the DSNs and bucket URLs the tests open, imported as a
// host imports them.
import (
	_ "gocloud.dev/blob/fileblob" // file:// buckets
	_ "gocloud.dev/blob/memblob"  // mem:// buckets

	_ "github.com/parleychat/parley/storage/blobstore/s3"      // s3:// buckets
	_ "github.com/parleychat/parley/storage/sqlstore/mysql"    // mysql://… databases
	_ "github.com/parleychat/parley/storage/sqlstore/postgres" // postgres://… databases
	_ "github.com/parleychat/parley/storage/sqlstore/sqlite"   // SQLite files
)
