// Package memstore holds in-memory fakes of Parley's storage, for unit
// tests of code that uses messaging and attachments.
//
// New returns a Store, which implements driver.MessageStore,
// driver.AttachmentStore and driver.EventStore (its writes record their
// events under the Store's lock, so Seq order is the order of the writes);
// NewBlobStore returns a BlobStore, which implements
// attachments.BlobStore and driver.Lister. Both are safe for concurrent
// use, keep everything in memory, and pass the storetest conformance suite,
// so they behave as the SQL and blob backends do:
//
//	store, blobs := memstore.New(), memstore.NewBlobStore()
//	msgs := messaging.New(store, nil)
//	files := attachments.New(store, blobs, msgs, nil)
//
// Values returned are copies: changing them changes nothing stored. Times
// are kept in UTC, truncated to the microsecond, as a SQL backend keeps them.
//
// A Store is also a storecopy.Source and storecopy.Sink: storage/storecopy
// copies a Store to a SQL database and back (its Snapshot is a copy of
// every row made under its lock).
//
// # Errors
//
// Store and BlobStore return bare kinds (messaging.ErrNotFound,
// ErrConflict, ErrInvalid) where the interfaces require them, and ctx.Err()
// when ctx is done.
package memstore
