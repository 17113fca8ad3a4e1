package attachments_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// testPNG encodes a w × h image of one colour.
func testPNG(w, h int, c color.Color) string {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.String()
}

// isPreview reports whether key is that of a preview.
func isPreview(key string) bool { return strings.Contains(key, ".preview-") }

// TestPreviewsKnownToReconcile: the previews kept beside a file are not
// orphans while its row exists, go with it when it is deleted (also when
// their delete fails at first), and are moved aside when their file's row
// is gone (a preview made while its attachment was deleted).
func TestPreviewsKnownToReconcile(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		kept := h.upload(t, "kept.txt", "kept")
		img := h.upload(t, "red.png", testPNG(300, 200, color.NRGBA{255, 0, 0, 255}))
		assert.Equal(t, [2]int{300, 200}, [2]int{img.ImageWidth, img.ImageHeight})
		_, p, err := h.svc.Preview(ctx, h.alice, img.ID, attachments.PreviewSmall)
		require.NoError(t, err)
		_ = p.Body.Close()
		small, large := attachments.PreviewKey(img.Key, attachments.PreviewSmall), attachments.PreviewKey(img.Key, attachments.PreviewLarge)
		assert.ElementsMatch(t, []string{kept.Key, img.Key, small, large}, h.objects(t))

		h.clock.advance(2 * grace)
		rep, err := h.svc.Reconcile(ctx)
		require.NoError(t, err)
		assert.Equal(t, attachments.ReconcileReport{}, rep, "previews of a file with a row are no orphans")
		assert.ElementsMatch(t, []string{kept.Key, img.Key, small, large}, h.objects(t))

		// The previews' delete fails: the key stays pending until
		// Reconcile removes them.
		h.blobs.setDelete(func(ctx context.Context, key string) error {
			if isPreview(key) {
				return errInjected
			}
			return h.blobs.next.Delete(ctx, key)
		})
		require.NoError(t, h.svc.Delete(ctx, h.alice, img.ID))
		assert.Equal(t, []string{img.Key}, h.pending(t))
		assert.ElementsMatch(t, []string{kept.Key, small, large}, h.objects(t))
		h.blobs.setDelete(nil)
		rep, err = h.svc.Reconcile(ctx)
		require.NoError(t, err)
		assert.Equal(t, attachments.ReconcileReport{Deleted: 1}, rep)
		h.assertClean(t)

		// A preview whose file has no row: an orphan after the grace.
		require.NoError(t, h.blobs.next.Put(ctx, small, "image/jpeg", strings.NewReader("late preview")))
		h.clock.advance(2 * grace)
		rep, err = h.svc.Reconcile(ctx)
		require.NoError(t, err)
		assert.Equal(t, attachments.ReconcileReport{Orphans: 1}, rep)
		h.assertClean(t)
	})
}

// TestPreviewStoreFails: a preview that cannot be stored is served all the
// same, and made again by the next request.
func TestPreviewStoreFails(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		img := h.upload(t, "clear.png", testPNG(40, 30, color.NRGBA{0, 0, 255, 100}))
		h.blobs.setPut(func(context.Context, string, string, io.Reader) error { return errInjected })
		_, p, err := h.svc.Preview(ctx, h.alice, img.ID, attachments.PreviewLarge)
		require.NoError(t, err)
		b, err := io.ReadAll(p.Body)
		require.NoError(t, err)
		_ = p.Body.Close()
		assert.Equal(t, "image/png", p.Type)
		c, err := png.DecodeConfig(bytes.NewReader(b))
		require.NoError(t, err)
		assert.Equal(t, [2]int{40, 30}, [2]int{c.Width, c.Height})
		assert.Equal(t, []string{img.Key}, h.objects(t), "nothing stored")
		assert.Contains(t, h.logs.String(), "cannot store a preview")

		h.blobs.setPut(nil)
		_, p, err = h.svc.Preview(ctx, h.alice, img.ID, attachments.PreviewSmall)
		require.NoError(t, err)
		_ = p.Body.Close()
		assert.Len(t, h.objects(t), 3)
	})
}

// TestPreviewErrors: what has no preview is a 404's error, a bad size an
// invalid parameter.
func TestPreviewErrors(t *testing.T) {
	h := newHarness(t, memstore.NewBlobStore(), &attachments.Options{MaxImagePixels: 100})
	ctx := context.Background()
	text := h.upload(t, "a.txt", "hello")
	big := h.upload(t, "big.png", testPNG(20, 10, color.White))
	fake := h.upload(t, "fake.png", "\x89PNG\r\n\x1a\nnot really")
	assert.Equal(t, [2]int{20, 10}, [2]int{big.ImageWidth, big.ImageHeight})
	assert.Zero(t, fake.ImageWidth)
	for _, id := range []string{text.ID, big.ID, fake.ID, "att_nope"} {
		_, _, err := h.svc.Preview(ctx, h.alice, id, attachments.PreviewSmall)
		assert.ErrorIs(t, err, messaging.ErrNotFound, id)
	}
	_, _, err := h.svc.Preview(ctx, h.alice, big.ID, "medium")
	assert.ErrorIs(t, err, messaging.ErrInvalid)
	assert.ElementsMatch(t, []string{big.Key, fake.Key, text.Key}, h.objects(t), "no preview stored")
}
