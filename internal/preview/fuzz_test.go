package preview

import (
	"bytes"
	"context"
	"errors"
	"image"
	"runtime"
	"testing"
)

// FuzzMake: whatever the bytes, Make neither panics nor allocates beyond
// what its pixel limit allows (here a megapixel: at most 8 bytes a pixel
// decoded, plus the decoders' and encoders' own state, well under 64 MiB),
// and what it returns is either an error of the package's kinds or
// previews that decode to the size they claim.
func FuzzMake(f *testing.F) {
	f.Add(encodeJPEG(f, quadrants(40, 30, false)))
	f.Add(synthPhoto(64, 48, 1).data)
	f.Add(encodePNG(f, quadrants(30, 40, true)))
	f.Add(encodeGIF(f, quadrants(16, 16, false)))
	for _, name := range []string{"blue-purple-pink.lossy.webp", "gopher-doc.with-alpha.lossless.webp", "yellow_rose.lossy-with-alpha.webp"} {
		f.Add(readFile(f, "testdata/"+name))
	}
	f.Add(pngHeader(20000, 20000))
	f.Add(jpegHeader(20000, 20000))
	f.Add(gifHeader(20000, 20000))
	f.Add(webpHeader(20000, 20000))
	f.Add(pngHeader(1000, 1000))
	f.Add(gifHeader(1000, 1000))

	const maxPixels = 1 << 20
	const maxAlloc = 64 << 20
	m := New(&Options{MaxPixels: maxPixels, MaxDecodes: 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		info, ps, err := m.Make(context.Background(), bytes.NewReader(data), Small, 64)
		runtime.ReadMemStats(&after)
		if a := after.TotalAlloc - before.TotalAlloc; a > maxAlloc {
			t.Fatalf("allocated %d bytes (%v, %d × %d)", a, err, info.Width, info.Height)
		}
		if err != nil {
			if !errors.Is(err, ErrNotImage) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("an error of no kind: %v", err)
			}
			return
		}
		if int64(info.Width)*int64(info.Height) > maxPixels {
			t.Fatalf("%d × %d decoded beyond the limit", info.Width, info.Height)
		}
		for i, bound := range []int{Small, 64} {
			img, _, err := image.Decode(bytes.NewReader(ps[i].Data))
			if err != nil {
				t.Fatalf("preview %d does not decode: %v", bound, err)
			}
			// Within the bound, its longer side at least 90% of the bound
			// (or of the image, when smaller).
			got := img.Bounds().Size()
			long := max(got.X, got.Y)
			if got != image.Pt(ps[i].Width, ps[i].Height) || got.X > bound || got.Y > bound ||
				float64(long) < 0.9*float64(min(bound, max(info.Width, info.Height))) || got.X < 1 || got.Y < 1 {
				t.Fatalf("preview %d of %d × %d: %v, says %d × %d", bound, info.Width, info.Height, got, ps[i].Width, ps[i].Height)
			}
		}
	})
}
