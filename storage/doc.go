// Package storage holds Parley's storage backends; it has no code of its
// own.
//
// A host opens one store for rows and one for bytes, runs Migrate, and
// builds the services on them; it calls nothing else of theirs:
//
//	package     a host opens                         over
//	---------   ----------------------------------   ------------------------------------------
//	sqlstore    sqlstore.Open(ctx, dsn, nil)         SQLite, PostgreSQL, MySQL/MariaDB (bun)
//	blobstore   blobstore.Open(ctx, bucketURL)       any gocloud.dev bucket: file, S3, GCS, Azure
//	memstore    memstore.New, memstore.NewBlobStore  memory, for the host's unit tests
//	storecopy   storecopy.Copy                       copies a whole Parley between backends
//	storetest   nothing: the conformance suite       checks any backend against the contract
//
// The backends link no database driver or cloud SDK: the program imports
// those it uses (storage/sqlstore/sqlite, postgres or mysql;
// gocloud.dev/blob/fileblob, storage/blobstore/s3, gcs or azure), as with
// database/sql and gocloud. Open names the package when one is missing.
//
// # Writing a backend
//
// A row store implements driver.MessageStore, driver.AttachmentStore and
// driver.EventStore (package messaging/driver) over one storage, so that a
// change, the links of its attachments and its events commit together; a
// blob store implements attachments.BlobStore, and optionally
// driver.Lister and driver.URLSigner. Then run the conformance suite:
//
//	func TestConformance(t *testing.T) {
//		storetest.RunConformanceTests(t, func(t *testing.T) storetest.Store { return newStore(t) })
//	}
//
// storetest.RunBlobConformanceTests does the same for a blob store, and
// storetest.RunBenchmarks measures the calls that matter. DESIGN.md at the
// repository root describes how the SQL and blob stores work inside.
package storage
