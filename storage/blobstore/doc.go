// Package blobstore keeps the bytes of attachments in a gocloud.dev
// bucket: a local folder, Amazon S3 or an S3-compatible server (MinIO, R2,
// …), Google Cloud Storage, Azure Blob Storage, or any other bucket gocloud
// supports, chosen by a URL.
//
// The package links no gocloud driver. Import the driver package of each
// URL scheme the program opens, for its effect, then open the bucket and
// give it to messaging.New:
//
//	import _ "gocloud.dev/blob/fileblob"
//
//	files, err := blobstore.Open(ctx, "file:///var/lib/parley/files")
//	if err != nil { … }
//	defer files.Close()
//	msgs, err := messaging.New(ctx, store, files, nil) // msgs.Files() keeps its files there
//
// A scheme whose driver is not imported is an error that names the package
// to import. New wraps a *blob.Bucket the program opened itself; Close
// closes the bucket either way.
//
// # Backends
//
//   - file:///dir (gocloud.dev/blob/fileblob): a local folder; add
//     create_dir=true to create it, and no_tmp_dir=true when os.TempDir is
//     on another file system.
//   - s3://bucket?region=… (storage/blobstore/s3): Amazon S3, or an
//     S3-compatible server with endpoint=…&use_path_style=true.
//   - gs://bucket (storage/blobstore/gcs): Google Cloud Storage.
//   - azblob://container (storage/blobstore/azure): Azure Blob Storage.
//   - mem:// (gocloud.dev/blob/memblob): memory, for tests.
//   - other gocloud drivers, imported the same way.
//
// Parley's s3, gcs and azure packages register gocloud's drivers and make
// the bucket's signed URLs (httpadapter.Options.SignedURLExpiry) serve a
// file with its name and type; a folder or memory bucket opened by URL
// cannot sign, and files are then served through the API. Credentials come
// from each SDK's usual places.
//
// One bucket belongs to one database: attachments.Service.Claim, at
// start, refuses a bucket that another database claimed. How objects are
// keyed, claimed, checked and reconciled is in DESIGN.md at the
// repository root.
//
// # Errors
//
// A missing object gives an error matching messaging.ErrNotFound; a
// bucket that cannot sign, messaging.ErrUnimplemented (SignPut:
// ErrCannotSign too); a bucket that cannot be reached (a refused or reset
// connection, a DNS failure, a timeout, a 502, 503 or 504), one matching
// messaging.ErrUnavailable, which the HTTP adapter answers with 503 and
// Retry-After. Other errors are the driver's, wrapped, with their cause.
package blobstore
