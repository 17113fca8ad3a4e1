package preview

import (
	"image"
	"image/color"
	"image/draw"
	"math"

	xdraw "golang.org/x/image/draw"
)

// Scaling down. A box filter shrinks the image by an integer factor k:
// each pixel the mean of a k × k block, computed on the decoded planes
// themselves (a JPEG's Y, Cb and Cr, which keep their subsampling), one
// pass over the source's bytes: 13–16 ms for a 12 MP photo on the 2-core
// machine of BENCHMARKS.md, a few percent of its decode. Where the factor
// that fits the image within the bound lands within boxOnly of the bound,
// the box alone makes the preview: a 12 MP photo (4,032 × 3,024) shrunk 4
// times is 1,008 × 756, and 4 times again 252 × 189. Else the box shrinks
// by the largest factor that keeps the image at least as large as the
// preview, and x/image/draw's ApproxBiLinear takes it to the exact size, a
// reduction of less than 2× that blends the 4 nearest pixels (the two
// together: 51–75 ms for the same photo, when it must be exactly 1,024).
// Without the box, ApproxBiLinear skips most of the pixels of a 4×
// reduction and a photo's noise comes out as grain. The kernels (BiLinear,
// CatmullRom) look no better after the box, take 95–250 ms, and hold a
// float64 buffer of preview width × source height × 4 (38 MB after the
// box; 100 MB without it, where they take 0.4–1.3 s). BENCHMARKS.md §9 has
// the figures (BenchmarkScalers, BenchmarkSteps).

// boxOnly is how close to the bound the box alone must land.
const boxOnly = 0.9

// scale returns src scaled down to fit within bound × bound (src itself
// when it fits already): by the box filter alone where that lands within
// boxOnly of the bound, else exactly (resize).
func scale(src image.Image, bound int) image.Image {
	sw, sh := src.Bounds().Dx(), src.Bounds().Dy()
	if sw <= bound && sh <= bound {
		return src
	}
	f := float64(max(sw, sh)) / float64(bound)
	if k := int(math.Ceil(f)); usebox && k <= maxBox && f/float64(k) >= boxOnly {
		return shrink(src, k)
	}
	w, h := fit(sw, sh, bound)
	return resize(src, w, h)
}

// scaler takes the box-filtered image to its exact size.
var scaler xdraw.Interpolator = xdraw.ApproxBiLinear

// usebox turns the box filter off, for the benchmarks that compare.
var usebox = true

// resize returns src scaled to w × h, which is no larger than src; src
// itself when it has that size already.
func resize(src image.Image, w, h int) image.Image {
	sw, sh := src.Bounds().Dx(), src.Bounds().Dy()
	if sw == w && sh == h {
		return src
	}
	if k := min(sw/w, sh/h, maxBox); k >= 2 && usebox {
		src = shrink(src, k)
		sw, sh = src.Bounds().Dx(), src.Bounds().Dy()
		if sw == w && sh == h {
			return src
		}
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	scaler.Scale(dst, dst.Bounds(), src, src.Bounds(), xdraw.Src, nil)
	return dst
}

// shrink returns src shrunk k times in each direction (rounded up: a
// partial block at the right or bottom edge is the mean of what it holds).
func shrink(src image.Image, k int) image.Image {
	b := src.Bounds()
	dw, dh := ceilDiv(b.Dx(), k), ceilDiv(b.Dy(), k)
	switch s := src.(type) {
	case *image.YCbCr:
		if b.Min != (image.Point{}) {
			break // the plane arithmetic below assumes an origin at 0, 0
		}
		d := image.NewYCbCr(image.Rect(0, 0, dw, dh), s.SubsampleRatio)
		boxPlane(d.Y, d.YStride, dw, dh, s.Y, s.YStride, b.Dx(), b.Dy(), k, 1)
		csw, csh := chromaSize(s.SubsampleRatio, b.Dx(), b.Dy())
		cdw, cdh := chromaSize(s.SubsampleRatio, dw, dh)
		boxPlane(d.Cb, d.CStride, cdw, cdh, s.Cb, s.CStride, csw, csh, k, 1)
		boxPlane(d.Cr, d.CStride, cdw, cdh, s.Cr, s.CStride, csw, csh, k, 1)
		return d
	case *image.Gray:
		d := image.NewGray(image.Rect(0, 0, dw, dh))
		boxPlane(d.Pix, d.Stride, dw, dh, s.Pix[s.PixOffset(b.Min.X, b.Min.Y):], s.Stride, b.Dx(), b.Dy(), k, 1)
		return d
	case *image.RGBA: // premultiplied: the mean of each channel is right
		d := image.NewRGBA(image.Rect(0, 0, dw, dh))
		boxPlane(d.Pix, d.Stride, dw, dh, s.Pix[s.PixOffset(b.Min.X, b.Min.Y):], s.Stride, b.Dx(), b.Dy(), k, 4)
		return d
	}
	return shrinkAny(src, k, dw, dh)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// chromaSize returns the size of the chroma planes of a w × h image with
// its origin at 0, 0, as image.NewYCbCr lays them out.
func chromaSize(r image.YCbCrSubsampleRatio, w, h int) (int, int) {
	switch r {
	case image.YCbCrSubsampleRatio422:
		return (w + 1) / 2, h
	case image.YCbCrSubsampleRatio420:
		return (w + 1) / 2, (h + 1) / 2
	case image.YCbCrSubsampleRatio440:
		return w, (h + 1) / 2
	case image.YCbCrSubsampleRatio411:
		return (w + 3) / 4, h
	case image.YCbCrSubsampleRatio410:
		return (w + 3) / 4, (h + 1) / 2
	}
	return w, h
}

// boxPlane writes into dst (dw × dh pixels of ch interleaved bytes) the
// means of the k × k blocks of src (sw × sh pixels). A block that starts
// beyond src (a chroma plane rounded up) takes the last row or column.
//
// k is at most maxBox, so that a block's sum fits in a uint32.
func boxPlane(dst []byte, dstStride, dw, dh int, src []byte, srcStride, sw, sh, k, ch int) {
	sums := make([]uint32, dw*ch)
	for dy := range dh {
		y0 := min(dy*k, sh-1)
		y1 := min(y0+k, sh)
		clear(sums)
		for y := y0; y < y1; y++ {
			row := src[y*srcStride : y*srcStride+sw*ch]
			if ch == 1 {
				addRow(sums, row, k)
				continue
			}
			for dx := range dw {
				x0 := min(dx*k, sw-1)
				sum := sums[dx*ch : dx*ch+ch]
				for x := x0; x < min(x0+k, sw); x++ {
					for c, v := range row[x*ch : x*ch+ch] {
						sum[c] += uint32(v)
					}
				}
			}
		}
		out := dst[dy*dstStride : dy*dstStride+dw*ch]
		n := uint32((y1 - y0) * k) // a whole block's pixels
		for i, s := range sums[:min(dw, sw/k)*ch] {
			out[i] = uint8((s + n/2) / n)
		}
		for dx := sw / k; dx < dw; dx++ { // the partial blocks at the end
			x0 := min(dx*k, sw-1)
			n := uint32((y1 - y0) * (min(x0+k, sw) - x0))
			for c := range ch {
				out[dx*ch+c] = uint8((sums[dx*ch+c] + n/2) / n)
			}
		}
	}
}

// maxBox is the largest factor of the box filter.
const maxBox = 4096

// addRow adds to each sums[dx] the bytes row[dx*k : dx*k+k] (fewer at the
// end; a block that starts beyond the row takes its last byte): the inner
// loop of the box filter on a plane, written out for the usual factors.
func addRow(sums []uint32, row []byte, k int) {
	full := min(len(sums), len(row)/k)
	switch k {
	case 2:
		for dx := range full {
			p := row[2*dx : 2*dx+2 : 2*dx+2]
			sums[dx] += uint32(p[0]) + uint32(p[1])
		}
	case 3:
		for dx := range full {
			p := row[3*dx : 3*dx+3 : 3*dx+3]
			sums[dx] += uint32(p[0]) + uint32(p[1]) + uint32(p[2])
		}
	case 4:
		for dx := range full {
			p := row[4*dx : 4*dx+4 : 4*dx+4]
			sums[dx] += uint32(p[0]) + uint32(p[1]) + uint32(p[2]) + uint32(p[3])
		}
	default:
		for dx := range full {
			var s uint32
			for _, v := range row[dx*k : dx*k+k] {
				s += uint32(v)
			}
			sums[dx] += s
		}
	}
	for dx := full; dx < len(sums); dx++ {
		x0 := min(dx*k, len(row)-1)
		for _, v := range row[x0:min(x0+k, len(row))] {
			sums[dx] += uint32(v)
		}
	}
}

// shrinkAny is shrink for the other image types (paletted, 16-bit, NRGBA,
// CMYK, …): the means of the premultiplied colors, to RGBA.
func shrinkAny(src image.Image, k, dw, dh int) *image.RGBA {
	b := src.Bounds()
	d := image.NewRGBA(image.Rect(0, 0, dw, dh))
	at := func(x, y int) color.RGBA64 {
		r, g, bl, a := src.At(x, y).RGBA()
		return color.RGBA64{uint16(r), uint16(g), uint16(bl), uint16(a)}
	}
	if s, ok := src.(image.RGBA64Image); ok {
		at = s.RGBA64At
	}
	sums := make([]uint64, dw*4)
	for dy := range dh {
		y0 := b.Min.Y + dy*k
		y1 := min(y0+k, b.Max.Y)
		clear(sums)
		for y := y0; y < y1; y++ {
			for dx := range dw {
				x0 := b.Min.X + dx*k
				sum := sums[dx*4 : dx*4+4]
				for x := x0; x < min(x0+k, b.Max.X); x++ {
					c := at(x, y)
					sum[0] += uint64(c.R)
					sum[1] += uint64(c.G)
					sum[2] += uint64(c.B)
					sum[3] += uint64(c.A)
				}
			}
		}
		out := d.Pix[dy*d.Stride : dy*d.Stride+dw*4]
		for dx := range dw {
			x0 := b.Min.X + dx*k
			n := uint64((y1 - y0) * (min(x0+k, b.Max.X) - x0))
			for c := range 4 {
				out[dx*4+c] = uint8((sums[dx*4+c] + n/2) / n >> 8)
			}
		}
	}
	return d
}

// toNRGBA returns img as non-premultiplied RGBA, which the PNG encoder
// writes without converting pixel by pixel.
func toNRGBA(img image.Image) image.Image {
	switch s := img.(type) {
	case *image.NRGBA, *image.Paletted, *image.Gray:
		return img
	case *image.RGBA:
		d := image.NewNRGBA(s.Rect)
		w := s.Rect.Dx() * 4
		for y := range s.Rect.Dy() {
			from := s.Pix[y*s.Stride : y*s.Stride+w]
			to := d.Pix[y*d.Stride : y*d.Stride+w]
			for i := 0; i < w; i += 4 {
				p, q := from[i:i+4:i+4], to[i:i+4:i+4]
				switch a := uint32(p[3]); a {
				case 0:
				case 0xff:
					copy(q, p)
				default:
					q[0] = uint8((uint32(p[0])*0xff + a/2) / a)
					q[1] = uint8((uint32(p[1])*0xff + a/2) / a)
					q[2] = uint8((uint32(p[2])*0xff + a/2) / a)
					q[3] = uint8(a)
				}
			}
		}
		return d
	}
	d := image.NewNRGBA(img.Bounds())
	draw.Draw(d, d.Rect, img, img.Bounds().Min, draw.Src)
	return d
}
