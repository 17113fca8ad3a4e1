package paging

import (
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// pages serves the ids n-1 … 0 (newest first) in pages of size.
func pages(n, size int, calls *int) func(after string) ([]int, bool, error) {
	return func(after string) ([]int, bool, error) {
		*calls++
		start := n - 1
		if after != "" {
			a, _ := strconv.Atoi(after)
			start = a - 1
		}
		var out []int
		for i := start; i >= 0 && len(out) < size; i-- {
			out = append(out, i)
		}
		return out, len(out) > 0 && out[len(out)-1] > 0, nil
	}
}

func TestAllWalksEveryPage(t *testing.T) {
	var calls int
	var got []int
	for v, err := range All("", pages(25, 10, &calls), strconv.Itoa) {
		assert.NoError(t, err)
		got = append(got, v)
	}
	assert.Len(t, got, 25)
	assert.Equal(t, 24, got[0])
	assert.Equal(t, 0, got[24])
	assert.Equal(t, 3, calls)
}

func TestAllStopsWhenTheCallerBreaks(t *testing.T) {
	var calls int
	n := 0
	for range All("", pages(100, 10, &calls), strconv.Itoa) {
		if n++; n == 12 {
			break
		}
	}
	assert.Equal(t, 2, calls, "no page is read beyond the one that held the last item taken")
}

func TestAllYieldsTheErrorAndStops(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	var errs []error
	for _, err := range All("", func(string) ([]int, bool, error) { calls++; return nil, true, boom }, strconv.Itoa) {
		errs = append(errs, err)
	}
	assert.Equal(t, []error{boom}, errs)
	assert.Equal(t, 1, calls)
}
