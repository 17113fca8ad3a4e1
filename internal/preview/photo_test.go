package preview

import (
	"bytes"
	"image"
	"image/jpeg"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The benchmarks want real photos: JPEG decoding costs what the entropy of
// the data costs, and a smooth pattern decodes (and shrinks) far faster
// than a photo. None is committed to the repository. PARLEY_PHOTOS names a
// directory of JPEG photos (default $HOME/.cache/parley-tools/photos;
// BENCHMARKS.md says where ours come from); without one, the benchmarks
// synthesize photos with a photo's statistics and say so.

// photoDir returns the directory of real photos, "" when there is none.
func photoDir() string {
	dir := os.Getenv("PARLEY_PHOTOS")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".cache", "parley-tools", "photos")
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return ""
	}
	return dir
}

// A photo is the bytes of a JPEG photo and where it comes from.
type photo struct {
	name          string
	data          []byte
	width, height int
}

var realPhotos = sync.OnceValue(func() []photo {
	dir := photoDir()
	if dir == "" {
		return nil
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*.jp*g"))
	slices.Sort(names)
	var ps []photo
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			continue
		}
		c, err := jpeg.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			continue
		}
		ps = append(ps, photo{name: filepath.Base(n), data: data, width: c.Width, height: c.Height})
	}
	return ps
})

// photo12MP returns a real photo of 12 to 13 megapixels when one is at
// hand (the largest file of those: the most detail), else a synthesized
// one of 4032 × 3024, a phone camera's size.
func photo12MP(tb testing.TB) photo {
	tb.Helper()
	var best photo
	for _, p := range realPhotos() {
		mp := p.width * p.height
		if mp >= 12_000_000 && mp < 13_000_000 && len(p.data) > len(best.data) {
			best = p
		}
	}
	if best.data != nil {
		return best
	}
	tb.Logf("no real 12 MP photo (PARLEY_PHOTOS): synthesizing one")
	return synthPhoto(4032, 3024, 1)
}

var synthCache sync.Map // key [3]int → photo

// synthPhoto makes a w × h JPEG (quality 90, 4:2:0) with a photo's
// statistics: a luminance field whose detail falls off as 1/f (the
// spectrum of natural images), objects with sharp edges and texture of
// their own, chroma that varies slowly, and sensor noise. Its size and
// decode time per pixel are those of a camera's JPEG, not of a pattern.
func synthPhoto(w, h int, seed uint64) photo {
	key := [3]int{w, h, int(seed)}
	if p, ok := synthCache.Load(key); ok {
		return p.(photo)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	lum := fractal(rng, w, h, 0.62)
	// Chroma: smooth fields at a quarter of the resolution.
	cw, ch := (w+3)/4, (h+3)/4
	cb, cr := fractal(rng, cw, ch, 0.45), fractal(rng, cw, ch, 0.45)

	// Objects: ellipses and rectangles with a color and texture of their
	// own, their edges sharp.
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	type object struct {
		x0, y0, x1, y1 int
		ellipse        bool
		dl, dcb, dcr   float32
		texture        float32
	}
	var objs []object
	for range 60 {
		ow := int(float64(w) * (0.03 + 0.3*rng.Float64()))
		oh := int(float64(h) * (0.03 + 0.3*rng.Float64()))
		x0, y0 := rng.IntN(w), rng.IntN(h)
		objs = append(objs, object{
			x0: x0, y0: y0, x1: min(w, x0+ow), y1: min(h, y0+oh),
			ellipse: rng.IntN(2) == 0,
			dl:      float32(rng.NormFloat64() * 40), dcb: float32(rng.NormFloat64() * 20), dcr: float32(rng.NormFloat64() * 20),
			texture: float32(rng.Float64() * 18),
		})
	}
	noise := func() float32 { return float32(rng.NormFloat64()) }
	for y := range h {
		for x := range w {
			l := 110 + 70*lum[y*w+x]
			b := 25 * cb[(y/4)*cw+x/4]
			r := 25 * cr[(y/4)*cw+x/4]
			for i := range objs {
				o := &objs[i]
				if x < o.x0 || x >= o.x1 || y < o.y0 || y >= o.y1 {
					continue
				}
				if o.ellipse {
					dx := (float32(x-o.x0)/float32(o.x1-o.x0+1))*2 - 1
					dy := (float32(y-o.y0)/float32(o.y1-o.y0+1))*2 - 1
					if dx*dx+dy*dy > 1 {
						continue
					}
				}
				l += o.dl + o.texture*noise()
				b += o.dcb
				r += o.dcr
			}
			l += 3 * noise() // sensor noise
			img.Pix[(y*w+x)*4+0] = clamp8(l + 1.402*r)
			img.Pix[(y*w+x)*4+1] = clamp8(l - 0.344*b - 0.714*r)
			img.Pix[(y*w+x)*4+2] = clamp8(l + 1.772*b)
			img.Pix[(y*w+x)*4+3] = 0xff
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		panic(err)
	}
	p := photo{name: "synthesized", data: buf.Bytes(), width: w, height: h}
	synthCache.Store(key, p)
	return p
}

func clamp8(v float32) uint8 { return uint8(max(0, min(255, v+0.5))) }

// fractal returns a w × h field, about -1 to 1, made by doubling a coarse
// random grid and adding detail at each octave, the detail's amplitude
// falling by decay each time.
func fractal(rng *rand.Rand, w, h int, decay float64) []float32 {
	gw, gh := 6, 5
	f := make([]float32, gw*gh)
	for i := range f {
		f[i] = float32(rng.NormFloat64())
	}
	amp := float32(1.0)
	for gw < w || gh < h {
		nw, nh := min(gw*2, w), min(gh*2, h)
		amp *= float32(decay)
		g := make([]float32, nw*nh)
		for y := range nh {
			sy := (float64(y)+0.5)*float64(gh)/float64(nh) - 0.5
			y0 := int(math.Floor(sy))
			fy := float32(sy - float64(y0))
			y0c, y1c := max(0, min(gh-1, y0)), max(0, min(gh-1, y0+1))
			for x := range nw {
				sx := (float64(x)+0.5)*float64(gw)/float64(nw) - 0.5
				x0 := int(math.Floor(sx))
				fx := float32(sx - float64(x0))
				x0c, x1c := max(0, min(gw-1, x0)), max(0, min(gw-1, x0+1))
				top := f[y0c*gw+x0c]*(1-fx) + f[y0c*gw+x1c]*fx
				bot := f[y1c*gw+x0c]*(1-fx) + f[y1c*gw+x1c]*fx
				g[y*nw+x] = top*(1-fy) + bot*fy + amp*float32(rng.NormFloat64())
			}
		}
		f, gw, gh = g, nw, nh
	}
	return f
}

// photoName is a short label of a photo for sub-benchmark names.
func photoName(p photo) string {
	n := strings.TrimSuffix(p.name, filepath.Ext(p.name))
	if len(n) > 20 {
		n = n[:20]
	}
	return n
}
