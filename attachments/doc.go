// Package attachments is the files half of Parley: files uploaded by
// contacts, filed in conversations and linked to messages, with their bytes
// in any object store.
//
// A Service holds the rules; the storage stores the rows and a BlobStore
// the bytes. messaging.New builds the Service with a messaging Service,
// whose Policy decides who sees the files of a conversation (an unfiled
// upload is seen by its uploader only), whose page size limit bounds the
// lists, and which removes the files of the messages it deletes:
//
//	msgs, err := messaging.New(ctx, store, blobs, &messaging.Options{Policy: myPolicy})
//	files := msgs.Files()
//	a, err := files.Upload(ctx, alice, attachments.Upload{Filename: "notes.txt", ConversationID: "general", Body: r})
//
// Attachment values are messaging.Attachment: a message carries those
// linked to it. Uploads stream from the reader to the store: memory does not
// grow with the file's size, the size limit is enforced while streaming, and
// the size and SHA-256 are computed on the way.
//
// # No orphans
//
// Writes are ordered so that a failure at any point leaves nothing, or
// something Reconcile finishes:
//
//   - Upload writes the object first (its key is made by the server, never
//     from user input: "attachments/<installation id>/<id>"), then the row.
//     A failed object write leaves nothing. Once the object is stored, the
//     row (and the link to a message) are written whatever the caller's
//     context does, within a deadline of their own, so that a client that
//     hangs up cannot cut them half-way. A failed row insert removes the
//     object only when it is certain that no row names it (the repository
//     refused, or the row is not there when asked again); otherwise, or if
//     that removal fails, the object is an orphan that Reconcile moves
//     aside once it is older than Options.OrphanGrace.
//   - Delete removes the row and records the key as a pending deletion in
//     one transaction, then removes the object and forgets the key. If the
//     object cannot be removed, the pending deletion stays, and Reconcile
//     retries it.
//
// Run Reconcile periodically (the example server does). It also reports
// the rows whose object is missing (ReconcileReport.Missing).
//
// # Which files are whose
//
// A bucket can outlive its database, or be pointed at by the wrong one: two
// databases over one folder, a mistyped database address that makes a new
// empty one, a database restored from a backup that knows fewer files than
// the bucket holds. Reconcile therefore removes an object only when it can
// prove the object is its database's and unreferenced, and even then moves
// it aside first:
//
//   - Each database has an installation id (Installation, made by the
//     schema migration), and every key the Service makes starts with
//     KeyPrefix + that id + "/". Reconcile only ever moves objects under its
//     own prefix.
//   - The first database that uses a bucket claims it: the object ClaimKey
//     names its installation id. Claim (call it at start; the example server
//     does) fails with ErrConflict over a bucket claimed by another
//     database, or over an unclaimed bucket full of files the database does
//     not know; Reconcile then leaves every object without a row alone.
//   - The claim carries the database's reconcile epoch, which each
//     Reconcile advances in both. A database whose epoch is behind the
//     claim's was restored from a backup: Reconcile reports it (ErrConflict)
//     and leaves objects without a row alone, while serving goes on.
//   - An orphan is moved to OrphanPrefix + its key, and deleted only after
//     Options.OrphanRetention (30 days by default), so a mistake is undone
//     by moving it back.
//   - Objects from before installation ids ("attachments/<id>") are never
//     moved: they are counted (ReconcileReport.Unowned).
//
// An upload with an idempotency key (Upload.Idempotency; see Retries in
// package messaging) claims its key before it reads the file. A retry of an
// upload that is done reads its file only to hash it (the fingerprint is
// the fields and the file's SHA-256) and stores no object; a retry while
// the first is under way is refused before its file is read. An upload
// that loses its key to a retry on another instance (after the lock
// timeout) removes its own object, never the retry's. An upload to a
// message (Upload.MessageID) stores its row linked, in one transaction with
// the link and the key's record.
//
// # Events
//
// Uploads, renames and deletes record attachment.created, attachment.updated and
// attachment.deleted events (and message.updated for the message a
// deleted attachment leaves) in their transactions; see package events.
// The events of an attachment in no conversation are its uploader's only.
//
// # File names
//
// A file name is the base name of the uploaded name (no path), with invalid
// UTF-8 removed, and the characters that are not shown or that break a
// line (control and format characters such as bidirectional controls, soft
// hyphens, zero-width spaces and tag characters; U+2028 and U+2029; the
// zero-width joiner and non-joiner stay), trimmed, and cut to at most 255
// bytes on a character boundary, keeping its extension (a name of 300 "A"
// and ".txt" keeps ".txt"). A name that is empty after cleaning, "." or
// ".." is invalid. Renames follow the same rules, change the row only, and
// never copy the bytes.
//
// # Errors
//
// Every error the Service returns is a *messaging.Error, whose Kind
// (messaging.KindOf, or errors.Is with messaging.ErrNotFound,
// messaging.ErrTooLarge, …) classifies it and whose Message is written for
// people; see package messaging. An upload beyond Options.UploadQuota is ErrTooLarge
// with Code CodeQuotaExceeded, told apart from one beyond MaxUploadBytes.
//
// # Backends
//
// Repository, AttachmentQuery, BlobStore, Lister, URLSigner, Object,
// Installation and KeyLister are the contract of a storage backend;
// applications never need them.
// storage/sqlstore and storage/memstore implement Repository;
// storage/blobstore (any gocloud.dev bucket: local files, S3, GCS, Azure) and
// storage/memstore implement BlobStore. storage/storetest checks both.
package attachments
