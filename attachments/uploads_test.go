package attachments_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/memstore"
)

func hexSum(data string) string {
	s := sha256.Sum256([]byte(data))
	return hex.EncodeToString(s[:])
}

// send sends data for the reservation r as a client does: to the signed
// URL of the bucket when there is one (returning its status), else
// through PutContent (200, or the error).
func send(t *testing.T, h *harness, r attachments.Reservation, data string) (int, error) {
	t.Helper()
	if r.URL == "" {
		_, err := h.svc.PutContent(context.Background(), h.alice, r.ID, strings.NewReader(data))
		return 200, err
	}
	req, err := http.NewRequest(r.Method, r.URL, strings.NewReader(data))
	require.NoError(t, err)
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res.StatusCode, nil
}

func reserve(t *testing.T, h *harness, name, ctype, data string) attachments.Reservation {
	t.Helper()
	r, err := h.svc.Reserve(context.Background(), h.alice, attachments.NewUpload{
		Filename: name, ContentType: ctype, FileSize: int64(len(data)), SHA256: hexSum(data), ConversationID: conv})
	require.NoError(t, err)
	return r
}

// TestDirectUpload: reserve, send, complete, on every bucket: the bucket's
// signed URL where it signs (S3: the bucket checks the SHA-256), the
// host's route where it cannot.
func TestDirectUpload(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		img := testPNG(120, 80, color.NRGBA{9, 9, 9, 255})
		r := reserve(t, h, "pic.png", "", img)
		assert.Equal(t, http.MethodPut, r.Method)
		assert.True(t, strings.HasPrefix(r.ID, "upl_"))
		assert.WithinDuration(t, h.clock.now().Add(time.Hour), r.ExpiresAt, time.Minute)
		assert.Equal(t, r.URL != "", r.Checked, "a bucket that signs here checks the digest (S3)")

		_, err := h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
		assert.ErrorIs(t, err, messaging.ErrInvalid, "nothing sent yet")

		status, err := send(t, h, r, img)
		require.NoError(t, err)
		require.Equal(t, 200, status)
		_, err = h.svc.Complete(ctx, messaging.Contact{ID: "ctc_other"}, r.ID, driver.Idempotency{})
		assert.ErrorIs(t, err, messaging.ErrNotFound, "another caller's")
		a, err := h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
		require.NoError(t, err)
		assert.Equal(t, r.AttachmentID, a.ID)
		assert.Equal(t, "image/png", a.FileType, "sniffed")
		assert.Equal(t, int64(len(img)), a.FileSize)
		assert.Equal(t, hexSum(img), a.SHA256)
		assert.Equal(t, [2]int{120, 80}, [2]int{a.ImageWidth, a.ImageHeight})
		assert.Equal(t, conv, a.ConversationID)
		got, err := h.svc.Get(ctx, h.alice, a.ID)
		require.NoError(t, err)
		assert.Equal(t, a.Key, got.Key)
		_, err = h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
		assert.ErrorIs(t, err, messaging.ErrNotFound, "completed: the reservation is gone")
		h.assertClean(t)

		// With keys: a retried reserve and complete answer as the first.
		up := attachments.NewUpload{Filename: "n.txt", FileSize: 5, SHA256: hexSum("hello"), ConversationID: conv,
			Idempotency: driver.Idempotency{Key: "res-1"}}
		r1, err := h.svc.Reserve(ctx, h.alice, up)
		require.NoError(t, err)
		r2, err := h.svc.Reserve(ctx, h.alice, up)
		require.NoError(t, err)
		assert.Equal(t, r1.ID, r2.ID)
		_, err = send(t, h, r1, "hello")
		require.NoError(t, err)
		a1, err := h.svc.Complete(ctx, h.alice, r1.ID, driver.Idempotency{Key: "done-1"})
		require.NoError(t, err)
		a2, err := h.svc.Complete(ctx, h.alice, r1.ID, driver.Idempotency{Key: "done-1"})
		require.NoError(t, err)
		assert.Equal(t, a1.ID, a2.ID)
		assert.Equal(t, "text/plain; charset=utf-8", a1.FileType)
		h.assertClean(t)
	})
}

// TestDirectUploadChecks: bytes that are not what was reserved are
// refused and deleted, on every bucket.
func TestDirectUploadChecks(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()

		// Other bytes than the digest says: the bucket (S3) or the host's
		// route refuses them, and nothing is kept.
		r := reserve(t, h, "a.txt", "text/plain", "hello")
		status, err := send(t, h, r, "HELLO")
		if r.URL != "" {
			assert.Equal(t, 400, status, "the bucket refuses another digest")
		} else {
			assert.ErrorIs(t, err, messaging.ErrInvalid)
		}
		assert.Empty(t, h.objects(t))
		status, err = send(t, h, r, "hello, and more")
		if r.URL == "" {
			assert.ErrorIs(t, err, messaging.ErrTooLarge)
		} else {
			assert.NotEqual(t, 200, status)
		}
		assert.Empty(t, h.objects(t))

		// A client that wrote other bytes under the key all the same (a
		// bucket that checks nothing: GCS, Azure): Complete reads them,
		// refuses, deletes. A size that differs is refused everywhere.
		require.NoError(t, h.blobs.next.Put(ctx, r.Key, "text/plain", strings.NewReader("hellO")))
		_, err = h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
		if !r.Checked {
			assert.ErrorIs(t, err, messaging.ErrInvalid)
			assert.Empty(t, h.objects(t), "refused bytes are deleted")
		}
		require.NoError(t, h.blobs.next.Put(ctx, r.Key, "text/plain", strings.NewReader("hello world")))
		_, err = h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
		assert.ErrorIs(t, err, messaging.ErrInvalid)
		assert.Empty(t, h.objects(t), "refused bytes are deleted")

		// Declared an image, sent text.
		r = reserve(t, h, "x.png", "image/png", "not a png at all")
		_, err = send(t, h, r, "not a png at all")
		require.NoError(t, err)
		_, err = h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
		var e *messaging.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, "file_type", e.Param)
		assert.Empty(t, h.objects(t))

		// Limits, before any byte is sent.
		_, err = h.svc.Reserve(ctx, h.alice, attachments.NewUpload{Filename: "big", FileSize: 26 << 20, SHA256: hexSum("")})
		assert.ErrorIs(t, err, messaging.ErrTooLarge)
		_, err = h.svc.Reserve(ctx, h.alice, attachments.NewUpload{Filename: "big", FileSize: 1, SHA256: "XYZ"})
		assert.ErrorIs(t, err, messaging.ErrInvalid)
		_, err = h.svc.Reserve(ctx, h.alice, attachments.NewUpload{Filename: "..", FileSize: 1, SHA256: hexSum("x")})
		assert.ErrorIs(t, err, messaging.ErrInvalid)
	})
}

// TestDirectUploadQuota: a reservation counts against the quota with the
// caller's files, from the reservation on: a second reservation that
// would pass it with the first is refused, the completed file counts
// once, and an expired one frees its bytes when the sweep removes it.
func TestDirectUploadQuota(t *testing.T) {
	eachBackend(t, &attachments.Options{UploadQuota: 20, UploadExpiry: 3 * grace}, func(t *testing.T, h *harness) {
		ctx := context.Background()
		over := func(data string) {
			t.Helper()
			_, err := h.svc.Reserve(ctx, h.alice, attachments.NewUpload{Filename: "b", FileSize: int64(len(data)), SHA256: hexSum(data)})
			assert.ErrorIs(t, err, messaging.ErrTooLarge)
			var e *messaging.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, attachments.CodeQuotaExceeded, e.Code)
		}
		h.upload(t, "a.txt", "12345678")
		over("1234567890abc") // 8 + 13 > 20
		r := reserve(t, h, "r.txt", "", "123456789")
		over("abcd") // 8 + 9 reserved + 4 > 20
		_, err := send(t, h, r, "123456789")
		require.NoError(t, err)
		_, err = h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
		require.NoError(t, err)
		reserve(t, h, "c.txt", "", "abc") // 8 + 9 + 3: the completed file counts once
		over("x")

		h.clock.advance(4 * grace) // "c.txt" expires
		_, err = h.svc.Reconcile(ctx)
		require.NoError(t, err)
		reserve(t, h, "d.txt", "", "abc") // its bytes are free again
	})
}

// TestDirectUploadQuotaConcurrent: concurrent reservations of a caller
// count against one another: together they never pass the quota.
func TestDirectUploadQuotaConcurrent(t *testing.T) {
	const quota = 1000
	eachBackend(t, &attachments.Options{UploadQuota: quota}, func(t *testing.T, h *harness) {
		h.repo.createReservation = func(ctx context.Context, r driver.Reservation) error {
			time.Sleep(20 * time.Millisecond) // every reservation reads the store before any is stored
			return h.repo.fullStore.CreateReservation(ctx, r)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var reserved int64
		for i := range 16 {
			data := strings.Repeat("x", 100+i*10)
			wg.Go(func() {
				_, err := h.svc.Reserve(context.Background(), h.alice, attachments.NewUpload{Filename: "f", FileSize: int64(len(data)), SHA256: hexSum(data)})
				if err != nil {
					assert.ErrorIs(t, err, messaging.ErrTooLarge)
					return
				}
				mu.Lock()
				reserved += int64(len(data))
				mu.Unlock()
			})
		}
		wg.Wait()
		n, err := h.repo.UploadedBytes(context.Background(), h.alice.ID)
		require.NoError(t, err)
		assert.Equal(t, reserved, n)
		assert.LessOrEqual(t, n, int64(quota))
		assert.Positive(t, n)
	})
}

// TestDirectUploadExpires: an upload never completed leaves no object and
// no reservation after its expiry (and its object is no orphan before),
// also when the sweep's delete fails at first.
func TestDirectUploadExpires(t *testing.T) {
	eachBackend(t, &attachments.Options{UploadExpiry: 3 * grace}, func(t *testing.T, h *harness) {
		ctx := context.Background()
		kept := h.upload(t, "kept.txt", "kept")
		r := reserve(t, h, "a.txt", "", "abandoned")
		_, err := send(t, h, r, "abandoned")
		require.NoError(t, err)
		r2 := reserve(t, h, "b.txt", "", "never sent")

		h.clock.advance(2 * grace) // past the orphan grace, not the expiry
		rep, err := h.svc.Reconcile(ctx)
		require.NoError(t, err)
		assert.Equal(t, attachments.ReconcileReport{}, rep, "a reservation's object is no orphan")
		assert.ElementsMatch(t, []string{kept.Key, r.Key}, h.objects(t))

		h.clock.advance(2 * grace)
		_, err = h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
		assert.ErrorIs(t, err, messaging.ErrNotFound, "expired")
		h.blobs.setDelete(func(context.Context, string) error { return errInjected })
		rep, err = h.svc.Reconcile(ctx)
		require.NoError(t, err)
		assert.Equal(t, attachments.ReconcileReport{Failed: 2}, rep, "both stay until their objects are surely gone")
		assert.ElementsMatch(t, []string{kept.Key, r.Key}, h.objects(t))
		h.blobs.setDelete(nil)
		rep, err = h.svc.Reconcile(ctx)
		require.NoError(t, err)
		assert.Equal(t, attachments.ReconcileReport{Expired: 2}, rep)
		h.assertClean(t)
		for _, id := range []string{r.ID, r2.ID} {
			_, err = h.repo.GetReservation(ctx, id)
			assert.ErrorIs(t, err, messaging.ErrNotFound)
		}
	})
}

// readFunc is an io.Reader made of a function.
type readFunc func(p []byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }

// TestDirectUploadLatePutKeepsCompleted: a PutContent under way when the
// upload is completed (its reservation read before Complete), or one made
// after Complete while the reservation is left (its removal failed),
// cannot replace or delete the completed file: bytes that are not the
// reserved ones are refused as they stream, before the store keeps them.
func TestDirectUploadLatePutKeepsCompleted(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		if r := reserve(t, h, "probe.txt", "text/plain", "x"); r.URL != "" {
			return // a signed URL: the bytes do not pass through PutContent
		}
		assertServes := func(t *testing.T, id, want string) {
			t.Helper()
			_, body, err := h.svc.Open(ctx, h.alice, id)
			require.NoError(t, err)
			defer body.Close()
			data, err := io.ReadAll(body)
			require.NoError(t, err)
			assert.Equal(t, want, string(data))
		}
		for _, late := range []string{"HELLO", "hel", "hello, and more"} {
			t.Run("racing_"+late, func(t *testing.T) {
				r := reserve(t, h, "a.txt", "text/plain", "hello")
				_, err := send(t, h, r, "hello")
				require.NoError(t, err)
				var a messaging.Attachment
				rest := strings.NewReader(late)
				first := true
				body := readFunc(func(p []byte) (int, error) {
					if first { // the reservation is read; Complete now
						first = false
						var err error
						a, err = h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
						require.NoError(t, err)
					}
					return rest.Read(p)
				})
				_, err = h.svc.PutContent(ctx, h.alice, r.ID, body)
				assert.Error(t, err)
				assertServes(t, a.ID, "hello")
			})
			t.Run("after_"+late, func(t *testing.T) {
				h.repo.deleteReservation = func(context.Context, string) error { return errInjected }
				defer func() { h.repo.deleteReservation = nil }()
				r := reserve(t, h, "b.txt", "text/plain", "hello")
				_, err := send(t, h, r, "hello")
				require.NoError(t, err)
				a, err := h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
				require.NoError(t, err)
				_, err = h.svc.PutContent(ctx, h.alice, r.ID, strings.NewReader(late))
				assert.Error(t, err)
				assertServes(t, a.ID, "hello")
			})
		}
	})
}

// TestDirectUploadSlowComplete: a Complete whose read of the object lasts
// past the reservation's expiry and FinishTimeout (when the sweep may
// remove the reservation and its object) writes no row: it fails with
// ErrNotFound, whether the sweep ran meanwhile or not, and the sweep
// leaves nothing behind.
func TestDirectUploadSlowComplete(t *testing.T) {
	const expiry, finish = 3 * grace, time.Minute
	for _, sweep := range []bool{true, false} {
		t.Run(map[bool]string{true: "swept", false: "not_swept"}[sweep], func(t *testing.T) {
			eachBackend(t, &attachments.Options{UploadExpiry: expiry, FinishTimeout: finish}, func(t *testing.T, h *harness) {
				ctx := context.Background()
				r := reserve(t, h, "a.txt", "text/plain", "hello")
				_, err := send(t, h, r, "hello")
				require.NoError(t, err)
				h.blobs.setOpen(func(ctx context.Context, key string) (io.ReadSeekCloser, error) {
					h.blobs.setOpen(nil)
					obj, err := h.blobs.next.Open(ctx, key)
					// The read is slow: the reservation expires meanwhile,
					// and its grace passes.
					h.clock.advance(expiry + finish + time.Second)
					if sweep {
						_, rerr := h.svc.Reconcile(ctx)
						require.NoError(t, rerr)
					}
					return obj, err
				})
				_, err = h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
				assert.ErrorIs(t, err, messaging.ErrNotFound)
				assert.Empty(t, h.rows(t), "no row")
				_, err = h.svc.Reconcile(ctx)
				require.NoError(t, err)
				h.assertClean(t)
				assert.Empty(t, h.objects(t))
			})
		})
	}
}

// TestDirectUploadRetriedCompleteAfterDelete: a retried Complete that read
// the object before the first Complete made the attachment, and the
// uploader deleted it, does not bring the row back: the reservation is
// gone, so it answers ErrNotFound and writes nothing.
func TestDirectUploadRetriedCompleteAfterDelete(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		r := reserve(t, h, "a.txt", "text/plain", "hello")
		_, err := send(t, h, r, "hello")
		require.NoError(t, err)
		h.blobs.setOpen(func(ctx context.Context, key string) (io.ReadSeekCloser, error) {
			h.blobs.setOpen(nil)
			obj, err := h.blobs.next.Open(ctx, key)
			// While the retry reads, the first Complete ends, and the
			// uploader deletes the file.
			a, cerr := h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
			require.NoError(t, cerr)
			require.NoError(t, h.svc.Delete(ctx, h.alice, a.ID))
			return obj, err
		})
		_, err = h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
		assert.ErrorIs(t, err, messaging.ErrNotFound)
		assert.Empty(t, h.rows(t), "the deleted attachment stays deleted")
		h.assertClean(t)
	})
}

// TestDirectUploadCompleteTwice: once an upload is completed, another
// Complete of it answers ErrNotFound (API.md: a completed reservation is
// gone), never a conflict: also when the reservation could not be removed
// (its removal failed), and when the second Complete read the object
// before the first one ended; filed or linked to a message.
func TestDirectUploadCompleteTwice(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		m, err := h.msgs.Create(ctx, h.alice, messaging.NewMessage{ConversationID: conv, Text: "files"})
		require.NoError(t, err)
		h.repo.deleteReservation = func(context.Context, string) error { return errInjected }
		for _, msg := range []string{"", m.ID} {
			up := func(name string) attachments.Reservation {
				r, err := h.svc.Reserve(ctx, h.alice, attachments.NewUpload{
					Filename: name, FileSize: 5, SHA256: hexSum("hello"), ConversationID: conv, MessageID: msg})
				require.NoError(t, err)
				_, err = send(t, h, r, "hello")
				require.NoError(t, err)
				return r
			}

			r := up("after.txt")
			a, err := h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
			require.NoError(t, err)
			_, err = h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
			assert.ErrorIs(t, err, messaging.ErrNotFound, "completed, its reservation left")
			assert.NotErrorIs(t, err, messaging.ErrConflict)
			_, err = h.svc.Get(ctx, h.alice, a.ID)
			require.NoError(t, err)

			r = up("racing.txt")
			h.blobs.setOpen(func(ctx context.Context, key string) (io.ReadSeekCloser, error) {
				h.blobs.setOpen(nil)
				obj, err := h.blobs.next.Open(ctx, key)
				_, cerr := h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
				require.NoError(t, cerr)
				return obj, err
			})
			_, err = h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
			assert.ErrorIs(t, err, messaging.ErrNotFound, "completed meanwhile")
			assert.NotErrorIs(t, err, messaging.ErrConflict)
		}
		got, err := h.msgs.Get(ctx, h.alice, m.ID)
		require.NoError(t, err)
		assert.Len(t, got.Attachments, 2)
		assert.Len(t, h.rows(t), 4)
		h.assertClean(t)
	})
}

// TestDirectUploadReserveReplayQuota: a retried keyed Reserve is a replay:
// it answers the first call's reservation, and its bytes, counted once
// already, are not checked against the quota again.
func TestDirectUploadReserveReplayQuota(t *testing.T) {
	eachBackend(t, &attachments.Options{UploadQuota: 20}, func(t *testing.T, h *harness) {
		ctx := context.Background()
		data := "123456789012345" // 15 of 20 bytes
		up := attachments.NewUpload{Filename: "a.txt", FileSize: int64(len(data)), SHA256: hexSum(data), ConversationID: conv,
			Idempotency: driver.Idempotency{Key: "res-quota"}}
		r1, err := h.svc.Reserve(ctx, h.alice, up)
		require.NoError(t, err)
		var replayed bool
		up.Idempotency.Replayed = &replayed
		r2, err := h.svc.Reserve(ctx, h.alice, up)
		require.NoError(t, err)
		assert.Equal(t, r1.ID, r2.ID)
		assert.True(t, replayed)
		n, err := h.repo.UploadedBytes(ctx, h.alice.ID)
		require.NoError(t, err)
		assert.Equal(t, int64(len(data)), n, "counted once")
	})
}

// TestDirectUploadCompleteMessageFull: a Complete whose message filled up
// after the reservation is refused as a Reserve would be: ErrInvalid with
// param message_id (the field of the request that is at fault), and no row
// is written.
func TestDirectUploadCompleteMessageFull(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		m, err := h.msgs.Create(ctx, h.alice, messaging.NewMessage{ConversationID: conv, Text: "files"})
		require.NoError(t, err)
		r, err := h.svc.Reserve(ctx, h.alice, attachments.NewUpload{
			Filename: "late.txt", FileSize: 5, SHA256: hexSum("hello"), MessageID: m.ID})
		require.NoError(t, err)
		_, err = send(t, h, r, "hello")
		require.NoError(t, err)
		var fill []string
		for range 10 { // messaging's default MaxAttachments
			fill = append(fill, h.upload(t, "f.txt", "f").ID)
		}
		_, err = h.msgs.Update(ctx, h.alice, m.ID, messaging.Update{Attachments: fill})
		require.NoError(t, err)

		_, err = h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
		var e *messaging.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, messaging.ErrInvalid, e.Kind)
		assert.Equal(t, "message_id", e.Param)
		_, err = h.svc.Get(ctx, h.alice, r.AttachmentID)
		assert.ErrorIs(t, err, messaging.ErrNotFound, "no row")
	})
}

// testJPEGWithMetadata encodes a w × h JPEG whose metadata segments (as a
// camera's EXIF and ICC profile make them) take n bytes before its frame
// header.
func testJPEGWithMetadata(w, h, n int) string {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(i)
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		panic(err)
	}
	data := b.Bytes()
	var meta bytes.Buffer
	for meta.Len() < n {
		payload := min(n-meta.Len(), 0xffff-2)
		meta.Write([]byte{0xff, 0xe1, byte((payload + 2) >> 8), byte(payload + 2)})
		meta.Write(make([]byte, payload))
	}
	return string(data[:2]) + meta.String() + string(data[2:])
}

// TestDirectUploadJPEGLargeMetadata: a JPEG whose metadata puts its frame
// header past the first bytes Complete reads still gets its size, and so
// its previews.
func TestDirectUploadJPEGLargeMetadata(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		img := testJPEGWithMetadata(120, 80, 600<<10)
		r := reserve(t, h, "photo.jpg", "image/jpeg", img)
		_, err := send(t, h, r, img)
		require.NoError(t, err)
		a, err := h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
		require.NoError(t, err)
		assert.Equal(t, [2]int{120, 80}, [2]int{a.ImageWidth, a.ImageHeight})
		_, p, err := h.svc.Preview(ctx, h.alice, a.ID, attachments.PreviewSmall)
		require.NoError(t, err)
		defer p.Body.Close()
		got, _, err := image.DecodeConfig(p.Body)
		require.NoError(t, err)
		assert.Equal(t, [2]int{120, 80}, [2]int{got.Width, got.Height})
	})
}

// TestDirectUploadDeletedStaysDeleted: once a Complete made the attachment
// and the uploader deleted it, a retried Complete of the same upload
// answers ErrNotFound and brings nothing back (no row, linked or not, and
// no row whose file is gone), even where the first Complete's removal of
// the reservation could fail on its own: the row is written only with the
// reservation, and removes it in its transaction. The retry either read
// the object before the first Complete ended, or comes after the delete,
// whose removal of the object failed (the object waits for Reconcile).
func TestDirectUploadDeletedStaysDeleted(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(map[bool]string{false: "read_before", true: "object_left"}[late], func(t *testing.T) {
			eachBackend(t, nil, func(t *testing.T, h *harness) {
				ctx := context.Background()
				m, err := h.msgs.Create(ctx, h.alice, messaging.NewMessage{ConversationID: conv, Text: "files"})
				require.NoError(t, err)
				h.repo.deleteReservation = func(context.Context, string) error { return errInjected }
				for _, msg := range []string{"", m.ID} {
					r, err := h.svc.Reserve(ctx, h.alice, attachments.NewUpload{
						Filename: "a.txt", FileSize: 5, SHA256: hexSum("hello"), ConversationID: conv, MessageID: msg})
					require.NoError(t, err)
					_, err = send(t, h, r, "hello")
					require.NoError(t, err)
					completeAndDelete := func() {
						a, err := h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
						require.NoError(t, err)
						require.NoError(t, h.svc.Delete(ctx, h.alice, a.ID))
					}
					if late {
						h.blobs.setDelete(func(context.Context, string) error { return errInjected })
						completeAndDelete()
						h.blobs.setDelete(nil)
					} else {
						h.blobs.setOpen(func(ctx context.Context, key string) (io.ReadSeekCloser, error) {
							h.blobs.setOpen(nil)
							obj, err := h.blobs.next.Open(ctx, key)
							completeAndDelete()
							return obj, err
						})
					}
					_, err = h.svc.Complete(ctx, h.alice, r.ID, driver.Idempotency{})
					assert.ErrorIs(t, err, messaging.ErrNotFound, "retried after the delete")
					assert.Empty(t, h.rows(t), "the deleted attachment stays deleted")
				}
				got, err := h.msgs.Get(ctx, h.alice, m.ID)
				require.NoError(t, err)
				assert.Empty(t, got.Attachments)
				_, err = h.svc.Reconcile(ctx)
				require.NoError(t, err)
				h.assertClean(t)
			})
		})
	}
}

// TestDirectUploadReserveReplayAfterMessageChanged: a retried keyed
// Reserve answers the first call's reservation (API.md's retries), also
// once its message has filled up or has been deleted since: the checks of
// the message are the first call's, not the replay's.
func TestDirectUploadReserveReplayAfterMessageChanged(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		m, err := h.msgs.Create(ctx, h.alice, messaging.NewMessage{ConversationID: conv, Text: "files"})
		require.NoError(t, err)
		up := attachments.NewUpload{Filename: "a.txt", FileSize: 5, SHA256: hexSum("hello"), MessageID: m.ID,
			Idempotency: driver.Idempotency{Key: "res-msg"}}
		first, err := h.svc.Reserve(ctx, h.alice, up)
		require.NoError(t, err)
		replay := func(why string) {
			t.Helper()
			var replayed bool
			up.Idempotency.Replayed = &replayed
			got, err := h.svc.Reserve(ctx, h.alice, up)
			require.NoError(t, err, why)
			assert.Equal(t, first.ID, got.ID, why)
			assert.True(t, replayed, why)
		}
		var fill []string
		for range 10 { // messaging's default MaxAttachments
			fill = append(fill, h.upload(t, "f.txt", "f").ID)
		}
		_, err = h.msgs.Update(ctx, h.alice, m.ID, messaging.Update{Attachments: fill})
		require.NoError(t, err)
		replay("the message is full")
		require.NoError(t, h.msgs.Delete(ctx, h.alice, m.ID))
		replay("the message is deleted")
	})
}

// TestDirectUploadReserveReplayAfterAccessLost: a replay gives a caller
// who may no longer see the conversation what a fresh Reserve would, a
// 404, as messaging's replays do, not the reservation kept for a day.
func TestDirectUploadReserveReplayAfterAccessLost(t *testing.T) {
	ctx := context.Background()
	msgs := svctest.New(t, memstore.New(), nil, &messaging.Options{Policy: messaging.MembersOnly()})
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	require.NoError(t, msgs.AddMember(ctx, "team", alice.ID))
	up := attachments.NewUpload{Filename: "a.txt", FileSize: 5, SHA256: hexSum("hello"), ConversationID: "team",
		Idempotency: driver.Idempotency{Key: "res-team"}}
	first, err := msgs.Files().Reserve(ctx, alice, up)
	require.NoError(t, err)
	again, err := msgs.Files().Reserve(ctx, alice, up)
	require.NoError(t, err, "a member's replay")
	assert.Equal(t, first.ID, again.ID)
	require.NoError(t, msgs.RemoveMember(ctx, "team", alice.ID))
	_, err = msgs.Files().Reserve(ctx, alice, up)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
}

// TestDirectUploadAfterAccessLost: a caller removed from the conversation
// of its reservation can neither send the bytes nor complete the upload
// (a 404, as for a reservation of another caller): an upload makes no
// file in a conversation its uploader may no longer see.
func TestDirectUploadAfterAccessLost(t *testing.T) {
	ctx := context.Background()
	msgs := svctest.New(t, memstore.New(), nil, &messaging.Options{Policy: messaging.MembersOnly()})
	files := msgs.Files()
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	require.NoError(t, msgs.AddMember(ctx, "team", alice.ID))
	up := attachments.NewUpload{Filename: "a.txt", FileSize: 5, SHA256: hexSum("hello"), ConversationID: "team"}
	sent, err := files.Reserve(ctx, alice, up)
	require.NoError(t, err)
	_, err = files.PutContent(ctx, alice, sent.ID, strings.NewReader("hello"))
	require.NoError(t, err)
	unsent, err := files.Reserve(ctx, alice, up)
	require.NoError(t, err)

	require.NoError(t, msgs.RemoveMember(ctx, "team", alice.ID))
	_, err = files.PutContent(ctx, alice, unsent.ID, strings.NewReader("hello"))
	assert.ErrorIs(t, err, messaging.ErrNotFound, "PutContent")
	_, err = files.Complete(ctx, alice, sent.ID, driver.Idempotency{})
	assert.ErrorIs(t, err, messaging.ErrNotFound, "Complete")

	require.NoError(t, msgs.AddMember(ctx, "team", alice.ID))
	page, err := files.Attachments(ctx, alice, "team", driver.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, page.Data, "no file was made while alice could not see the conversation")
}

// TestDirectUploadUpperCaseSHA256: API.md asks sha256 "(hex)": upper-case
// digits are the same digest, kept in lower case, and the upload
// completes.
func TestDirectUploadUpperCaseSHA256(t *testing.T) {
	ctx := context.Background()
	msgs := svctest.New(t, memstore.New(), nil, nil)
	files := msgs.Files()
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	r, err := files.Reserve(ctx, alice, attachments.NewUpload{Filename: "a.txt", FileSize: 5, SHA256: strings.ToUpper(hexSum("hello"))})
	require.NoError(t, err)
	assert.Equal(t, hexSum("hello"), r.SHA256)
	_, err = files.PutContent(ctx, alice, r.ID, strings.NewReader("hello"))
	require.NoError(t, err)
	a, err := files.Complete(ctx, alice, r.ID, driver.Idempotency{})
	require.NoError(t, err)
	assert.Equal(t, hexSum("hello"), a.SHA256)
}
