package attachments_test

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/memstore"
)

// These tests hold defect 3 of issue 10: when the client went away while
// the attachment row was inserted, a driver could commit the row and still
// return the context's error; the Service then deleted the file that the
// row names.

// TestUploadRowCommittedThenCanceled: the repository stores the row and
// reports the caller's cancellation. The file must stay, and the upload
// counts as done.
func TestUploadRowCommittedThenCanceled(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		h.repo.createAttachment = func(rctx context.Context, a messaging.Attachment) error {
			if err := h.repo.fullStore.CreateAttachment(rctx, a, nil); err != nil {
				return err
			}
			cancel()
			return context.Canceled // committed, then told of the cancellation
		}
		_, err := h.svc.Upload(ctx, h.alice, attachments.Upload{Filename: "a.txt", ConversationID: conv, Body: strings.NewReader("kept")})
		_ = err // either answer is right for a client that is gone; what stays must be whole
		h.repo.createAttachment = nil
		rows := h.rows(t)
		require.Len(t, rows, 1, "the row was committed")
		h.assertConsistent(t)
		assert.Equal(t, rows, h.objects(t), "the row's file is there")
	})
}

// TestUploadRowNotWrittenIsCleanedUp: when the row is certainly not
// stored, the file goes at once (the settle check does not keep it).
func TestUploadRowNotWrittenIsCleanedUp(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		h.repo.createAttachment = func(context.Context, messaging.Attachment) error {
			cancel()
			return context.Canceled
		}
		_, err := h.svc.Upload(ctx, h.alice, attachments.Upload{Filename: "a.txt", ConversationID: conv, Body: strings.NewReader("x")})
		require.Error(t, err)
		h.repo.createAttachment = nil
		h.assertClean(t)
		assert.Empty(t, h.objects(t))
	})
}

// TestUploadRowOutcomeUnknown: a database that does not answer leaves the
// outcome unknown: the object stays for Reconcile rather than being
// removed from under a row that may yet commit.
func TestUploadRowOutcomeUnknown(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		var key string
		h.repo.createAttachment = func(_ context.Context, a messaging.Attachment) error {
			key = a.Key
			return &messaging.Error{Kind: messaging.ErrUnavailable, Message: "the database cannot be reached", Err: context.DeadlineExceeded}
		}
		_, err := h.svc.Upload(context.Background(), h.alice, attachments.Upload{Filename: "a.txt", ConversationID: conv, Body: strings.NewReader("x")})
		require.ErrorIs(t, err, messaging.ErrUnavailable)
		h.repo.createAttachment = nil
		h.assertConsistent(t, key)
		assert.Contains(t, h.logs.String(), "left for Reconcile")
		h.clock.advance(grace + time.Minute)
		rep, err := h.svc.Reconcile(context.Background())
		require.NoError(t, err)
		assert.Equal(t, attachments.ReconcileReport{Orphans: 1}, rep)
		h.assertClean(t)
	})
}

// cancelAfterPut is a BlobStore that, once an object is stored, cancels
// the upload's context after a random delay of up to max: the client
// hangs up while the row is being written.
type cancelAfterPut struct {
	listingBlobs
	max    time.Duration
	cancel func(key string) context.CancelFunc
}

func (c *cancelAfterPut) Put(ctx context.Context, key, ct string, r io.Reader) error {
	if err := c.listingBlobs.Put(ctx, key, ct, r); err != nil {
		return err
	}
	cancel := c.cancel(key)
	d := time.Duration(rand.Int64N(int64(c.max)))
	go func() {
		spin := time.Now().Add(d) // a timer is too coarse for microseconds
		for time.Now().Before(spin) {
		}
		cancel()
	}()
	return nil
}

// TestUploadsCanceledWhileRowIsWritten is the trial of the issue: uploads
// whose clients hang up within 100 µs of the file being stored, on every
// SQL engine. No row may be left without its file.
func TestUploadsCanceledWhileRowIsWritten(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			n := 2000
			if e.Name != "sqlite" {
				n = 500 // a network round trip each
			}
			if testing.Short() {
				n = 50
			}
			store := e.Open(t)
			blobs := &cancelAfterPut{listingBlobs: memstore.NewBlobStore(), max: 100 * time.Microsecond}
			log := slog.New(slog.DiscardHandler)
			msgs := svctest.New(t, store, blobs, &messaging.Options{Logger: log, Files: &attachments.Options{Logger: log}})
			svc := msgs.Files()
			alice, err := msgs.SaveContact(context.Background(), messaging.Contact{Username: "alice"})
			require.NoError(t, err)

			var current context.CancelFunc
			blobs.cancel = func(string) context.CancelFunc { return current }
			ok, failed := 0, 0
			for i := range n {
				ctx, cancel := context.WithCancel(context.Background())
				current = cancel
				// Unfiled (one statement) and filed (a transaction) uploads.
				conv := []string{"", "c"}[i%2]
				_, err := svc.Upload(ctx, alice, attachments.Upload{Filename: "f.txt", ConversationID: conv, Body: strings.NewReader("file " + string(rune('a'+i%26)))})
				if err == nil {
					ok++
				} else {
					failed++
				}
				cancel()
			}
			t.Logf("%d uploads: %d answered 2xx, %d failed", n, ok, failed)

			rep, err := svc.Reconcile(context.Background())
			require.NoError(t, err)
			assert.Zero(t, rep.Missing, "rows whose file is missing")

			keys, err := store.Driver().(driver.KeyLister).AttachmentKeys(context.Background(), "", n+1)
			require.NoError(t, err)
			var objects []string
			require.NoError(t, blobs.List(context.Background(), attachments.KeyPrefix, func(o driver.Object) error {
				objects = append(objects, o.Key)
				return nil
			}))
			slices.Sort(objects)
			missing := 0
			for _, k := range keys {
				if _, found := slices.BinarySearch(objects, k); !found {
					missing++
				}
			}
			assert.Zero(t, missing, "of %d rows, %d have no file", len(keys), missing)
			assert.GreaterOrEqual(t, len(keys), ok, "every acknowledged upload has its row")
		})
	}
}
