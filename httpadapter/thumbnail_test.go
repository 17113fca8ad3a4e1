package httpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/messaging/driver"
)

// countingBlobs counts the opens of each key of a blob store.
type countingBlobs struct {
	listingBlobs
	mu    sync.Mutex
	opens map[string]int
}

func (c *countingBlobs) Open(ctx context.Context, key string) (io.ReadSeekCloser, error) {
	c.mu.Lock()
	c.opens[key]++
	c.mu.Unlock()
	return c.listingBlobs.Open(ctx, key)
}

func (c *countingBlobs) opened(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opens[key]
}

// pngOf encodes a w × h image of one colour; a colour that is not opaque
// makes a PNG with transparency.
func pngOf(t testing.TB, w, h int, c color.NRGBA) string {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.String()
}

func jpegOf(t testing.TB, w, h int) string {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	var b bytes.Buffer
	require.NoError(t, jpeg.Encode(&b, img, &jpeg.Options{Quality: 50}))
	return b.String()
}

// TestThumbnails: image_width and image_height on images, and their
// previews at /v1/attachments/{id}/thumbnail, on every backend.
func TestThumbnails(t *testing.T) {
	for _, b := range backendtest.All(t) {
		t.Run(b.Name, func(t *testing.T) {
			var blobs *countingBlobs
			e := newEnv(t, b.New(t), envConfig{
				files: attachments.Options{MaxImagePixels: 250_000},
				blobs: func(l listingBlobs) attachments.BlobStore {
					blobs = &countingBlobs{listingBlobs: l, opens: map[string]int{}}
					return blobs
				},
			})
			fx := e.fixture(t)
			opaque := pngOf(t, 600, 400, color.NRGBA{200, 30, 30, 255})
			clear := pngOf(t, 300, 200, color.NRGBA{0, 0, 255, 128})
			photo := jpegOf(t, 64, 48)
			huge := pngOf(t, 700, 400, color.NRGBA{1, 2, 3, 255}) // beyond MaxImagePixels
			require.Less(t, len(huge), testMaxUpload)
			attO := e.upload(t, "alice", fx.conv, "red.png", "", opaque)
			attC := e.upload(t, "alice", fx.conv, "blue.png", "image/png", clear)
			attJ := e.upload(t, "alice", fx.private, "photo.jpg", "", photo)
			attX := e.upload(t, "alice", fx.conv, "huge.png", "", huge)

			// The sizes, on the attachment, in lists and in messages.
			res := e.as(t, "bob", "GET", "/v1/attachments/"+attO, nil)
			require.Equal(t, 200, res.StatusCode, "%s", res.body)
			var a map[string]any
			a = nil
			require.NoError(t, json.Unmarshal(res.body, &a))
			assert.Equal(t, float64(600), a["image_width"])
			assert.Equal(t, float64(400), a["image_height"])
			res = e.as(t, "alice", "GET", "/v1/attachments/"+attX, nil)
			a = nil
			require.NoError(t, json.Unmarshal(res.body, &a))
			assert.Equal(t, float64(700), a["image_width"], "an image beyond the limit has its size")
			res = e.as(t, "alice", "GET", "/v1/attachments/"+fx.attA, nil)
			a = nil
			require.NoError(t, json.Unmarshal(res.body, &a))
			assert.NotContains(t, a, "image_width", "a text file has no image size")
			assert.NotContains(t, a, "image_height")
			res = e.as(t, "alice", "GET", "/v1/attachments/"+fx.attL, nil)
			a = nil
			require.NoError(t, json.Unmarshal(res.body, &a))
			assert.NotContains(t, a, "image_width", "a file that only starts like a PNG has no image size")

			key := func(id string) string {
				got, err := e.files.Get(e.ctx, e.users["alice"], id)
				require.NoError(t, err)
				return got.Key
			}
			thumb := func(user, id, size string, hdr ...string) *response {
				t.Helper()
				return e.as(t, user, "GET", "/v1/attachments/"+id+"/thumbnail?size="+size, nil, hdr...)
			}
			decode := func(res *response) image.Config {
				t.Helper()
				c, _, err := image.DecodeConfig(bytes.NewReader(res.body))
				require.NoError(t, err)
				return c
			}

			// Concurrent first requests of an image decode it once.
			opensBefore := blobs.opened(key(attO))
			var wg sync.WaitGroup
			var oks atomic.Int32
			for range 8 {
				wg.Go(func() {
					res := thumb("bob", attO, "small")
					if res.StatusCode == 200 && len(res.body) > 0 {
						oks.Add(1)
					}
				})
			}
			wg.Wait()
			assert.Equal(t, int32(8), oks.Load())
			assert.Equal(t, 1, blobs.opened(key(attO))-opensBefore, "the file is read once for all the first requests")

			// An opaque image's previews are JPEGs within their bound.
			res = thumb("bob", attO, "small")
			require.Equal(t, 200, res.StatusCode, "%s", res.body)
			assert.Equal(t, "image/jpeg", res.Header.Get("Content-Type"))
			assert.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
			c := decode(res)
			assert.Equal(t, [2]int{256, 171}, [2]int{c.Width, c.Height})
			etag := res.Header.Get("ETag")
			assert.Equal(t, `"`+sha(opaque)+`-small"`, etag)
			res = thumb("bob", attO, "small", "If-None-Match", etag)
			assert.Equal(t, 304, res.StatusCode)
			res = thumb("bob", attO, "large")
			require.Equal(t, 200, res.StatusCode)
			c = decode(res)
			assert.Equal(t, [2]int{600, 400}, [2]int{c.Width, c.Height}, "never scaled up")
			assert.NotEqual(t, etag, res.Header.Get("ETag"))
			assert.Equal(t, 1, blobs.opened(key(attO))-opensBefore, "later requests read the stored previews")

			// Transparency: PNG previews.
			res = thumb("alice", attC, "small")
			require.Equal(t, 200, res.StatusCode, "%s", res.body)
			assert.Equal(t, "image/png", res.Header.Get("Content-Type"))
			c = decode(res)
			assert.Equal(t, [2]int{256, 171}, [2]int{c.Width, c.Height})
			res = thumb("alice", attJ, "large")
			require.Equal(t, 200, res.StatusCode, "%s", res.body)
			assert.Equal(t, "image/jpeg", res.Header.Get("Content-Type"))

			// The previews are kept beside the file.
			for _, size := range attachments.PreviewSizes {
				r, err := e.mem.Open(e.ctx, attachments.PreviewKey(key(attO), size))
				require.NoError(t, err, size)
				_ = r.Close()
			}

			// No preview: not an image, beyond the pixel limit (its file is
			// not even opened), not decodable, not visible; a bad size.
			for _, tc := range []struct {
				user, id, size string
				status         int
			}{
				{"alice", fx.attA, "small", 404},
				{"alice", fx.attL, "large", 404},
				{"alice", attX, "small", 404},
				{"mallory", attJ, "small", 404},
				{"alice", "att_nope", "small", 404},
				{"alice", attO, "medium", 400},
				{"alice", attO, "", 400},
			} {
				res := thumb(tc.user, tc.id, tc.size)
				assert.Equal(t, tc.status, res.StatusCode, "%+v: %s", tc, res.body)
			}
			assert.Equal(t, 1, blobs.opened(key(attX)), "an image beyond the limit: only its header was read, at upload")

			// Without size, the path is the file_url of a file named
			// "thumbnail".
			attT := e.upload(t, "alice", fx.conv, "thumbnail", "text/plain", "not a picture")
			res = e.as(t, "bob", "GET", "/v1/attachments/"+attT+"/thumbnail", nil)
			require.Equal(t, 200, res.StatusCode, "%s", res.body)
			assert.Equal(t, "not a picture", string(res.body))

			// Deleting the attachment deletes its previews.
			k := key(attO)
			res = e.as(t, "alice", "DELETE", "/v1/attachments/"+attO, nil)
			require.Equal(t, 200, res.StatusCode, "%s", res.body)
			for _, key := range []string{k, attachments.PreviewKey(k, attachments.PreviewSmall), attachments.PreviewKey(k, attachments.PreviewLarge)} {
				_, err := e.mem.Open(e.ctx, key)
				assert.ErrorIs(t, err, driver.ErrNotFound, key)
			}
			var left []string
			require.NoError(t, e.mem.List(e.ctx, "", func(o driver.Object) error {
				if strings.HasPrefix(o.Key, k) {
					left = append(left, o.Key)
				}
				return nil
			}))
			assert.Empty(t, left)
		})
	}
}

// BenchmarkThumbnail: a request for a preview once it is made (a "later"
// request of issue 33: the stored preview read from the bucket and
// served), over HTTP on loopback, per backend.
//
//	go test -run '^$' -bench Thumbnail -benchtime 2000x -count 5 ./httpadapter
func BenchmarkThumbnail(b *testing.B) {
	for _, be := range backendtest.All(b) {
		b.Run(be.Name, func(b *testing.B) {
			e := newEnv(b, be.New(b), envConfig{})
			id := e.upload(b, "alice", "bench", "red.png", "", pngOf(b, 600, 400, color.NRGBA{200, 30, 30, 255}))
			path := "/v1/attachments/" + id + "/thumbnail?size=large"
			require.Equal(b, 200, e.as(b, "alice", "GET", path, nil).StatusCode) // made here
			b.ResetTimer()
			for b.Loop() {
				if res := e.as(b, "alice", "GET", path, nil); res.StatusCode != 200 {
					b.Fatal(res.StatusCode)
				}
			}
		})
	}
}
