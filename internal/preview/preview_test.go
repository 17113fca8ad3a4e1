package preview

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/color/palette"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quadrants returns a w × h image whose four quadrants are red, green,
// blue and white, with a transparent quadrant instead of white when alpha
// is set.
func quadrants(w, h int, alpha bool) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	white := color.NRGBA{255, 255, 255, 255}
	if alpha {
		white = color.NRGBA{}
	}
	colors := [2][2]color.NRGBA{
		{{255, 0, 0, 255}, {0, 255, 0, 255}},
		{{0, 0, 255, 255}, white},
	}
	for half := range 2 {
		// The first row of the half, then copies of it.
		y0 := half * (h + 1) / 2
		row := img.Pix[y0*img.Stride : y0*img.Stride+w*4]
		for x := range w {
			c := colors[half][x*2/w]
			copy(row[x*4:], []byte{c.R, c.G, c.B, c.A})
		}
		for y := y0 + 1; y < (half+1)*(h+1)/2 && y < h; y++ {
			copy(img.Pix[y*img.Stride:], row)
		}
	}
	return img
}

// paletted returns img (of at most 256 colors) as a paletted image, which
// the GIF encoder writes as it is.
func paletted(img *image.NRGBA) *image.Paletted {
	var pal color.Palette
	index := map[color.NRGBA]uint8{}
	p := image.NewPaletted(img.Rect, nil)
	for i := 0; i < len(img.Pix); i += 4 {
		c := color.NRGBA{img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3]}
		j, ok := index[c]
		if !ok {
			j = uint8(len(pal))
			index[c] = j
			pal = append(pal, c)
		}
		p.Pix[i/4] = j
	}
	p.Palette = pal
	return p
}

func encodeJPEG(tb testing.TB, img image.Image) []byte {
	tb.Helper()
	var buf bytes.Buffer
	require.NoError(tb, jpeg.Encode(&buf, img, &jpeg.Options{Quality: 95}))
	return buf.Bytes()
}

func encodePNG(tb testing.TB, img image.Image) []byte {
	tb.Helper()
	var buf bytes.Buffer
	require.NoError(tb, png.Encode(&buf, img))
	return buf.Bytes()
}

func encodeGIF(tb testing.TB, img image.Image) []byte {
	tb.Helper()
	var buf bytes.Buffer
	require.NoError(tb, gif.Encode(&buf, img, nil))
	return buf.Bytes()
}

func readFile(tb testing.TB, name string) []byte {
	tb.Helper()
	p, err := os.ReadFile(name)
	require.NoError(tb, err)
	return p
}

// near reports whether two colors differ by at most tol in each channel
// (alpha included), after lossy encoding.
func near(a, b color.Color, tol int) bool {
	ar, ag, ab, aa := a.RGBA()
	br, bg, bb, ba := b.RGBA()
	d := func(x, y uint32) bool { return abs(int(x>>8)-int(y>>8)) <= tol }
	return d(ar, br) && d(ag, bg) && d(ab, bb) && d(aa, ba)
}

func abs(x int) int { return max(x, -x) }

func TestInspect(t *testing.T) {
	m := New(nil)
	for _, tc := range []struct {
		name    string
		data    []byte
		typ     string
		w, h    int
		wantErr error
	}{
		{"jpeg", encodeJPEG(t, quadrants(300, 200, false)), "image/jpeg", 300, 200, nil},
		{"png", encodePNG(t, quadrants(30, 70, true)), "image/png", 30, 70, nil},
		{"gif", encodeGIF(t, quadrants(64, 32, false)), "image/gif", 64, 32, nil},
		{"webp_lossy", readFile(t, "testdata/blue-purple-pink.lossy.webp"), "image/webp", 150, 100, nil},
		{"webp_lossless_alpha", readFile(t, "testdata/gopher-doc.with-alpha.lossless.webp"), "image/webp", 75, 100, nil},
		{"webp_vp8x_alpha", readFile(t, "testdata/yellow_rose.lossy-with-alpha.webp"), "image/webp", 400, 301, nil},
		{"text", []byte("hello, world"), "", 0, 0, ErrNotImage},
		{"empty", nil, "", 0, 0, ErrNotImage},
		{"bmp", []byte("BM\x46\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00"), "", 0, 0, ErrNotImage},
		{"truncated_png_header", encodePNG(t, quadrants(4, 4, false))[:20], "", 0, 0, ErrNotImage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := m.Inspect(bytes.NewReader(tc.data))
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, Info{Type: tc.typ, Width: tc.w, Height: tc.h}, info)
		})
	}
}

func TestMakeSizesAndTypes(t *testing.T) {
	m := New(nil)
	for _, tc := range []struct {
		name     string
		data     []byte
		typ      string // of the previews
		large    [2]int
		small    [2]int
		opaque   bool
		quadrant bool // the source is quadrants(): check the colors
	}{
		// 2,048 / 1,024 = 2: the box alone, 2 times, and the small 4
		// times the large.
		{"jpeg_landscape", encodeJPEG(t, quadrants(2048, 1536, false)), "image/jpeg", [2]int{1024, 768}, [2]int{256, 192}, true, true},
		{"jpeg_portrait", encodeJPEG(t, quadrants(1500, 2000, false)), "image/jpeg", [2]int{750, 1000}, [2]int{188, 250}, true, true},
		// 2,053 / 1,024 = 2.005: a box of 3 would give 684 (67%), so a
		// box of 2 and ApproxBiLinear to the exact size.
		{"jpeg_odd", encodeJPEG(t, quadrants(2053, 1031, false)), "image/jpeg", [2]int{1024, 514}, [2]int{256, 129}, true, true},
		{"jpeg_gray", encodeJPEG(t, image.NewGray(image.Rect(0, 0, 3000, 900))), "image/jpeg", [2]int{1000, 300}, [2]int{250, 75}, true, false},
		{"png_opaque", encodePNG(t, quadrants(800, 400, false)), "image/jpeg", [2]int{800, 400}, [2]int{256, 128}, true, true},
		{"png_alpha", encodePNG(t, quadrants(1600, 800, true)), "image/png", [2]int{1024, 512}, [2]int{256, 128}, false, true},
		{"png_small_never_upscaled", encodePNG(t, quadrants(200, 100, true)), "image/png", [2]int{200, 100}, [2]int{200, 100}, false, true},
		{"png_between", encodePNG(t, quadrants(600, 300, false)), "image/jpeg", [2]int{600, 300}, [2]int{256, 128}, true, true},
		{"gif_opaque", encodeGIF(t, paletted(quadrants(1200, 1200, false))), "image/jpeg", [2]int{1024, 1024}, [2]int{256, 256}, true, true},
		{"webp_lossy", readFile(t, "testdata/blue-purple-pink.lossy.webp"), "image/jpeg", [2]int{150, 100}, [2]int{150, 100}, true, false},
		{"webp_lossless_alpha", readFile(t, "testdata/gopher-doc.with-alpha.lossless.webp"), "image/png", [2]int{75, 100}, [2]int{75, 100}, false, false},
		{"webp_lossy_alpha", readFile(t, "testdata/yellow_rose.lossy-with-alpha.webp"), "image/png", [2]int{400, 301}, [2]int{256, 193}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ps, err := m.Make(context.Background(), bytes.NewReader(tc.data), Small, Large)
			require.NoError(t, err)
			require.Len(t, ps, 2)
			for i, want := range [][2]int{tc.small, tc.large} {
				p := ps[i]
				assert.Equal(t, []int{Small, Large}[i], p.Bound)
				assert.Equal(t, tc.typ, p.Type)
				assert.Equal(t, want, [2]int{p.Width, p.Height})
				img, format, err := image.Decode(bytes.NewReader(p.Data))
				require.NoError(t, err)
				assert.Equal(t, "image/"+format, p.Type, "the bytes are of the type said")
				assert.Equal(t, want, [2]int{img.Bounds().Dx(), img.Bounds().Dy()})
				if !tc.quadrant {
					continue
				}
				// Sample the middle of each quadrant: a box or plane
				// mixed up (chroma shifted, rows swapped) shows here.
				w, h := img.Bounds().Dx(), img.Bounds().Dy()
				src := quadrants(4, 4, !tc.opaque)
				for _, q := range [][2]int{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
					got := img.At(w/4+q[0]*w/2, h/4+q[1]*h/2)
					want := src.At(q[0]*2, q[1]*2)
					assert.True(t, near(got, want, 12), "quadrant %v: got %v, want %v", q, got, want)
				}
			}
		})
	}
}

func TestMakeOrderOfBounds(t *testing.T) {
	data := encodeJPEG(t, quadrants(1500, 1000, false))
	info, ps, err := New(nil).Make(context.Background(), bytes.NewReader(data), Large, 100, Small)
	require.NoError(t, err)
	assert.Equal(t, Info{Type: "image/jpeg", Width: 1500, Height: 1000}, info)
	require.Len(t, ps, 3)
	// 1,500 → 1,024 (ApproxBiLinear: a box of 2 would give 750) → 256 (a
	// box of 4) → 100 (a box of 2 and ApproxBiLinear: 3 would give 86).
	assert.Equal(t, [][3]int{{1024, 1024, 683}, {100, 100, 67}, {256, 256, 171}},
		[][3]int{{ps[0].Bound, ps[0].Width, ps[0].Height}, {ps[1].Bound, ps[1].Width, ps[1].Height}, {ps[2].Bound, ps[2].Width, ps[2].Height}})
	_, _, err = New(nil).Make(context.Background(), bytes.NewReader(data), 0)
	require.Error(t, err)
}

func TestMakeErrors(t *testing.T) {
	m := New(nil)
	good := synthPhoto(256, 256, 1).data
	_, _, err := m.Make(context.Background(), bytes.NewReader([]byte("%PDF-1.7 not an image")), Small)
	require.ErrorIs(t, err, ErrNotImage)

	// The header reads well, the data stops short.
	_, _, err = m.Make(context.Background(), bytes.NewReader(good[:len(good)/2]), Small)
	require.ErrorIs(t, err, ErrCorrupt)
	require.NotErrorIs(t, err, ErrNotImage)

	// A reader that cannot seek back.
	_, _, err = m.Make(context.Background(), noSeek{bytes.NewReader(good)}, Small)
	require.ErrorContains(t, err, "seek")
}

type noSeek struct{ io.Reader }

func (noSeek) Seek(int64, int) (int64, error) { return 0, errors.New("cannot seek") }

// TestMakeWaitsForItsTurn: with every decode slot taken, Make waits, and
// gives up with its context.
func TestMakeWaitsForItsTurn(t *testing.T) {
	m := New(&Options{MaxDecodes: 1})
	m.sem <- struct{}{} // another decode is under way
	data := encodeJPEG(t, quadrants(64, 64, false))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, err := m.Make(ctx, bytes.NewReader(data), Small)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	done := make(chan error, 1)
	go func() {
		_, _, err := m.Make(context.Background(), bytes.NewReader(data), Small)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Make returned (%v) while the only slot was taken", err)
	case <-time.After(50 * time.Millisecond):
	}
	<-m.sem // the other decode ends
	require.NoError(t, <-done)
}

// pngHeader returns the first chunks of a PNG of w × h RGBA pixels: the
// signature, IHDR and the start of an IDAT that claims n bytes of data
// (not there). The header is all a decoder needs to claim the memory.
func pngHeader(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		_ = binary.Write(&b, binary.BigEndian, uint32(len(data)))
		crc := crc32.NewIEEE()
		crc.Write([]byte(typ))
		crc.Write(data)
		b.WriteString(typ)
		b.Write(data)
		_ = binary.Write(&b, binary.BigEndian, crc.Sum32())
	}
	ihdr := binary.BigEndian.AppendUint32(nil, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 6, 0, 0, 0) // 8-bit RGBA, deflate, no filter, no interlace
	chunk("IHDR", ihdr)
	chunk("IDAT", bytes.Repeat([]byte{0x78}, 1<<10))
	return b.Bytes()
}

// jpegHeader returns a JPEG's start of image, a baseline frame header of
// w × h with three components (4:2:0), and the start of a scan.
func jpegHeader(w, h uint16) []byte {
	return []byte{0xff, 0xd8,
		0xff, 0xc0, 0, 17, 8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1,
		0xff, 0xda, 0, 12, 3, 1, 0, 2, 0x11, 3, 0x11, 0, 0x3f, 0}
}

// gifHeader returns a GIF's header and logical screen of w × h.
func gifHeader(w, h uint16) []byte {
	return []byte{'G', 'I', 'F', '8', '9', 'a', byte(w), byte(w >> 8), byte(h), byte(h >> 8), 0, 0, 0}
}

// webpHeader returns a WebP with a VP8X chunk of a w × h canvas.
func webpHeader(w, h uint32) []byte {
	vp8x := []byte{'V', 'P', '8', 'X', 10, 0, 0, 0, 0, 0, 0, 0,
		byte(w - 1), byte((w - 1) >> 8), byte((w - 1) >> 16), byte(h - 1), byte((h - 1) >> 8), byte((h - 1) >> 16)}
	riff := append([]byte("RIFF"), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(riff[4:], uint32(4+len(vp8x)))
	return append(append(riff, "WEBP"...), vp8x...)
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.ReadSeeker
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) Seek(off int64, whence int) (int64, error) { return c.r.Seek(off, whence) }

// TestTooLargeCostsItsHeader: a 20,000 × 20,000 image (400 million pixels,
// 1.6 GB decoded) gets no preview, is refused from its header, and
// allocates next to nothing (the target: at most 64 MiB).
func TestTooLargeCostsItsHeader(t *testing.T) {
	m := New(nil) // the default limit, 50 million pixels
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"png", pngHeader(20000, 20000)},
		{"jpeg", jpegHeader(20000, 20000)},
		{"gif", gifHeader(20000, 20000)},
		{"webp", webpHeader(20000, 20000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &countingReader{r: bytes.NewReader(tc.data)}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			info, ps, err := m.Make(context.Background(), r, Small, Large)
			runtime.ReadMemStats(&after)

			require.ErrorIs(t, err, ErrTooLarge)
			var tl *TooLargeError
			require.ErrorAs(t, err, &tl)
			assert.Equal(t, TooLargeError{Width: 20000, Height: 20000, MaxPixels: DefaultMaxPixels}, *tl)
			assert.Equal(t, 20000, info.Width)
			assert.Nil(t, ps)
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s: allocated %d bytes, read %d bytes", tc.name, allocated, r.n)
			assert.LessOrEqual(t, allocated, uint64(64<<20), "the target")
			assert.Less(t, allocated, uint64(1<<20), "a header's worth")
		})
	}
	// Just under the limit, the same header is accepted by Inspect.
	info, err := m.Inspect(bytes.NewReader(pngHeader(10000, 5000)))
	require.NoError(t, err)
	assert.Equal(t, Info{Type: "image/png", Width: 10000, Height: 5000}, info)
	_, err = m.Inspect(bytes.NewReader(pngHeader(10000, 5001)))
	require.ErrorIs(t, err, ErrTooLarge)
}

// TestShrinkMatchesReference: the plane box filter gives the colors the
// generic one (the means of each pixel's RGBA, as image.Image reports
// them) gives, for every YCbCr subsampling, odd sizes and partial blocks.
func TestShrinkMatchesReference(t *testing.T) {
	ratios := []image.YCbCrSubsampleRatio{
		image.YCbCrSubsampleRatio444, image.YCbCrSubsampleRatio422, image.YCbCrSubsampleRatio420,
		image.YCbCrSubsampleRatio440, image.YCbCrSubsampleRatio411, image.YCbCrSubsampleRatio410,
	}
	for _, r := range ratios {
		for _, size := range [][2]int{{64, 48}, {67, 45}, {13, 7}, {5, 3}} {
			for _, k := range []int{2, 3, 4} {
				src := image.NewYCbCr(image.Rect(0, 0, size[0], size[1]), r)
				// Smooth planes: a block's colors then stay close, and
				// the mean of the conversions is near the conversion of
				// the means.
				for y := range size[1] {
					for x := range size[0] {
						src.Y[src.YOffset(x, y)] = uint8(40 + x + y)
						src.Cb[src.COffset(x, y)] = uint8(100 + x/4 + y/4)
						src.Cr[src.COffset(x, y)] = uint8(160 - x/4 + y/8)
					}
				}
				got := shrink(src, k)
				want := shrinkAny(src, k, ceilDiv(size[0], k), ceilDiv(size[1], k))
				require.Equal(t, want.Bounds(), got.Bounds(), "%v %v k=%d", r, size, k)
				for y := range want.Bounds().Dy() {
					for x := range want.Bounds().Dx() {
						if !near(got.At(x, y), want.At(x, y), 6) {
							t.Fatalf("%v %v k=%d: at %d,%d got %v, want %v", r, size, k, x, y, got.At(x, y), want.At(x, y))
						}
					}
				}
			}
		}
	}
}

// TestShrinkExact: on planes of one channel the box gives the exact
// rounded means, partial edge blocks included.
func TestShrinkExact(t *testing.T) {
	src := image.NewGray(image.Rect(0, 0, 5, 3))
	copy(src.Pix, []byte{
		0, 10, 20, 30, 40,
		50, 60, 70, 80, 90,
		100, 110, 120, 130, 255,
	})
	got := shrink(src, 2).(*image.Gray)
	assert.Equal(t, image.Rect(0, 0, 3, 2), got.Rect)
	assert.Equal(t, []byte{
		30, 50, 65, // (0+10+50+60)/4, (20+30+70+80)/4, (40+90)/2
		105, 125, 255, // (100+110)/2, (120+130)/2, 255
	}, got.Pix)

	// RGBA is premultiplied: a transparent pixel adds nothing to the
	// colors of its block.
	rgba := image.NewRGBA(image.Rect(0, 0, 2, 1))
	copy(rgba.Pix, []byte{200, 0, 0, 200, 0, 0, 0, 0})
	assert.Equal(t, []byte{100, 0, 0, 100}, shrink(rgba, 2).(*image.RGBA).Pix)
}

func TestToNRGBA(t *testing.T) {
	src := image.NewRGBA(image.Rect(0, 0, 3, 1))
	copy(src.Pix, []byte{100, 50, 0, 200, 0, 0, 0, 0, 1, 2, 3, 255})
	got := toNRGBA(src).(*image.NRGBA)
	assert.Equal(t, []byte{128, 64, 0, 200, 0, 0, 0, 0, 1, 2, 3, 255}, got.Pix)
}

func TestFit(t *testing.T) {
	for _, tc := range [][5]int{
		{4032, 3024, 1024, 1024, 768},
		{3024, 4032, 256, 192, 256},
		{100, 50, 256, 100, 50},
		{10000, 1, 256, 256, 1},
		{1, 10000, 256, 1, 256},
		{2049, 1023, 1024, 1024, 511},
	} {
		w, h := fit(tc[0], tc[1], tc[2])
		assert.Equal(t, [2]int{tc[3], tc[4]}, [2]int{w, h}, "%v", tc)
	}
}

// TestGIFTransparency: a GIF whose palette has a transparent entry in use
// gets PNG previews; one whose transparent entry is unused, JPEG.
func TestGIFTransparency(t *testing.T) {
	pal := append(color.Palette{color.RGBA{}}, palette.Plan9[1:]...)
	img := image.NewPaletted(image.Rect(0, 0, 40, 40), pal)
	for i := range img.Pix {
		img.Pix[i] = 5
	}
	_, ps, err := New(nil).Make(context.Background(), bytes.NewReader(encodeGIF(t, img)), Small)
	require.NoError(t, err)
	assert.Equal(t, "image/jpeg", ps[0].Type, "no transparent pixel")

	img.Pix[0] = 0
	_, ps, err = New(nil).Make(context.Background(), bytes.NewReader(encodeGIF(t, img)), Small)
	require.NoError(t, err)
	assert.Equal(t, "image/png", ps[0].Type, "one transparent pixel")
}

// TestMakeWaitsForMemory: a decode waits until its estimated memory fits
// beside the others'; one estimated beyond the whole bound waits to be
// alone, and is then made.
func TestMakeWaitsForMemory(t *testing.T) {
	m := New(&Options{MaxDecodes: 4, MaxDecodeBytes: 1 << 20})
	data := encodeJPEG(t, quadrants(2000, 1000, false)) // 2 MP: about 3.6 MiB estimated
	require.True(t, m.mem.TryAcquire(1))                // another decode holds a byte
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, err := m.Make(ctx, bytes.NewReader(data), Small)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	m.mem.Release(1)
	_, ps, err := m.Make(context.Background(), bytes.NewReader(data), Small)
	require.NoError(t, err)
	assert.Equal(t, 250, ps[0].Width) // a box of 8
}

func TestDecodeCost(t *testing.T) {
	// A baseline JPEG's frame header, with the components' sampling.
	sof := func(marker byte, hv ...byte) []byte {
		b := []byte{0xff, 0xd8, 0xff, 0xe0, 0, 4, 'J', 'F', 0xff, 0xff, marker, 0, byte(8 + 3*len(hv)), 8, 0, 10, 0, 10, byte(len(hv))}
		for i, f := range hv {
			b = append(b, byte(i+1), f, 0)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		head []byte
		want float64
	}{
		{"baseline_420", sof(0xc0, 0x22, 0x11, 0x11), 1.5},
		{"baseline_444", sof(0xc0, 0x11, 0x11, 0x11), 3},
		{"extended_422", sof(0xc1, 0x21, 0x11, 0x11), 2},
		{"progressive_420", sof(0xc2, 0x22, 0x11, 0x11), 7.5},
		{"gray", sof(0xc0, 0x11), 1},
		{"cmyk", sof(0xc0, 0x11, 0x11, 0x11, 0x11), 8},
		{"go_encoder", encodeJPEG(t, quadrants(64, 64, false)), 1.5},
		{"no_frame_header", []byte{0xff, 0xd8, 0xff, 0xe1, 0xff, 0xff}, 15},
		{"garbage", []byte{0xff, 0xd8, 0x00, 0x11, 0x22, 0x33}, 15},
		{"zero_sampling", sof(0xc0, 0x00, 0x11, 0x11), 15},
		{"cut_short", sof(0xc0, 0x22, 0x11, 0x11)[:22], 15},
	} {
		assert.Equal(t, tc.want, jpegPerPixel(tc.head), tc.name)
	}
	if p := realPhotos(); len(p) > 0 {
		assert.Equal(t, 7.5, jpegPerPixel(p[0].data), "%s is progressive 4:2:0", p[0].name)
	}
}

// TestGIFFirstFrameSmallerThanScreen: a GIF whose first frame covers part
// of its logical screen (as animations optimized frame by frame do) gets
// previews of the screen's size, the frame where it lies and the rest
// transparent, as a browser shows it.
func TestGIFFirstFrameSmallerThanScreen(t *testing.T) {
	red := color.RGBA{255, 0, 0, 255}
	for _, pal := range []color.Palette{
		{red, color.RGBA{0, 0, 255, 255}},
		append(color.Palette{red}, palette.Plan9[1:]...), // full, none transparent: an unused entry becomes it
	} {
		frame := image.NewPaletted(image.Rect(20, 10, 60, 40), pal)
		var buf bytes.Buffer
		require.NoError(t, gif.EncodeAll(&buf, &gif.GIF{
			Image: []*image.Paletted{frame}, Delay: []int{0},
			Config: image.Config{Width: 100, Height: 60, ColorModel: pal},
		}))
		info, ps, err := New(nil).Make(context.Background(), bytes.NewReader(buf.Bytes()), Small)
		require.NoError(t, err)
		assert.Equal(t, [2]int{100, 60}, [2]int{info.Width, info.Height})
		assert.Equal(t, [2]int{100, 60}, [2]int{ps[0].Width, ps[0].Height})
		img, _, err := image.Decode(bytes.NewReader(ps[0].Data))
		require.NoError(t, err)
		assert.True(t, near(img.At(40, 25), red, 8), "the frame, where it lies")
		assert.Equal(t, "image/png", ps[0].Type)
		_, _, _, a := img.At(5, 5).RGBA()
		assert.Zero(t, a, "the rest of the screen is transparent")
	}
}
