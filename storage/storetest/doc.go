// Package storetest is the conformance suite of Parley's storage backends,
// in the manner of gocloud.dev's blob/drivertest: the doc comments of
// driver.MessageStore, driver.AttachmentStore, driver.EventStore and
// attachments.BlobStore are the contract, and this package checks every
// obligation they state, through the interfaces only. The "Events" group
// checks the outbox: what each write reports to its driver.Recorder,
// that a failed write stores no event, the queries, pruning, handler
// claims, and, with writers running concurrently, that a reader following
// Seq misses no event and sees the changes of one message in commit order.
//
// A backend runs the suite in its own tests, with a function that makes a
// fresh, empty store for each subtest and removes it with t.Cleanup:
//
//	func TestConformance(t *testing.T) {
//		storetest.RunConformanceTests(t, func(t *testing.T) storetest.Store { return newStore(t) })
//	}
//
//	func TestBlobConformance(t *testing.T) {
//		storetest.RunBlobConformanceTests(t, func(t *testing.T) attachments.BlobStore { return newBlobs(t) })
//	}
//
//	func BenchmarkStore(b *testing.B) {
//		storetest.RunBenchmarks(b, func(b *testing.B) storetest.Store { return newStore(b) })
//	}
//
// A backend whose Driver implements storecopy.Source and storecopy.Sink (so that
// storage/storecopy can move a whole Parley into and out of it) runs the
// copy tests with the other backends, each pair both ways:
//
//	func TestCopies(t *testing.T) {
//		storetest.RunCopyTests(t, []storetest.CopyBackend{
//			{Name: "memstore", New: newMemstoreEnds},
//			{Name: "mine", New: newEnds},
//		})
//	}
//
// Subtests are named for what they check (for example
// "Lists/MessageCursors/before_11th"), so that -run can select them.
// The suite runs them one after another; a subtest that starts goroutines
// (the "Concurrency" group) waits for them all.
//
// The blob suite also checks driver.Lister and driver.URLSigner
// when the store implements them; a SignedURL that fails with an error
// matching messaging.ErrUnimplemented skips that check.
package storetest
