package attachments

import "github.com/parleychat/parley/messaging/driver"

// BlobStore stores the bytes of attachments under keys that the Service
// makes: storage/blobstore opens one over any gocloud.dev bucket, and
// storage/memstore keeps one in memory. It is driver.BlobStore, whose
// documentation gives the contract a blob backend implements.
type BlobStore = driver.BlobStore
