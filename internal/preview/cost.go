package preview

import (
	"bufio"
	"image"
	"image/color"
)

// decodeCost estimates the bytes that decoding an image of config c holds
// (see Options.MaxDecodeBytes); br is at the start of the image, whose
// first bytes a JPEG's estimate reads.
func decodeCost(typ string, c image.Config, br *bufio.Reader) int64 {
	px := float64(c.Width) * float64(c.Height)
	var perPixel float64
	switch {
	case typ == "image/jpeg":
		head, _ := br.Peek(64 << 10)
		perPixel = jpegPerPixel(head)
	case c.ColorModel == color.GrayModel:
		perPixel = 1
	case c.ColorModel == color.Gray16Model:
		perPixel = 2
	case c.ColorModel == color.RGBA64Model || c.ColorModel == color.NRGBA64Model:
		perPixel = 8
	case c.ColorModel == color.YCbCrModel: // WebP, lossy: 4:2:0
		perPixel = 1.5
	case c.ColorModel == color.NYCbCrAModel: // WebP, lossy with alpha
		perPixel = 2.5
	default:
		if _, ok := c.ColorModel.(color.Palette); ok {
			perPixel = 1
		} else {
			perPixel = 4 // RGBA, NRGBA, CMYK
		}
	}
	return int64(px * perPixel * 1.25)
}

// jpegPerPixel returns the bytes a pixel of a JPEG takes while it decodes,
// from its frame header when head holds it: its planes (a component
// sampled H × V, the largest Hmax × Vmax, takes H·V/(Hmax·Vmax) bytes a
// pixel), five times that when it is progressive (the decoder keeps every
// coefficient, an int32 a sample), and 4 more for a four-component image
// (converted to CMYK). Without the header, the worst: progressive 4:4:4.
func jpegPerPixel(head []byte) float64 {
	const worst = 3 * 5
	i := 2 // after the start of image
	for i+4 <= len(head) {
		if head[i] != 0xff {
			return worst
		}
		m := head[i+1]
		if m == 0xff { // fill byte
			i++
			continue
		}
		if m == 0xd8 || m == 0x01 || 0xd0 <= m && m <= 0xd7 { // no length
			i += 2
			continue
		}
		n := int(head[i+2])<<8 | int(head[i+3])
		if m != 0xc0 && m != 0xc1 && m != 0xc2 { // not a frame header the decoder reads
			i += 2 + n
			continue
		}
		seg := head[i+4 : min(len(head), i+2+n)]
		if len(seg) < 6 {
			return worst
		}
		nc := int(seg[5])
		if nc < 1 || nc > 4 || len(seg) < 6+3*nc {
			return worst
		}
		var hmax, vmax, sum int
		for j := range nc {
			h, v := int(seg[6+3*j+1]>>4), int(seg[6+3*j+1]&0x0f)
			if h < 1 || v < 1 {
				return worst
			}
			hmax, vmax, sum = max(hmax, h), max(vmax, v), sum+h*v
		}
		planes := float64(sum) / float64(hmax*vmax)
		if m == 0xc2 {
			planes *= 5
		}
		if nc == 4 {
			planes += 4
		}
		return planes
	}
	return worst
}
