// Package storage is the home of Parley's storage backends.
//
// Application code uses messaging and attachments; this is for backends.
//
// A backend "Store" implements both driver.MessageStore and
// driver.AttachmentStore over the same storage, so that a message and the
// links of its attachments commit together. A blob store implements
// attachments.BlobStore, and optionally driver.Lister and
// driver.URLSigner.
//
// # Backends
//
//	package     implements                                     over
//	---------   --------------------------------------------   ------------------------------------------
//	sqlstore    driver.MessageStore, driver.AttachmentStore   bun: SQLite, PostgreSQL, MySQL/MariaDB
//	blobstore   attachments.BlobStore, Lister, URLSigner       a gocloud.dev *blob.Bucket (file, S3, ...)
//	memstore    both Repositories; a BlobStore and Lister      memory: fakes for unit tests
//	storetest   nothing: the conformance suite                 runs against any of the above
//	storecopy   nothing: copies a whole Parley between them    storecopy.Source and Sink (sqlstore, memstore)
//
// The backends link no database driver or cloud SDK: the program imports
// the drivers it uses (storage/sqlstore/sqlite, postgres, mysql;
// gocloud.dev/blob/fileblob, storage/blobstore/s3, …), as with
// database/sql and gocloud.
//
// # Writing a backend
//
// Implement the interfaces, then run the conformance suite in three lines:
//
//	func TestConformance(t *testing.T) {
//		storetest.RunConformanceTests(t, func(t *testing.T) storetest.Store { return newStore(t) })
//	}
//
// storetest.RunBlobConformanceTests does the same for a BlobStore, and
// storetest.RunBenchmarks measures the Repository calls that matter.
package storage
