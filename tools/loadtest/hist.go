package main

import (
	"math"
	"math/bits"
	"time"
)

// The histogram keeps latencies in nanoseconds in log-linear buckets: exact
// below 2×histSub ns, then histSub buckets per power of two, so an estimate
// is within 1/(2×histSub) (0.4%) of the true value, in a fixed 18 KB
// whatever the number of requests.
const (
	histSubBits = 7
	histSub     = 1 << histSubBits // buckets per power of two
	histMaxBits = 41               // values up to 2^41 ns (about 36 minutes)
	histBuckets = 2*histSub + (histMaxBits-histSubBits-1)*histSub
	histMax     = 1<<histMaxBits - 1
)

// histogram counts latencies. The zero value is empty and ready to use; it
// is not safe for concurrent use (each connection has its own, merged at
// the end of a run).
type histogram struct {
	counts   [histBuckets]uint32
	n        int64
	sum      int64 // nanoseconds
	min, max int64
}

// bucket returns the index of the bucket of v (0 ≤ v ≤ histMax).
func bucket(v int64) int {
	if v < 2*histSub {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - histSubBits - 1 // v>>shift is in [histSub, 2×histSub)
	return 2*histSub + (shift-1)*histSub + int(v>>shift) - histSub
}

// bucketValue returns the middle of bucket i: its value for exact buckets.
func bucketValue(i int) int64 {
	if i < 2*histSub {
		return int64(i)
	}
	shift := (i-2*histSub)/histSub + 1
	top := int64((i-2*histSub)%histSub + histSub)
	lo := top << shift
	return lo + (int64(1)<<shift-1)/2
}

// record adds one latency.
func (h *histogram) record(d time.Duration) {
	v := min(max(int64(d), 0), histMax)
	h.counts[bucket(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += v
}

// merge adds o's counts to h.
func (h *histogram) merge(o *histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// count is the number of latencies recorded.
func (h *histogram) count() int64 { return h.n }

// mean is their average, 0 when empty.
func (h *histogram) mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / h.n)
}

// percentile returns the nearest-rank p-th percentile (0 < p ≤ 100): the
// smallest recorded latency that at least p% of them do not exceed, as the
// middle of its bucket, within [min, max]; the lowest and highest ranks are
// the exact minimum and maximum. It is 0 when empty.
func (h *histogram) percentile(p float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := min(max(int64(math.Ceil(p/100*float64(h.n))), 1), h.n)
	switch rank {
	case h.n:
		return time.Duration(h.max)
	case 1:
		return time.Duration(h.min)
	}
	var seen int64
	for i, c := range h.counts {
		seen += int64(c)
		if seen >= rank {
			return time.Duration(min(max(bucketValue(i), h.min), h.max))
		}
	}
	return time.Duration(h.max)
}
