// Package storecopy copies a whole Parley from one store and bucket to
// another: from SQLite and a local folder to PostgreSQL and S3, from any
// backend to any other.
//
//	report, err := storecopy.Copy(ctx, pgStore, s3Files, sqliteStore, localFiles, nil)
//
// Copy reads one consistent snapshot of the source (storecopy.Source) and
// writes every row of it to the destination (storecopy.Sink) in batches,
// ids, times and order kept, so that every answer of the API, cursors
// included, is the same on both sides (file URLs aside, when the host
// changes). Then it copies the file of every attachment row, and verifies
// the whole: every row field by field and every file by its SHA-256.
// Verify does the verification alone.
//
// # What is copied
//
// Contacts; conversations, with each member's membership, read position
// and counters; messages with their read state, reactions (in their
// order) and revisions; attachment rows and their files; the idempotency
// records still in force. Not the installation id: the copy gets one of
// its own (CopyID), and a handover object in its bucket hands it the
// source's files, whose keys stay as they are (see Copy: exclusive into
// another bucket, shared into the source's own). Not copied either: the events of the outbox and
// the positions of their handlers (the copy starts a new feed: clients of
// GET /v1/events start again from its start), the pending deletions of
// the source's bucket (housekeeping of that bucket), and expired
// idempotency records.
//
// # Consistency, resuming, refusals
//
// A source that keeps serving while it is copied gives a coherent copy of
// one moment: sqlstore reads it in one REPEATABLE READ transaction
// (PostgreSQL, MySQL) or read transaction (SQLite), memstore copies it
// under its lock. Files are immutable by key, so the files of the
// snapshot's rows are the snapshot's. Writes made after the snapshot are
// not in the copy: stop writes (or the server) before the copy that you
// switch over after.
//
// A copy is resumable and idempotent: rows and files already in the
// destination are skipped (a file is recopied unless its SHA-256 is its
// row's), so a copy killed at any point finishes when run again, and a
// copy run again on a finished one changes nothing. A run resumed over a
// source written to in between copies the rows of its own snapshot that
// are missing; rows changed or deleted in between stay as first copied,
// and the verification names them.
//
// Copy refuses a source whose installation id is none that package
// attachments takes, with an error matching messaging.ErrInvalid, before
// it writes anything: the copy names the source's files and its handover
// by that id. It refuses, with an error matching messaging.ErrConflict
// that says what the destination holds, a destination database holding
// rows of another store (not a copy of the source: see IsCopyOf), whether of the
// kinds it copies or not (events, handler positions, upload reservations,
// pending deletions: see Sink.Uncopied), and a bucket claimed by
// another database, or unclaimed and holding files none of which is the
// source's. The source's own bucket is a fine destination: a copy of the
// database only finds every file in place. A copy never claims a bucket
// that may be the source's: one unclaimed and without files, when the
// source's is so too, cannot be told from it (a source without files
// never claimed its bucket), so the copy takes it for the source's and
// shares it (see Copy). It never writes to the source's
// database. Into the source's own bucket it writes one object, the
// handover (see Copy), before the first row, so that a live source deletes
// no file that the copy's rows name; a copy that fails removes it, and the
// source deletes its own files again. (Checking every row before writing
// the handover would leave those files to the source for as long as the
// rows take to read.)
//
// # Errors
//
// A verification that finds differences returns a *MismatchError,
// matching ErrMismatch, that names up to 20 of them. Other errors are
// those of the stores and buckets, wrapped with what was being done.
//
// # Backends
//
// The Drivers of sqlstore.Store (SQLite, PostgreSQL, MySQL/MariaDB) and
// memstore.Store implement Source and Sink, optional interfaces beside
// driver.Store that Copy finds by type assertion; any attachments.BlobStore (storage/blobstore
// over any gocloud.dev bucket, memstore.BlobStore) holds the files; a
// destination bucket that is an driver.Lister is checked for files
// of another store.
package storecopy
