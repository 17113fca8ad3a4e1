package preview

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"time"

	xdraw "golang.org/x/image/draw"
)

// The benchmarks of issue 33's preview targets; BENCHMARKS.md has their
// figures. Photos: see photo_test.go (PARLEY_PHOTOS).
//
//	go test -run '^$' -bench . -count 6 ./internal/preview

// baseline re-encodes a photo as a camera writes it (baseline, 4:2:0,
// quality 92): the same picture, decoded in one pass.
func baseline(tb testing.TB, p photo) photo {
	tb.Helper()
	img, err := jpeg.Decode(bytes.NewReader(p.data))
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 92}); err != nil {
		tb.Fatal(err)
	}
	return photo{name: p.name + " (baseline)", data: buf.Bytes(), width: p.width, height: p.height}
}

// BenchmarkFirstPreview: the first previews of a 12 MP photo (both sizes,
// from one decode: what a first request makes) against image/jpeg
// decoding the same bytes alone, the two measured in turn in the same
// loop so that a busy machine slows both alike. Reports the median of
// each and their ratio (the target: at most 1.5).
func BenchmarkFirstPreview(b *testing.B) {
	p := photo12MP(b)
	for _, p := range []photo{p, baseline(b, p)} {
		b.Run(fmt.Sprintf("%s/%dx%d/%dKiB", photoName(p), p.width, p.height, len(p.data)>>10), func(b *testing.B) {
			m := New(nil)
			var decode, first []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, err := jpeg.Decode(bytes.NewReader(p.data)); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, _, err := m.Make(context.Background(), bytes.NewReader(p.data), Small, Large); err != nil {
					b.Fatal(err)
				}
				decode, first = append(decode, t1.Sub(t0)), append(first, time.Since(t1))
			}
			d, f := median(decode), median(first)
			b.ReportMetric(float64(d)/1e6, "decode-p50-ms")
			b.ReportMetric(float64(f)/1e6, "preview-p50-ms")
			b.ReportMetric(float64(f)/float64(d), "ratio")
		})
	}
}

// BenchmarkSteps: what each step of a first preview costs after the
// decode: the box filter (4 times, what the large preview of a 12 MP photo
// takes), the exact resize to 1,024 pixels (a box of 3 and
// ApproxBiLinear, what an image that the box alone cannot fit takes),
// encoding the large preview, and the small one from the large.
func BenchmarkSteps(b *testing.B) {
	p := photo12MP(b)
	img, err := jpeg.Decode(bytes.NewReader(p.data))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("box_large", func(b *testing.B) {
		for b.Loop() {
			scale(img, Large)
		}
	})
	w, h := fit(p.width, p.height, Large)
	b.Run("resize_large_exactly", func(b *testing.B) {
		for b.Loop() {
			resize(img, w, h)
		}
	})
	large := scale(img, Large)
	b.Run("encode_large", func(b *testing.B) {
		for b.Loop() {
			var buf bytes.Buffer
			if err := jpeg.Encode(&buf, large, &jpeg.Options{Quality: 80}); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(buf.Len())/1024, "KiB")
		}
	})
	b.Run("small_from_large", func(b *testing.B) {
		for b.Loop() {
			scale(large, Small)
		}
	})
}

// BenchmarkScalers: the choice of the interpolator, with and without the
// box filter before it: the time to take a decoded 12 MP photo to 1,024
// pixels, and the bytes allocated. The outputs are written to
// $PARLEY_PREVIEW_OUT (when set) to be looked at.
func BenchmarkScalers(b *testing.B) {
	p := photo12MP(b)
	img, err := jpeg.Decode(bytes.NewReader(p.data))
	if err != nil {
		b.Fatal(err)
	}
	w, h := fit(p.width, p.height, Large)
	defer func(s xdraw.Interpolator, box bool) { scaler, usebox = s, box }(scaler, usebox)
	for _, s := range []struct {
		name string
		s    xdraw.Interpolator
	}{{"ApproxBiLinear", xdraw.ApproxBiLinear}, {"BiLinear", xdraw.BiLinear}, {"CatmullRom", xdraw.CatmullRom}} {
		for _, box := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/box=%v", s.name, box), func(b *testing.B) {
				scaler, usebox = s.s, box
				b.ReportAllocs()
				var out image.Image
				for b.Loop() {
					out = resize(img, w, h)
				}
				if dir := os.Getenv("PARLEY_PREVIEW_OUT"); dir != "" {
					var buf bytes.Buffer
					_ = jpeg.Encode(&buf, out, &jpeg.Options{Quality: 80})
					_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-box=%v.jpg", s.name, box)), buf.Bytes(), 0o644)
				}
			})
		}
	}
}

// BenchmarkConcurrent: 32 first requests at once, each of a different
// photo read from a file (as from a bucket: the bytes are not in the
// heap), with the default Maker (MaxDecodes = GOMAXPROCS). Reports the
// peak of the heap's live objects and of the memory the runtime holds
// from the system during the op, above what it held before, and the
// median and slowest request. "12mp": photos of at most 13 MP (the real
// ones as served, progressive, the same re-encoded baseline, synthesized
// ones to make 32); "any": every real photo (up to 24 MP).
func BenchmarkConcurrent(b *testing.B) {
	for _, set := range []string{"12mp", "any"} {
		b.Run(set, func(b *testing.B) {
			files := concurrentFiles(b, set, 32)
			m := New(nil)
			var p50s, maxs []time.Duration
			var peakHeap, peakSys uint64
			for b.Loop() {
				runtime.GC()
				heap0, sys0 := memNow()
				stop := make(chan struct{})
				peaks := make(chan [2]uint64)
				go func() {
					var ph, ps uint64
					t := time.NewTicker(time.Millisecond)
					defer t.Stop()
					for {
						h, s := memNow()
						ph, ps = max(ph, h), max(ps, s)
						select {
						case <-stop:
							peaks <- [2]uint64{ph, ps}
							return
						case <-t.C:
						}
					}
				}()
				lat := make([]time.Duration, len(files))
				var wg sync.WaitGroup
				for i, name := range files {
					wg.Go(func() {
						t0 := time.Now()
						f, err := os.Open(name)
						if err != nil {
							b.Error(err)
							return
						}
						defer f.Close()
						if _, _, err := m.Make(context.Background(), f, Small, Large); err != nil {
							b.Error(name, err)
						}
						lat[i] = time.Since(t0)
					})
				}
				wg.Wait()
				close(stop)
				pk := <-peaks
				peakHeap, peakSys = max(peakHeap, pk[0]-min(pk[0], heap0)), max(peakSys, pk[1]-min(pk[1], sys0))
				p50s, maxs = append(p50s, median(lat)), append(maxs, slices.Max(lat))
			}
			b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(peakSys)/(1<<20), "peak-sys-MiB")
			b.ReportMetric(float64(median(p50s))/1e6, "p50-ms")
			b.ReportMetric(float64(median(maxs))/1e6, "slowest-ms")
		})
	}
}

var memSamples = []metrics.Sample{
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/memory/classes/total:bytes"},
	{Name: "/memory/classes/heap/released:bytes"},
}

// memNow returns the bytes of heap objects (live and not yet swept) and
// the memory the runtime holds from the system less what it gave back.
func memNow() (heap, sys uint64) {
	s := slices.Clone(memSamples)
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64() - s[2].Value.Uint64()
}

// concurrentFiles writes n photos of the set to files and returns their
// names.
func concurrentFiles(b *testing.B, set string, n int) []string {
	b.Helper()
	var ps []photo
	for _, p := range realPhotos() {
		if set == "any" || p.width*p.height <= 13_000_000 {
			ps = append(ps, p)
		}
	}
	if set == "12mp" {
		for _, p := range slices.Clone(ps) {
			ps = append(ps, baseline(b, p))
		}
	}
	if len(ps) > n {
		ps = ps[:n]
	}
	for seed := uint64(1); len(ps) < n; seed++ {
		ps = append(ps, synthPhoto(4032, 3024, seed))
	}
	dir := b.TempDir()
	var names []string
	var total int
	for i, p := range ps {
		name := filepath.Join(dir, fmt.Sprintf("%02d.jpg", i))
		if err := os.WriteFile(name, p.data, 0o644); err != nil {
			b.Fatal(err)
		}
		names = append(names, name)
		total += p.width * p.height
	}
	b.Logf("%s: %d photos, %.1f MP on average", set, len(ps), float64(total)/float64(len(ps))/1e6)
	return names
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
