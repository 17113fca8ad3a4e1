// Package driver is the contract between Parley's services and a storage
// backend, as gocloud.dev/blob/driver is for buckets: what a backend
// implements, and the plain values that cross it.
//
// Hosts do not use this package. They open a backend (storage/sqlstore,
// storage/memstore, or their own) and hand it to messaging.New, which
// reaches the contract through the backend's Driver method; every rule of
// the API (who may see or change what, limits, idempotency) is the
// Service's, so a backend only stores and reads. The split keeps what a
// host calls (messaging, attachments, events) apart from what a backend
// implements (this package), and lets the value types live in one leaf
// package that every other package can import without cycles; the host
// packages re-export the values they show as type aliases
// (messaging.Message is driver.Message).
//
// A backend implements Store: MessageStore (with IdempotencyStore and
// RevisionStore), AttachmentStore and EventStore over one storage, so that
// a change, its events and its idempotency record commit together. It may
// implement the optional Installation and KeyLister. A blob backend
// implements BlobStore, and optionally Lister and URLSigner.
//
// # Lists
//
// Every list is read by keyset, never by offset, so that a deep page costs
// what the first does: a query is a Window (Limit, and the Cursor of the
// item the page begins after or ends before), a Scope for the lists that
// the caller's access narrows (every conversation, or some, or those of a
// member), and only what narrows that one list beyond them (a message, a
// reaction, a viewer). One shape for every list means one rule for a
// backend to get right, which storetest checks alike on each list; a
// Cursor with no Time names its item by id, for the lists whose position
// the backend finds cheaper itself (see Cursor). The event outbox is a log
// ordered by Seq and keeps a window of its own (EventQuery).
//
// Package storage/storetest checks every obligation of the contract: run
// its suites against a new backend (see its package documentation).
package driver

// Store is what a storage backend implements: every contract of this
// package over one storage. GetAttachment is part of both MessageStore and
// AttachmentStore, with one meaning.
type Store interface {
	MessageStore
	AttachmentStore
	EventStore
}
