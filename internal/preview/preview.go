// Package preview reads the size of JPEG, PNG, GIF and WebP images and
// makes small previews of them, within a bound on memory.
//
// A Maker reads an image's header first (image.DecodeConfig) and refuses an
// image beyond its pixel count before any decoding, so that such an image
// costs no more memory than its header. It decodes at most a configured
// number of images at once; every preview of an image comes from one
// decode. A preview fits within a square bound (256 or 1,024 pixels for
// the API's small and large) and never upscales; it is a JPEG for an
// opaque source and a PNG for a source with transparency.
//
// The package knows nothing of attachments or buckets: it reads an
// io.Reader and returns bytes.
package preview

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"runtime"

	"golang.org/x/image/webp"
	"golang.org/x/sync/semaphore"
)

// The bounds of the API's two previews, in pixels.
const (
	Small = 256
	Large = 1024
)

// DefaultMaxPixels is the largest width × height a Maker decodes when
// Options.MaxPixels is 0.
const DefaultMaxPixels = 50_000_000

// ErrNotImage is returned for data that is not a JPEG, PNG, GIF or WebP
// image, or whose header cannot be read.
var ErrNotImage = errors.New("preview: not a JPEG, PNG, GIF or WebP image")

// ErrTooLarge matches every *TooLargeError (errors.Is).
var ErrTooLarge = errors.New("preview: image beyond the pixel limit")

// ErrCorrupt is returned for an image whose header reads well but whose
// data does not decode.
var ErrCorrupt = errors.New("preview: image data cannot be decoded")

// TooLargeError says that an image has more pixels than the Maker's
// limit; it was refused after its header was read, before any decoding.
type TooLargeError struct {
	Width, Height int   // as the header says
	MaxPixels     int64 // the limit
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("preview: a %d × %d image is beyond the limit of %d pixels", e.Width, e.Height, e.MaxPixels)
}

// Is reports whether target is ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Options configure a Maker. The zero value means the defaults.
type Options struct {
	// MaxPixels is the largest width × height that is decoded; an image
	// beyond it gets a *TooLargeError. Default DefaultMaxPixels (50
	// million). Decoding holds 1 to 24 bytes a pixel (see MaxDecodeBytes)
	// while the previews are made.
	MaxPixels int64
	// MaxDecodes is how many images are decoded at once; more callers of
	// Make wait their turn (or for their context). Default
	// runtime.GOMAXPROCS(0): decoding is CPU-bound.
	MaxDecodes int
	// MaxDecodeBytes bounds the memory that the decodes under way hold
	// together, as estimated from each image's header before it is
	// decoded: its pixels times what its format takes a pixel (1.5 bytes
	// for a baseline 4:2:0 JPEG, 7.5 for a progressive one, whose decoder
	// keeps every coefficient, 4 for an RGBA PNG, 8 for a 16-bit one),
	// plus a quarter for the scaling. A decode waits until its estimate
	// fits beside the others; one estimated beyond the whole bound waits
	// to be alone. Default 128 MiB: a 12 MP progressive JPEG (estimated
	// 109 MiB) is decoded alone, baseline ones (22 MiB) MaxDecodes at a
	// time. (The Go heap may grow to twice what is live under the default
	// GOGC; a host that bounds its memory sets GOMEMLIMIT.)
	MaxDecodeBytes int64
	// Quality is the JPEG quality of the previews of opaque images, 1 to
	// 100. Default 80.
	Quality int
}

// A Maker reads image headers and makes previews. It is safe for
// concurrent use.
type Maker struct {
	maxPixels int64
	maxBytes  int64
	quality   int
	sem       chan struct{}       // a slot per decode under way
	mem       *semaphore.Weighted // the estimated bytes they hold
}

// New returns a Maker; opts may be nil.
func New(opts *Options) *Maker {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxPixels <= 0 {
		o.MaxPixels = DefaultMaxPixels
	}
	if o.MaxDecodes <= 0 {
		o.MaxDecodes = runtime.GOMAXPROCS(0)
	}
	if o.MaxDecodeBytes <= 0 {
		o.MaxDecodeBytes = 128 << 20
	}
	if o.Quality <= 0 || o.Quality > 100 {
		o.Quality = 80
	}
	return &Maker{
		maxPixels: o.MaxPixels,
		maxBytes:  o.MaxDecodeBytes,
		quality:   o.Quality,
		sem:       make(chan struct{}, o.MaxDecodes),
		mem:       semaphore.NewWeighted(o.MaxDecodeBytes),
	}
}

// Info is what an image's header says.
type Info struct {
	Type          string // image/jpeg, image/png, image/gif or image/webp
	Width, Height int    // in pixels
}

// Preview is one preview of an image.
type Preview struct {
	Bound         int    // the bound it was made for
	Type          string // image/jpeg or image/png
	Width, Height int    // in pixels, within Bound
	Data          []byte // the encoded image
}

// format is one of the four formats the package reads.
type format struct {
	typ          string
	decodeConfig func(io.Reader) (image.Config, error)
	decode       func(io.Reader) (image.Image, error)
}

var formats = []struct {
	magic string // "?" matches any byte
	format
}{
	{"\xff\xd8\xff", format{"image/jpeg", jpeg.DecodeConfig, jpeg.Decode}},
	{"\x89PNG\r\n\x1a\n", format{"image/png", png.DecodeConfig, png.Decode}},
	{"GIF87a", format{"image/gif", gif.DecodeConfig, gif.Decode}},
	{"GIF89a", format{"image/gif", gif.DecodeConfig, gif.Decode}},
	{"RIFF????WEBPVP8", format{"image/webp", webp.DecodeConfig, webp.Decode}},
}

// Sniff returns the type of the image that head (the first 15 bytes of a
// file or more) starts like: image/jpeg, image/png, image/gif or
// image/webp; "" for anything else. It reads the magic numbers only.
func Sniff(head []byte) string {
	f, _ := sniffHead(head)
	return f.typ
}

// sniff returns the format of the data br starts with.
func sniff(br *bufio.Reader) (format, bool) {
	head, _ := br.Peek(15)
	return sniffHead(head)
}

func sniffHead(head []byte) (format, bool) {
next:
	for _, f := range formats {
		if len(head) < len(f.magic) {
			continue
		}
		for i := range len(f.magic) {
			if f.magic[i] != '?' && f.magic[i] != head[i] {
				continue next
			}
		}
		return f.format, true
	}
	return format{}, false
}

// Inspect reads the header of the image r starts with and returns its type
// and size. It reads only the header: what precedes the first frame's
// dimensions (a JPEG's metadata segments, a PNG's IHDR chunk). An image
// beyond the Maker's pixel limit gives a *TooLargeError (with its Info);
// data of another kind ErrNotImage.
func (m *Maker) Inspect(r io.Reader) (Info, error) {
	info, _, _, err := m.inspect(bufio.NewReader(r))
	return info, err
}

func (m *Maker) inspect(br *bufio.Reader) (Info, format, image.Config, error) {
	f, ok := sniff(br)
	if !ok {
		return Info{}, f, image.Config{}, ErrNotImage
	}
	c, err := f.decodeConfig(br)
	if err != nil {
		return Info{}, f, c, fmt.Errorf("%w: %s: %w", ErrNotImage, f.typ, err)
	}
	info := Info{Type: f.typ, Width: c.Width, Height: c.Height}
	if c.Width <= 0 || c.Height <= 0 {
		return info, f, c, fmt.Errorf("%w: %s of %d × %d pixels", ErrNotImage, f.typ, c.Width, c.Height)
	}
	if int64(c.Width)*int64(c.Height) > m.maxPixels {
		return info, f, c, &TooLargeError{Width: c.Width, Height: c.Height, MaxPixels: m.maxPixels}
	}
	return info, f, c, nil
}

// Make reads the image r holds and returns its Info and one preview for
// each bound, in the order of bounds: the image scaled down to fit within
// bound × bound pixels, keeping its aspect ratio, or at its own size when
// it fits already. A preview's longer side is the bound, or at least 90%
// of it where a box filter alone gets there (see scale). A preview is a JPEG when the image is opaque and a PNG
// when it has transparency. (An animated GIF's preview is its first
// frame, drawn on its logical screen: see onScreen.)
//
// Make reads the header, checks it as Inspect does, then seeks r back to
// its start and decodes the image once, when fewer than MaxDecodes other
// decodes are under way and its estimated memory fits within
// MaxDecodeBytes beside theirs (it waits for its turn or for ctx). The
// errors are Inspect's, ErrCorrupt for data that does not decode, ctx's
// error, and r's.
func (m *Maker) Make(ctx context.Context, r io.ReadSeeker, bounds ...int) (Info, []Preview, error) {
	for _, b := range bounds {
		if b <= 0 {
			return Info{}, nil, fmt.Errorf("preview: bound %d is not positive", b)
		}
	}
	br := bufio.NewReaderSize(r, 64<<10)
	info, f, c, err := m.inspect(br)
	if err != nil {
		return info, nil, err
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return info, nil, fmt.Errorf("preview: seek back to the start: %w", err)
	}
	br.Reset(r)

	select {
	case m.sem <- struct{}{}:
	case <-ctx.Done():
		return info, nil, ctx.Err()
	}
	defer func() { <-m.sem }()
	cost := min(decodeCost(f.typ, c, br), m.maxBytes)
	if err := m.mem.Acquire(ctx, cost); err != nil {
		return info, nil, err
	}
	defer m.mem.Release(cost)

	img, err := f.decode(br)
	if err != nil {
		return info, nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, f.typ, err)
	}
	if p, ok := img.(*image.Paletted); ok && f.typ == "image/gif" {
		img = onScreen(p, info.Width, info.Height)
	}
	if b := img.Bounds(); b.Dx() != info.Width || b.Dy() != info.Height {
		return info, nil, fmt.Errorf("%w: %s: decoded %d × %d pixels, the header says %d × %d",
			ErrCorrupt, f.typ, b.Dx(), b.Dy(), info.Width, info.Height)
	}
	previews, err := m.previews(img, bounds)
	return info, previews, err
}

// previews scales img down to each bound, largest first, each from the
// one before, and encodes them.
func (m *Maker) previews(img image.Image, bounds []int) ([]Preview, error) {
	opaque := isOpaque(img)
	order := make([]int, len(bounds)) // indexes of bounds, largest first
	for i := range order {
		order[i] = i
	}
	sortByBoundDesc(order, bounds)

	out := make([]Preview, len(bounds))
	src := img
	for _, i := range order {
		b := bounds[i]
		scaled := scale(src, b)
		p := Preview{Bound: b, Width: scaled.Bounds().Dx(), Height: scaled.Bounds().Dy()}
		var buf bytes.Buffer
		var err error
		if opaque {
			p.Type = "image/jpeg"
			err = jpeg.Encode(&buf, scaled, &jpeg.Options{Quality: m.quality})
		} else {
			p.Type = "image/png"
			err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, toNRGBA(scaled))
		}
		if err != nil {
			return nil, fmt.Errorf("preview: encode %s: %w", p.Type, err)
		}
		p.Data = buf.Bytes()
		out[i] = p
		src = scaled
	}
	return out, nil
}

func sortByBoundDesc(order, bounds []int) {
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && bounds[order[j]] > bounds[order[j-1]]; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
}

// fit returns the size of a w × h image scaled down to fit exactly within
// bound × bound, keeping its aspect ratio (at least 1 × 1), or w × h when
// it fits already.
func fit(w, h, bound int) (int, int) {
	if w <= bound && h <= bound {
		return w, h
	}
	if w >= h {
		return bound, max(1, int((int64(h)*int64(bound)+int64(w)/2)/int64(w)))
	}
	return max(1, int((int64(w)*int64(bound)+int64(h)/2)/int64(h))), bound
}

// isOpaque reports whether img has no transparent pixel, where its type
// can tell (image.Opaque); a type that cannot is taken as transparent.
func isOpaque(img image.Image) bool {
	o, ok := img.(interface{ Opaque() bool })
	return ok && o.Opaque()
}

// onScreen returns a GIF's first frame drawn on its logical screen of
// w × h pixels, which the frame may cover only in part (as the frames of an
// animation optimized frame by frame do): the rest transparent, as a
// browser shows it, at a byte a pixel as the frame is. The transparent
// entry is the palette's own, else one added, else one the frame does not
// use; a frame that uses every entry of a full palette, none transparent,
// leaves the rest in its first color. A frame that covers the screen, or
// lies outside it, is returned as it is.
func onScreen(frame *image.Paletted, w, h int) image.Image {
	screen := image.Rect(0, 0, w, h)
	if frame.Rect == screen || !frame.Rect.In(screen) {
		return frame
	}
	pal := frame.Palette
	clear := -1
	for i, c := range pal {
		if _, _, _, a := c.RGBA(); a == 0 {
			clear = i
			break
		}
	}
	if clear < 0 && len(pal) < 256 {
		pal = append(pal[:len(pal):len(pal)], color.RGBA{})
		clear = len(pal) - 1
	}
	if clear < 0 {
		var used [256]bool
		for _, i := range frame.Pix {
			used[i] = true
		}
		clear = 0
		for i := range pal {
			if !used[i] {
				pal = append(color.Palette(nil), pal...)
				pal[i] = color.RGBA{}
				clear = i
				break
			}
		}
	}
	out := image.NewPaletted(screen, pal)
	if clear != 0 {
		for i := range out.Pix {
			out.Pix[i] = uint8(clear)
		}
	}
	for y := frame.Rect.Min.Y; y < frame.Rect.Max.Y; y++ {
		copy(out.Pix[out.PixOffset(frame.Rect.Min.X, y):], frame.Pix[frame.PixOffset(frame.Rect.Min.X, y):frame.PixOffset(frame.Rect.Max.X, y)])
	}
	return out
}
