// Package blobstore is an attachments.BlobStore over a gocloud.dev
// *blob.Bucket: a local directory, S3 and S3-compatible servers (MinIO,
// R2, …), or any other bucket gocloud supports, chosen by a bucket URL.
//
// The package links no gocloud driver. A program imports the driver
// packages whose URL schemes it opens, which register them with gocloud,
// then opens the bucket:
//
//	import _ "gocloud.dev/blob/fileblob"
//
//	files, err := blobstore.Open(ctx, "file:///var/lib/parley/files")
//	if err != nil { … }
//	defer files.Close()
//	svc := attachments.New(repo, files, messaging.New(repo, nil), nil)
//
// New wraps a *blob.Bucket the program opened itself. The Store is also
// an driver.Lister, so that attachments.Service.Reconcile can find
// orphaned objects, and an driver.URLSigner, for hosts that serve
// files from signed URLs.
//
// # Backends
//
//   - file:///dir (gocloud.dev/blob/fileblob): a local directory. Each
//     object is written to a temporary file, renamed on success; add
//     no_tmp_dir=true when os.TempDir is on another file system (one a
//     crash strands is then moved aside by Reconcile), and create_dir=true to
//     create the directory.
//   - s3://bucket?region=… (storage/blobstore/s3, which imports gocloud's
//     s3blob): Amazon S3 or an S3-compatible server; its signed URLs name
//     the file.
//   - gs://bucket (storage/blobstore/gcs, which imports gocloud's gcsblob):
//     Google Cloud Storage; its signed URLs name the file.
//   - azblob://container (storage/blobstore/azure, which imports gocloud's
//     azureblob): Azure Blob Storage; its signed URLs serve the disposition
//     stored with the object (inline or attachment, without the name).
//   - mem:// (gocloud.dev/blob/memblob): memory, for tests.
//   - other gocloud drivers, imported the same way.
//
// # Uploads straight to the bucket
//
// SignPut returns a URL of the bucket to which a client sends an object's
// bytes itself (a PUT, with the headers it lists), so that they never pass
// through the server; Stat (a HEAD), ReadHead (the first bytes, to sniff
// the type) and SHA256 (the digest of the stored bytes, read once) then
// check what was stored. S3 and S3-compatible servers check the SHA-256
// themselves (it is signed into the URL, and they refuse other bytes);
// Google Cloud Storage and Azure do not, so there SHA256 is the check. A
// directory or memory bucket cannot sign: SignPut says so with
// ErrCannotSign, and the server takes the bytes itself (Put).
//
// Every object is stored with a Content-Disposition of its type alone
// (attachments.ContentDisposition with no name): a bucket that serves it
// by itself never shows inline a type a browser could run.
//
// # Errors
//
// Open, Stat, ReadHead and SHA256 return an error matching
// messaging.ErrNotFound for a missing object; SignedURL one matching
// messaging.ErrUnimplemented, and SignPut one matching ErrCannotSign (and
// messaging.ErrUnimplemented), when the bucket cannot sign. A bucket that cannot be reached (a refused or reset
// connection, a DNS failure, a timeout or passed deadline, the server
// answering 502, 503 or 504) gives errors matching
// messaging.ErrUnavailable, which the HTTP adapter answers with 503 and
// Retry-After. A canceled context and an error of the reader Put copies
// from come back as they are. Other errors are the driver's, wrapped;
// every error keeps its cause.
package blobstore
