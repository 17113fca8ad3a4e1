package attachments_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gocloud.dev/blob"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/blobstore"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

// These tests inject a failure at each step of the attachment flows and
// check that the repository and the bucket stay consistent: no object
// without a row or a pending deletion, no row without its object, and that
// Reconcile finishes what a failure left behind.

// listingBlobs is a BlobStore that can list, as Reconcile needs.
type listingBlobs interface {
	attachments.BlobStore
	driver.Lister
}

// faultBlobs wraps a BlobStore. A non-nil function field replaces the call
// it names; it may call next for the real thing.
type faultBlobs struct {
	next listingBlobs

	mu     sync.Mutex
	put    func(ctx context.Context, key, contentType string, r io.Reader) error
	delete func(ctx context.Context, key string) error
	open   func(ctx context.Context, key string) (io.ReadSeekCloser, error)
}

func (f *faultBlobs) setOpen(fn func(ctx context.Context, key string) (io.ReadSeekCloser, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.open = fn
}

func (f *faultBlobs) setPut(fn func(ctx context.Context, key, contentType string, r io.Reader) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.put = fn
}

func (f *faultBlobs) setDelete(fn func(ctx context.Context, key string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delete = fn
}

func (f *faultBlobs) Put(ctx context.Context, key, contentType string, r io.Reader) error {
	f.mu.Lock()
	fn := f.put
	f.mu.Unlock()
	if fn != nil {
		return fn(ctx, key, contentType, r)
	}
	return f.next.Put(ctx, key, contentType, r)
}

func (f *faultBlobs) Open(ctx context.Context, key string) (io.ReadSeekCloser, error) {
	f.mu.Lock()
	fn := f.open
	f.mu.Unlock()
	if fn != nil {
		return fn(ctx, key)
	}
	return f.next.Open(ctx, key)
}

func (f *faultBlobs) Delete(ctx context.Context, key string) error {
	f.mu.Lock()
	fn := f.delete
	f.mu.Unlock()
	if fn != nil {
		return fn(ctx, key)
	}
	return f.next.Delete(ctx, key)
}

func (f *faultBlobs) List(ctx context.Context, prefix string, fn func(driver.Object) error) error {
	return f.next.List(ctx, prefix, fn)
}

// fullStore is a driver.Store with the optional interfaces of memstore's.
type fullStore interface {
	driver.Store
	driver.Installation
	driver.KeyLister
	driver.ReservationStore
}

// faultRepo wraps a memstore.Store (both repositories); a non-nil function
// field replaces the call it names.
type faultRepo struct {
	fullStore

	mu                sync.Mutex
	createAttachment  func(ctx context.Context, a messaging.Attachment) error
	forgetDeletion    func(ctx context.Context, key string) error
	createReservation func(ctx context.Context, r driver.Reservation) error
	deleteReservation func(ctx context.Context, id string) error
}

func (r *faultRepo) DeleteReservation(ctx context.Context, id string) error {
	r.mu.Lock()
	fn := r.deleteReservation
	r.mu.Unlock()
	if fn != nil {
		return fn(ctx, id)
	}
	return r.fullStore.DeleteReservation(ctx, id)
}

func (r *faultRepo) CreateReservation(ctx context.Context, res driver.Reservation) error {
	r.mu.Lock()
	fn := r.createReservation
	r.mu.Unlock()
	if fn != nil {
		return fn(ctx, res)
	}
	return r.fullStore.CreateReservation(ctx, res)
}

func (r *faultRepo) CreateAttachment(ctx context.Context, a messaging.Attachment, rec driver.Recorder) error {
	r.mu.Lock()
	fn := r.createAttachment
	r.mu.Unlock()
	if fn != nil {
		return fn(ctx, a)
	}
	return r.fullStore.CreateAttachment(ctx, a, rec)
}

func (r *faultRepo) ForgetDeletion(ctx context.Context, key string) error {
	r.mu.Lock()
	fn := r.forgetDeletion
	r.mu.Unlock()
	if fn != nil {
		return fn(ctx, key)
	}
	return r.fullStore.ForgetDeletion(ctx, key)
}

// clock is the Service's Now: real time plus an offset the test moves.
type clock struct{ offset atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// syncBuffer is a bytes.Buffer for a logger.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type harness struct {
	repo  *faultRepo
	blobs *faultBlobs
	clock *clock
	logs  *syncBuffer
	svc   *attachments.Service
	msgs  *messaging.Service
	alice messaging.Contact
}

const (
	grace = time.Hour
	conv  = "general"
)

// blobBackends are the blob stores the fault tests run over: memstore's
// fake and the gocloud Store on memory and on a directory.
func blobBackends() map[string]func(tb testing.TB) listingBlobs {
	openGocloud := func(tb testing.TB, u string) listingBlobs {
		tb.Helper()
		s, err := blobstore.Open(context.Background(), u)
		require.NoError(tb, err)
		tb.Cleanup(func() { _ = s.Close() })
		return s
	}
	backends := map[string]func(tb testing.TB) listingBlobs{
		"memstore": func(testing.TB) listingBlobs { return memstore.NewBlobStore() },
		"blobstore_mem": func(tb testing.TB) listingBlobs {
			return openGocloud(tb, "mem://")
		},
		"blobstore_file": func(tb testing.TB) listingBlobs {
			return openGocloud(tb, "file://"+filepath.ToSlash(tb.TempDir())+"?no_tmp_dir=true")
		},
	}
	if u := os.Getenv("PARLEY_TEST_S3"); u != "" {
		backends["blobstore_s3"] = func(tb testing.TB) listingBlobs { return openS3(tb, u) }
	}
	for name, env := range cloudBackends {
		if u := os.Getenv(env); u != "" {
			backends[name] = func(tb testing.TB) listingBlobs { ensureBucket(tb, u); return openS3(tb, u) }
		}
	}
	return backends
}

// cloudBackends are the other buckets the tests run over, by name, with
// the variable of their URL (clouds_test.go, build tag cloud, adds them).
var cloudBackends = map[string]string{}

// ensureBucket creates the bucket of a cloud backend's URL on its emulator
// (clouds_test.go).
var ensureBucket = func(testing.TB, string) {}

// openS3 opens the S3 bucket (or any other bucket) at u under a key prefix of its own, so that
// the test sees an empty bucket, and empties that prefix at the end.
func openS3(tb testing.TB, u string) listingBlobs {
	tb.Helper()
	ctx := context.Background()
	b, err := blob.OpenBucket(ctx, u)
	require.NoError(tb, err, "PARLEY_TEST_S3=%s", u)
	prefix := "fault-" + rand.Text() + "/"
	tb.Cleanup(func() {
		it := b.List(&blob.ListOptions{Prefix: prefix})
		for {
			o, err := it.Next(ctx)
			if err != nil {
				break
			}
			_ = b.Delete(ctx, o.Key)
		}
		_ = b.Close()
	})
	s := blobstore.New(blob.PrefixedBucket(b, prefix))
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// eachBackend runs fn once per blob backend, each with a fresh harness.
func eachBackend(t *testing.T, opts *attachments.Options, fn func(t *testing.T, h *harness)) {
	t.Helper()
	for name, open := range blobBackends() {
		t.Run(name, func(t *testing.T) { fn(t, newHarness(t, open(t), opts)) })
	}
}

func newHarness(tb testing.TB, blobs listingBlobs, opts *attachments.Options) *harness {
	tb.Helper()
	h := &harness{
		repo:  &faultRepo{fullStore: memstore.New().Driver().(fullStore)},
		blobs: &faultBlobs{next: blobs},
		clock: &clock{},
		logs:  &syncBuffer{},
	}
	var o attachments.Options
	if opts != nil {
		o = *opts
	}
	o.OrphanGrace = grace
	o.Now = h.clock.now
	o.Logger = slog.New(slog.NewTextHandler(h.logs, nil))
	h.msgs = svctest.New(tb, storetest.Storage(h.repo), h.blobs, &messaging.Options{Now: h.clock.now, Logger: o.Logger, Files: &o})
	h.svc = h.msgs.Files()
	var err error
	h.alice, err = h.msgs.SaveContact(context.Background(), messaging.Contact{Username: "alice"})
	require.NoError(tb, err)
	return h
}

func (h *harness) upload(tb testing.TB, name, body string) messaging.Attachment {
	tb.Helper()
	a, err := h.svc.Upload(context.Background(), h.alice, attachments.Upload{
		Filename: name, ConversationID: conv, Body: strings.NewReader(body),
	})
	require.NoError(tb, err)
	return a
}

// objects returns the keys in the bucket under the Service's prefix.
func (h *harness) objects(tb testing.TB) []string {
	tb.Helper()
	keys := []string{}
	require.NoError(tb, h.blobs.next.List(context.Background(), attachments.KeyPrefix, func(o driver.Object) error {
		keys = append(keys, o.Key)
		return nil
	}))
	return keys
}

// rows returns the keys of every attachment row.
func (h *harness) rows(tb testing.TB) []string {
	tb.Helper()
	items, more, err := h.repo.ListAttachments(context.Background(), driver.AttachmentQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 1000}, UploaderID: h.alice.ID})
	require.NoError(tb, err)
	require.False(tb, more)
	keys := []string{}
	for _, a := range items {
		keys = append(keys, a.Key)
	}
	slices.Sort(keys)
	return keys
}

func (h *harness) pending(tb testing.TB) []string {
	tb.Helper()
	keys, err := h.repo.PendingDeletions(context.Background(), 1000)
	require.NoError(tb, err)
	return keys
}

// assertConsistent checks the invariant that holds at every moment, even
// right after a failure: every object has a row or a pending deletion, or
// is a known orphan (an object a failed cleanup left, which Reconcile
// removes after the grace period); every row has its object.
func (h *harness) assertConsistent(tb testing.TB, orphans ...string) {
	tb.Helper()
	objects, rows, pending := h.objects(tb), h.rows(tb), h.pending(tb)
	for _, k := range objects {
		assert.True(tb, slices.Contains(rows, k) || slices.Contains(pending, k) || slices.Contains(orphans, k),
			"object %s has no row and no pending deletion", k)
	}
	for _, k := range orphans {
		assert.Contains(tb, objects, k, "the orphan %s should still be in the bucket", k)
	}
	for _, k := range rows {
		assert.Contains(tb, objects, k, "row %s has no object", k)
	}
}

// assertClean checks the state when nothing is left to reconcile: the
// bucket holds exactly the objects of the rows, and nothing is pending.
func (h *harness) assertClean(tb testing.TB) {
	tb.Helper()
	assert.Equal(tb, h.rows(tb), h.objects(tb), "objects differ from rows")
	assert.Empty(tb, h.pending(tb), "pending deletions")
}

var errInjected = errors.New("injected failure")

func TestUploadBlobPutFailsMidway(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		kept := h.upload(t, "kept.txt", "kept")
		var sawKey string
		h.blobs.setPut(func(ctx context.Context, key, ct string, r io.Reader) error {
			sawKey = key
			// The store reads part of the body, then the network breaks.
			return h.blobs.next.Put(ctx, key, ct, io.MultiReader(io.LimitReader(r, 1000), iotest.ErrReader(errInjected)))
		})
		_, err := h.svc.Upload(context.Background(), h.alice, attachments.Upload{
			Filename: "big.bin", ConversationID: conv, Body: bytes.NewReader(make([]byte, 1<<20)),
		})
		require.Error(t, err)
		assert.ErrorIs(t, err, errInjected)
		assert.NotErrorIs(t, err, messaging.ErrTooLarge)
		require.NotEmpty(t, sawKey)
		assert.NotContains(t, h.objects(t), sawKey)
		assert.Equal(t, []string{kept.Key}, h.rows(t))
		h.assertClean(t)
	})
}

// TestUploadBlobPutLeavesPartialObject: a store that breaks the contract
// and leaves half an object on failure is cleaned up by the Service.
func TestUploadBlobPutLeavesPartialObject(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		h.blobs.setPut(func(ctx context.Context, key, ct string, r io.Reader) error {
			if err := h.blobs.next.Put(ctx, key, ct, io.LimitReader(r, 100)); err != nil {
				return err
			}
			return errInjected
		})
		_, err := h.svc.Upload(context.Background(), h.alice, attachments.Upload{
			Filename: "a.txt", ConversationID: conv, Body: strings.NewReader(strings.Repeat("x", 1000)),
		})
		assert.ErrorIs(t, err, errInjected)
		assert.Empty(t, h.objects(t))
		assert.Empty(t, h.rows(t))
		h.assertClean(t)
	})
}

func TestUploadRowInsertFails(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		var key string
		h.repo.createAttachment = func(ctx context.Context, a messaging.Attachment) error {
			key = a.Key
			// The file is in the bucket when the row is written.
			assert.Contains(t, h.objects(t), a.Key)
			return errInjected
		}
		_, err := h.svc.Upload(context.Background(), h.alice, attachments.Upload{
			Filename: "a.txt", ConversationID: conv, Body: strings.NewReader("hello"),
		})
		assert.ErrorIs(t, err, errInjected)
		require.NotEmpty(t, key)
		assert.Empty(t, h.objects(t), "the file must be removed when its row cannot be written")
		h.assertClean(t)
	})
}

// TestUploadRowInsertAndCleanupFail: the object outlives a failed upload;
// Reconcile leaves it alone during OrphanGrace (it might be an upload under
// way) and removes it after.
func TestUploadRowInsertAndCleanupFail(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		kept := h.upload(t, "kept.txt", "kept")

		var orphan string
		h.repo.createAttachment = func(ctx context.Context, a messaging.Attachment) error {
			orphan = a.Key
			return errInjected
		}
		h.blobs.setDelete(func(context.Context, string) error { return errInjected })
		_, err := h.svc.Upload(ctx, h.alice, attachments.Upload{
			Filename: "a.txt", ConversationID: conv, Body: strings.NewReader("hello"),
		})
		assert.ErrorIs(t, err, errInjected)
		require.NotEmpty(t, orphan)
		assert.Contains(t, h.logs.String(), orphan, "the failed cleanup is logged")
		h.repo.createAttachment = nil
		h.blobs.setDelete(nil)
		h.assertConsistent(t, orphan)

		// Within the grace period the orphan stays.
		rep, err := h.svc.Reconcile(ctx)
		require.NoError(t, err)
		assert.Equal(t, attachments.ReconcileReport{}, rep)
		assert.Contains(t, h.objects(t), orphan)

		h.clock.advance(grace + time.Minute)
		rep, err = h.svc.Reconcile(ctx)
		require.NoError(t, err)
		assert.Equal(t, attachments.ReconcileReport{Orphans: 1}, rep)
		assert.Equal(t, []string{kept.Key}, h.objects(t))
		h.assertClean(t)

		// Nothing left: a second run does nothing.
		rep, err = h.svc.Reconcile(ctx)
		require.NoError(t, err)
		assert.Equal(t, attachments.ReconcileReport{}, rep)
	})
}

func TestDeleteBlobDeleteFails(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		kept := h.upload(t, "kept.txt", "kept")
		a := h.upload(t, "a.txt", "hello")
		b := h.upload(t, "b.txt", "bye")

		// Without failures, the row and the file go at once.
		require.NoError(t, h.svc.Delete(ctx, h.alice, b.ID))
		assert.NotContains(t, h.objects(t), b.Key)
		h.assertClean(t)

		h.blobs.setDelete(func(context.Context, string) error { return errInjected })

		require.NoError(t, h.svc.Delete(ctx, h.alice, a.ID), "the row is gone: Delete succeeds")
		_, err := h.svc.Get(ctx, h.alice, a.ID)
		assert.ErrorIs(t, err, messaging.ErrNotFound)
		assert.Equal(t, []string{a.Key}, h.pending(t), "the key stays pending")
		assert.Contains(t, h.objects(t), a.Key)
		h.assertConsistent(t)

		// Still failing: Reconcile counts it and keeps it pending.
		rep, err := h.svc.Reconcile(ctx)
		require.NoError(t, err)
		assert.Equal(t, attachments.ReconcileReport{Failed: 1}, rep)
		assert.Equal(t, []string{a.Key}, h.pending(t))

		h.blobs.setDelete(nil)
		rep, err = h.svc.Reconcile(ctx)
		require.NoError(t, err)
		assert.Equal(t, attachments.ReconcileReport{Deleted: 1}, rep)
		assert.Equal(t, []string{kept.Key}, h.objects(t))
		h.assertClean(t)
	})
}

// TestDeleteForgetFails: the object is gone but the pending deletion could
// not be forgotten; Reconcile forgets it (deleting a missing object is
// fine).
func TestDeleteForgetFails(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		a := h.upload(t, "a.txt", "hello")
		h.repo.forgetDeletion = func(context.Context, string) error { return errInjected }
		require.NoError(t, h.svc.Delete(ctx, h.alice, a.ID))
		assert.Empty(t, h.objects(t))
		assert.Equal(t, []string{a.Key}, h.pending(t))
		h.assertConsistent(t)

		h.repo.forgetDeletion = nil
		rep, err := h.svc.Reconcile(ctx)
		require.NoError(t, err)
		assert.Equal(t, attachments.ReconcileReport{Deleted: 1}, rep)
		h.assertClean(t)
	})
}

// TestMessageDeleteCascadeBlobDeleteFails: deleting a message removes its
// attachment rows at once; files that cannot be removed stay pending until
// Reconcile.
func TestMessageDeleteCascadeBlobDeleteFails(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		kept := h.upload(t, "kept.txt", "kept")
		a1 := h.upload(t, "one.txt", "one")
		a2 := h.upload(t, "two.txt", "two")
		m, err := h.msgs.Create(ctx, h.alice, messaging.NewMessage{ConversationID: conv, Text: "files", Attachments: []string{a1.ID, a2.ID}})
		require.NoError(t, err)
		require.Len(t, m.Attachments, 2)

		// The first file's delete fails, the second's works.
		h.blobs.setDelete(func(ctx context.Context, key string) error {
			if key == a1.Key {
				return errInjected
			}
			return h.blobs.next.Delete(ctx, key)
		})
		require.NoError(t, h.msgs.Delete(ctx, h.alice, m.ID))
		_, err = h.msgs.Get(ctx, h.alice, m.ID)
		assert.ErrorIs(t, err, messaging.ErrNotFound)
		for _, a := range []messaging.Attachment{a1, a2} {
			_, err = h.svc.Get(ctx, h.alice, a.ID)
			assert.ErrorIs(t, err, messaging.ErrNotFound, "attachment rows go with their message")
		}
		assert.Equal(t, []string{a1.Key}, h.pending(t))
		assert.ElementsMatch(t, []string{kept.Key, a1.Key}, h.objects(t))
		h.assertConsistent(t)

		h.blobs.setDelete(nil)
		rep, err := h.svc.Reconcile(ctx)
		require.NoError(t, err)
		assert.Equal(t, attachments.ReconcileReport{Deleted: 1}, rep)
		assert.Equal(t, []string{kept.Key}, h.objects(t))
		h.assertClean(t)
	})
}

// TestUploadTooLarge: beyond the limit the upload fails with ErrTooLarge
// (HTTP 413) and leaves nothing, in the bucket or the repository.
func TestUploadTooLarge(t *testing.T) {
	const limit = 256 << 10
	eachBackend(t, &attachments.Options{MaxUploadBytes: limit}, func(t *testing.T, h *harness) {
		ctx := context.Background()
		for _, size := range []int{limit + 1, 3 * limit} {
			_, err := h.svc.Upload(ctx, h.alice, attachments.Upload{
				Filename: "big.bin", ConversationID: conv, Body: bytes.NewReader(make([]byte, size)),
			})
			require.Error(t, err)
			assert.ErrorIs(t, err, messaging.ErrTooLarge)
			var e *messaging.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, "file", e.Param)
			assert.Empty(t, h.objects(t), "an upload over the limit left an object")
			assert.Empty(t, h.rows(t), "an upload over the limit left a row")
			h.assertClean(t)
		}

		// Exactly the limit is accepted.
		a, err := h.svc.Upload(ctx, h.alice, attachments.Upload{
			Filename: "ok.bin", ConversationID: conv, Body: bytes.NewReader(make([]byte, limit)),
		})
		require.NoError(t, err)
		assert.Equal(t, int64(limit), a.FileSize)
		assert.Equal(t, []string{a.Key}, h.objects(t))
		h.assertClean(t)
	})
}

// TestUploadCanceled: a client that goes away mid-upload leaves nothing.
func TestUploadCanceled(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		body := io.MultiReader(bytes.NewReader(make([]byte, 64<<10)), readerFunc(func([]byte) (int, error) {
			cancel()
			return 0, context.Canceled
		}))
		_, err := h.svc.Upload(ctx, h.alice, attachments.Upload{Filename: "a.bin", ConversationID: conv, Body: body})
		assert.ErrorIs(t, err, context.Canceled)
		h.assertClean(t)
		assert.Empty(t, h.objects(t))
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
