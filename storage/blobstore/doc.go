// Package blobstore is an attachments.BlobStore over a gocloud.dev
// *blob.Bucket: S3 and S3-compatible servers (MinIO, R2, …), a local
// directory, or memory, chosen by a bucket URL.
//
//	files, err := blobstore.Open(ctx, "s3://my-bucket?region=eu-west-1")
//	if err != nil { … }
//	defer files.Close()
//	svc := attachments.New(repo, files, messaging.New(repo, nil), nil)
//
// The Store is also an attachments.Lister, so that
// attachments.Service.Reconcile can find orphaned objects, and an
// attachments.URLSigner, for hosts that serve files from signed URLs.
//
// # Backends
//
// The package links no gocloud driver: the program imports those whose
// URLs it opens, which register their schemes (gocloud.dev/blob/fileblob,
// memblob, gcsblob, azureblob; storage/blobstore/s3 for S3), or builds any
// *blob.Bucket itself and passes it to New.
//
//   - s3://bucket?region=…: Amazon S3, credentials from the usual AWS
//     sources (environment, shared files, instance role). For an
//     S3-compatible server add endpoint=http://host:port and
//     use_path_style=true, for example
//     s3://parley?endpoint=http://127.0.0.1:9000&use_path_style=true&region=us-east-1.
//   - file:///var/lib/parley/files: a local directory. gocloud writes each
//     object to a temporary file and renames it on success, so a reader
//     never sees half an object. The temporary file is made in os.TempDir
//     by default; if that is on another file system than the bucket the
//     rename fails, so then add no_tmp_dir=true: temporary files are then
//     made next to the objects (named key.<hex>.tmp). An aborted write
//     removes its temporary file; one stranded by a crash shows up in List
//     under KeyPrefix and Reconcile removes it once it is older than
//     OrphanGrace. Add create_dir=true to create the directory.
//   - mem://: memory, for tests.
//
// # Abort semantics
//
// Put streams the reader into a blob.Writer. When the reader fails or the
// context ends before io.EOF, Put cancels the writer's context before it
// closes the writer, which is how gocloud aborts a write: fileblob removes
// its temporary file, memblob drops its buffer and s3blob fails the upload
// (a multipart upload is aborted), so no object is left under the key.
//
// # Memory
//
// Put streams: a directory bucket holds only a copy buffer per upload. On
// S3 the AWS transfer manager reads up to 16 MiB before it chooses between
// a single and a multipart upload, then sends 5 MiB parts two at a time, so
// an upload holds about 32 MiB at most, whatever the file's size.
//
// # Signed URLs
//
// SignedURL makes a GET URL of an object. On S3 the URL carries
// response-content-type and response-content-disposition, so the file is
// served with its current type and attachments.ContentDisposition (its
// current name, inline only for the types attachments.Inline accepts). memblob cannot sign: SignedURL
// returns an error matching messaging.ErrUnimplemented. fileblob signs
// only when the bucket has a URLSigner:
//
//	base, _ := url.Parse("https://files.example.com/signed")
//	b, err := fileblob.OpenBucket("/var/lib/parley/files", &fileblob.Options{
//		URLSigner: fileblob.NewURLSignerHMAC(base, secretKey),
//	})
//	files := blobstore.New(b)
//
// (or the URL form file:///dir?base_url=…&secret_key_path=…). The host
// then serves that base URL itself: URLSignerHMAC.KeyFromURL checks the
// signature and expiry and returns the key, whose bytes Store.Open reads.
// fileblob URLs carry no file name or type; the host's handler sets those
// headers (Content-Disposition: attachments.ContentDisposition).
//
// # Errors
//
// Open returns an error matching messaging.ErrNotFound for a missing
// object; SignedURL one matching messaging.ErrUnimplemented when the
// bucket cannot sign. A bucket that cannot be reached (a refused or reset
// connection, a DNS failure, a timeout or passed deadline, the server
// answering 502, 503 or 504, the gocloud codes DeadlineExceeded and
// ResourceExhausted) gives errors matching messaging.ErrUnavailable, which
// the HTTP adapter answers with 503 and Retry-After. A canceled context is
// not unavailability, and neither is an error of the reader Put copies
// from: those come back as they are. Other errors are the driver's,
// wrapped; every error keeps its cause.
package blobstore
