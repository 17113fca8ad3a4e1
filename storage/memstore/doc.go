// Package memstore keeps Parley in memory, for the unit tests of code that
// uses messaging, attachments and events: a Store for rows and a BlobStore
// for bytes, built on as the SQL and blob stores are.
//
//	store, blobs := memstore.New(), memstore.NewBlobStore()
//	msgs, err := messaging.New(ctx, store, blobs, nil)
//
// Both are safe for concurrent use and pass the storetest conformance
// suite, so they behave as the SQL and blob backends do: a change and its
// events happen together (under the Store's lock), times are kept in UTC
// truncated to the microsecond, and values returned are copies. Nothing
// is kept after the process ends; storage/storecopy copies a Store to a
// SQL database and back.
//
// For tests over HTTP, parleytest serves /v1 over a memstore.
//
// # Errors
//
// The errors are those of the SQL store: values matching
// messaging.ErrNotFound, ErrConflict or ErrInvalid, and ctx.Err() when ctx
// is done.
package memstore
