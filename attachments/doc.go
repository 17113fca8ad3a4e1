// Package attachments is the files half of Parley: files uploaded by
// contacts, filed in conversations and linked to messages, with their bytes
// in any object store.
//
// messaging.New builds the Service (messaging.Service.Files) over the
// storage and a BlobStore; the messaging Service's Policy decides who sees
// the files of a conversation (an unfiled upload is seen by its uploader
// only), and deleting a message deletes its files:
//
//	msgs, err := messaging.New(ctx, store, blobs, &messaging.Options{Policy: myPolicy})
//	files := msgs.Files()
//	a, err := files.Upload(ctx, alice, attachments.Upload{Filename: "notes.txt", ConversationID: "general", Body: r})
//
// Uploads stream from the reader to the store: memory does not grow with
// the file, the size limit (Options.MaxUploadBytes) holds while streaming,
// and the size and SHA-256 are computed on the way. An optional per-caller
// quota (Options.UploadQuota) refuses uploads beyond it with ErrTooLarge
// and Code CodeQuotaExceeded. An upload may carry an idempotency key, as
// messaging's writes do; a retry of a finished upload stores nothing.
//
// File names are cleaned: the base name only, invalid UTF-8 and characters
// that are not shown or that break a line removed, cut to 255 bytes
// keeping the extension; "", "." and ".." are invalid. Renames change the
// row only. Files are served inline only when their type is safe to show
// (Inline, ContentDisposition).
//
// JPEG, PNG, GIF and WebP images get their size (ImageWidth, ImageHeight)
// from their header when stored, and previews on request (Service.Preview:
// made once, kept beside the file under PreviewKey, deleted with it);
// Options.MaxImagePixels and MaxPreviewDecodes bound what decoding costs.
//
// Direct uploads keep the bytes off the server: Reserve checks an upload
// before any byte is sent and returns a signed URL of the blob store where
// it can sign (driver.UploadSigner), the client sends the bytes there (or
// through the host to PutContent), and Complete checks what was stored and
// makes the attachment. Reconcile removes reservations not completed after
// Options.UploadExpiry, with their objects.
//
// A signed URL stays valid until the reservation expires, also after
// Complete, and the attachment keeps the object the URL names (its bytes
// are not copied; reads do not hash them again); so the URL never replaces
// a stored object. On S3 it takes only the reserved bytes (the store
// checks the SHA-256); on Google Cloud Storage and Azure it creates the
// object and cannot overwrite it (storage/blobstore signs the precondition
// that the object does not exist, or the create permission alone). A
// client that sent other bytes there calls Complete, which refuses and
// deletes them, before it sends the bytes again. What the URL can still
// do until it expires is create an object under the key of an attachment
// deleted meanwhile: no row names it, and Reconcile moves it aside.
//
// # Nothing lost, nothing left
//
// A failure at any point leaves nothing, or something Reconcile finishes:
// the object is written before its row, and a deleted row's key stays a
// pending deletion until its object is gone. Keys are made by the server
// under the database's installation id (KeyPrefix + id + "/"), never from
// user input.
//
// Call Claim at start: the first database to use a bucket claims it
// (ClaimKey), and a database that does not own a bucket (another
// database's, a mistyped address, a restore from an old backup) gets
// ErrConflict instead of touching it. Run Reconcile periodically: it
// retries pending deletions, moves aside (to OrphanPrefix) objects under
// its own prefix that no row names after Options.OrphanGrace, deletes them
// after Options.OrphanRetention, and reports rows whose object is missing.
// DESIGN.md (§3) gives the rules in full.
//
// # Events and errors
//
// Uploads, renames and deletes record attachment.created, .updated and
// .deleted events in their transactions (see package events). Every error
// is a *messaging.Error whose Kind classifies it (see package messaging).
//
// A blob backend implements BlobStore (driver.BlobStore): storage/blobstore
// opens any gocloud.dev bucket (local files, S3, GCS, Azure) and
// storage/memstore keeps one in memory; storage/storetest checks them.
package attachments
