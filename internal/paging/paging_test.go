package paging

import (
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/parleychat/parley/messaging/driver"
)

// pages serves the ids n-1 … 0 (newest first) in pages of size.
func pages(n int, calls *int) func(driver.ListOptions) (driver.Page[int], error) {
	return func(o driver.ListOptions) (driver.Page[int], error) {
		*calls++
		start := n - 1
		if o.StartingAfter != "" {
			a, _ := strconv.Atoi(o.StartingAfter)
			start = a - 1
		}
		out := []int{}
		for i := start; i >= 0 && len(out) < o.Limit; i-- {
			out = append(out, i)
		}
		return driver.Page[int]{Data: out, HasMore: len(out) > 0 && out[len(out)-1] > 0}, nil
	}
}

func TestAllWalksEveryPage(t *testing.T) {
	var calls int
	var got []int
	for v, err := range All("op", driver.ListOptions{}, 10, pages(25, &calls), strconv.Itoa) {
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
	for range All("op", driver.ListOptions{Limit: 10}, 50, pages(100, &calls), strconv.Itoa) {
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
	for _, err := range All("op", driver.ListOptions{}, 10, func(driver.ListOptions) (driver.Page[int], error) { calls++; return driver.Page[int]{}, boom }, strconv.Itoa) {
		errs = append(errs, err)
	}
	assert.Equal(t, []error{boom}, errs)
	assert.Equal(t, 1, calls)
}

func TestAllRefusesEndingBefore(t *testing.T) {
	calls := 0
	var errs []error
	for _, err := range All("op", driver.ListOptions{EndingBefore: "3"}, 10, pages(5, &calls), strconv.Itoa) {
		errs = append(errs, err)
	}
	if assert.Len(t, errs, 1) {
		var e *driver.Error
		assert.ErrorAs(t, errs[0], &e)
		assert.Equal(t, driver.ErrInvalid, e.Kind)
		assert.Equal(t, "ending_before", e.Param)
	}
	assert.Zero(t, calls)
}
