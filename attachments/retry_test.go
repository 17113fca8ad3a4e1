package attachments_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/storetest"
)

// These tests check uploads and renames with an idempotency key on every
// blob backend: a retry stores no second object, and a failure at any step
// leaves the bucket consistent.

// keyedUpload is an upload of body into conv with the idempotency key key.
func keyedUpload(key, name, body string, replayed *bool) attachments.Upload {
	return attachments.Upload{Filename: name, ConversationID: conv, Body: strings.NewReader(body),
		Idempotency: messaging.Idempotency{Key: key, Replayed: replayed}}
}

func code(err error) string {
	var e *messaging.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestUploadRetriedWithKeyStoresOneFile(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		var first messaging.Attachment
		for i := range 10 {
			var replayed bool
			a, err := h.svc.Upload(ctx, h.alice, keyedUpload("up-1", "notes.txt", "the same bytes", &replayed))
			require.NoError(t, err, "try %d", i)
			if i == 0 {
				first = a
				assert.False(t, replayed)
			} else {
				assert.True(t, replayed, "try %d replays", i)
				assert.Equal(t, first, a, "try %d answers as the first", i)
			}
		}
		assert.Len(t, h.objects(t), 1, "one object in the bucket")
		assert.Equal(t, []string{first.Key}, h.rows(t), "one row")
		h.assertClean(t)

		// The same key with other bytes, or another name, is refused and
		// stores nothing.
		for _, u := range []attachments.Upload{
			keyedUpload("up-1", "notes.txt", "other bytes", nil),
			keyedUpload("up-1", "other.txt", "the same bytes", nil),
		} {
			_, err := h.svc.Upload(ctx, h.alice, u)
			assert.ErrorIs(t, err, messaging.ErrInvalid)
			assert.Equal(t, messaging.CodeKeyReused, code(err))
		}
		assert.Len(t, h.objects(t), 1)
		h.assertClean(t)

		// Another caller's key of the same name is its own.
		bob, err := h.msgs.SaveContact(ctx, messaging.Contact{Username: "bob"})
		require.NoError(t, err)
		b, err := h.svc.Upload(ctx, bob, keyedUpload("up-1", "notes.txt", "the same bytes", nil))
		require.NoError(t, err)
		assert.NotEqual(t, first.ID, b.ID)
		assert.Len(t, h.objects(t), 2)
	})
}

func TestUploadRetriedAtOnceStoresOneFile(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		const n = 10
		got := make([]messaging.Attachment, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				for {
					a, err := h.svc.Upload(context.Background(), h.alice, keyedUpload("at-once", "a.txt", "bytes at once", nil))
					if code(err) == messaging.CodeKeyInUse {
						time.Sleep(time.Millisecond)
						continue
					}
					assert.NoError(t, err)
					got[i] = a
					return
				}
			})
		}
		close(start)
		wg.Wait()
		for i := range n {
			assert.Equal(t, got[0], got[i], "every answer is the first one")
		}
		assert.Len(t, h.objects(t), 1, "one object in the bucket")
		h.assertClean(t)
	})
}

// TestUploadRetryWhileUnderWay: a retry while the first upload streams is
// refused before its file is read; once the first is done the retry
// replays it.
func TestUploadRetryWhileUnderWay(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		inPut, release := make(chan struct{}), make(chan struct{})
		h.blobs.setPut(func(ctx context.Context, key, ct string, r io.Reader) error {
			close(inPut)
			<-release
			return h.blobs.next.Put(ctx, key, ct, r)
		})
		type result struct {
			a   messaging.Attachment
			err error
		}
		first := make(chan result, 1)
		go func() {
			a, err := h.svc.Upload(ctx, h.alice, keyedUpload("slow", "a.txt", "slow bytes", nil))
			first <- result{a, err}
		}()
		<-inPut
		body := &countingBody{r: strings.NewReader("slow bytes")}
		_, err := h.svc.Upload(ctx, h.alice, attachments.Upload{Filename: "a.txt", ConversationID: conv, Body: body,
			Idempotency: messaging.Idempotency{Key: "slow"}})
		assert.ErrorIs(t, err, messaging.ErrConflict)
		assert.Equal(t, messaging.CodeKeyInUse, code(err))
		assert.Zero(t, body.n, "the refused retry's file is not read")
		h.blobs.setPut(nil)
		close(release)
		r := <-first
		require.NoError(t, r.err)
		var replayed bool
		again, err := h.svc.Upload(ctx, h.alice, keyedUpload("slow", "a.txt", "slow bytes", &replayed))
		require.NoError(t, err)
		assert.True(t, replayed)
		assert.Equal(t, r.a, again)
		assert.Len(t, h.objects(t), 1)
		h.assertClean(t)
	})
}

// TestUploadKeyTakenOver: a first upload that stalls past the lock timeout
// loses its key to a retry on another instance (its process might have
// died); it then fails and removes its own object, never the retry's. On
// its own instance, where it is known to be alive, the key stays its own.
func TestUploadKeyTakenOver(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		inPut, release := make(chan struct{}), make(chan struct{})
		var stalled atomic.Bool
		h.blobs.setPut(func(ctx context.Context, key, ct string, r io.Reader) error {
			err := h.blobs.next.Put(ctx, key, ct, r)
			if stalled.CompareAndSwap(false, true) { // the first upload only
				close(inPut)
				<-release
			}
			return err
		})
		first := make(chan error, 1)
		go func() {
			_, err := h.svc.Upload(ctx, h.alice, keyedUpload("stall", "a.txt", "bytes", nil))
			first <- err
		}()
		<-inPut
		h.clock.advance(2 * time.Minute) // past IdempotencyLockTimeout
		_, err := h.svc.Upload(ctx, h.alice, keyedUpload("stall", "a.txt", "bytes", nil))
		assert.Equal(t, messaging.CodeKeyInUse, code(err), "the first upload's instance knows it is under way")
		other := svctest.New(t, storetest.Storage(h.repo), h.blobs, &messaging.Options{Now: h.clock.now, Files: &attachments.Options{Now: h.clock.now}}).Files()
		second, err := other.Upload(ctx, h.alice, keyedUpload("stall", "a.txt", "bytes", nil))
		require.NoError(t, err, "a retry on another instance takes the stale key over")
		close(release)
		err = <-first
		assert.Equal(t, messaging.CodeKeyInUse, code(err), "the first upload lost its key: %v", err)
		assert.Equal(t, []string{second.Key}, h.objects(t), "the first upload's object is removed, the retry's kept")
		h.assertClean(t)
		var replayed bool
		again, err := h.svc.Upload(ctx, h.alice, keyedUpload("stall", "a.txt", "bytes", &replayed))
		require.NoError(t, err)
		assert.True(t, replayed)
		assert.Equal(t, second, again)
	})
}

// TestUploadKeyedFailureReleasesKey: an upload that fails keeps no record,
// and leaves no object; its retry is carried out anew.
func TestUploadKeyedFailureReleasesKey(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		h.blobs.setPut(func(context.Context, string, string, io.Reader) error { return errInjected })
		_, err := h.svc.Upload(ctx, h.alice, keyedUpload("fails", "a.txt", "bytes", nil))
		assert.ErrorIs(t, err, errInjected)
		h.blobs.setPut(nil)
		h.assertClean(t)
		var replayed bool
		a, err := h.svc.Upload(ctx, h.alice, keyedUpload("fails", "a.txt", "bytes", &replayed))
		require.NoError(t, err)
		assert.False(t, replayed, "the retry uploads")
		assert.Equal(t, []string{a.Key}, h.objects(t))
	})
}

func TestUploadToMessageWithKey(t *testing.T) {
	eachBackend(t, &attachments.Options{}, func(t *testing.T, h *harness) {
		ctx := context.Background()
		m, err := h.msgs.Create(ctx, h.alice, messaging.NewMessage{ConversationID: conv, Text: "see file"})
		require.NoError(t, err)
		u := func(replayed *bool) attachments.Upload {
			return attachments.Upload{Filename: "a.txt", MessageID: m.ID, Body: strings.NewReader("linked bytes"),
				Idempotency: messaging.Idempotency{Key: "linked", Replayed: replayed}}
		}
		a, err := h.svc.Upload(ctx, h.alice, u(nil))
		require.NoError(t, err)
		assert.Equal(t, m.ID, a.MessageID)
		assert.Equal(t, conv, a.ConversationID)
		var replayed bool
		again, err := h.svc.Upload(ctx, h.alice, u(&replayed))
		require.NoError(t, err)
		assert.True(t, replayed)
		assert.Equal(t, a, again)
		got, err := h.msgs.Get(ctx, h.alice, m.ID)
		require.NoError(t, err)
		require.Len(t, got.Attachments, 1, "linked once")
		assert.Equal(t, a, got.Attachments[0])
		assert.Len(t, h.objects(t), 1)
		h.assertClean(t)
	})
}

func TestUploadToFullMessageStoresNothing(t *testing.T) {
	for name, open := range blobBackends() {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, open(t), nil)
			ctx := context.Background()
			m, err := h.msgs.Create(ctx, h.alice, messaging.NewMessage{ConversationID: conv, Text: "full"})
			require.NoError(t, err)
			for i := range 10 {
				_, err := h.svc.Upload(ctx, h.alice, attachments.Upload{Filename: "f.txt", MessageID: m.ID, Body: strings.NewReader("x" + string(rune('a'+i)))})
				require.NoError(t, err)
			}
			before := h.objects(t)
			for _, key := range []string{"", "full-key"} {
				_, err = h.svc.Upload(ctx, h.alice, attachments.Upload{Filename: "f.txt", MessageID: m.ID, Body: strings.NewReader("one too many"),
					Idempotency: messaging.Idempotency{Key: key}})
				assert.ErrorIs(t, err, messaging.ErrInvalid, "key %q", key)
				assert.ElementsMatch(t, before, h.objects(t), "no object and no row are left (key %q)", key)
				h.assertClean(t)
			}
		})
	}
}

func TestRenameWithKey(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, blobBackends()["memstore"](t), nil)
	a := h.upload(t, "a.txt", "bytes")
	name := "b.txt"
	u := attachments.Update{Filename: &name, Idempotency: messaging.Idempotency{Key: "rename"}}
	first, err := h.svc.Update(ctx, h.alice, a.ID, u)
	require.NoError(t, err)
	assert.Equal(t, "b.txt", first.Filename)
	_, err = h.svc.Rename(ctx, h.alice, a.ID, "c.txt")
	require.NoError(t, err)
	var replayed bool
	u.Idempotency.Replayed = &replayed
	again, err := h.svc.Update(ctx, h.alice, a.ID, u)
	require.NoError(t, err)
	assert.True(t, replayed)
	assert.Equal(t, first.ID, again.ID)
	assert.Equal(t, "c.txt", again.Filename, "the retry answers the attachment as it is now")
	got, err := h.svc.Get(ctx, h.alice, a.ID)
	require.NoError(t, err)
	assert.Equal(t, "c.txt", got.Filename, "and renames nothing")

	other := "d.txt"
	_, err = h.svc.Update(ctx, h.alice, a.ID, attachments.Update{Filename: &other, Idempotency: messaging.Idempotency{Key: "rename"}})
	assert.Equal(t, messaging.CodeKeyReused, code(err))
	_, err = h.svc.Update(ctx, h.alice, a.ID, attachments.Update{})
	assert.ErrorIs(t, err, messaging.ErrInvalid)

	// Deleted since: the replay answers what a fresh rename would.
	require.NoError(t, h.svc.Delete(ctx, h.alice, a.ID))
	_, err = h.svc.Update(ctx, h.alice, a.ID, u)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
}

// countingBody counts the bytes read from it.
type countingBody struct {
	r io.Reader
	n int
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += n
	return n, err
}
