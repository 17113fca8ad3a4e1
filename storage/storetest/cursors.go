package storetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/messaging/driver"
)

// pager lists a page of the list under test: ids newest first, and whether
// more exist in the direction of travel.
type pager func(t *testing.T, limit int, after, before *driver.Cursor) ([]string, bool)

// testCursors checks pages of a list of 25 items (oldest first, as
// tiedItems makes them) against exact expectations.
func testCursors(t *testing.T, items []item, list pager) {
	t.Helper()
	require.Len(t, items, 25)
	// k is 1-based from the oldest: the list is k(25), k(24), ... k(1).
	k := func(n int) item { return items[n-1] }
	span := func(from, to int) []string { // newest first, from >= to
		out := []string{}
		for n := from; n >= to; n-- {
			out = append(out, k(n).id)
		}
		return out
	}
	cases := []struct {
		name          string
		limit         int
		after, before *driver.Cursor
		want          []string
		more          bool
	}{
		{"first_page", 5, nil, nil, span(25, 21), true},
		{"after_21st", 5, k(21).cursor(), nil, span(20, 16), true},
		{"after_19th_first_of_a_tie", 5, k(19).cursor(), nil, span(18, 14), true},
		{"after_6th_last_page_exact", 5, k(6).cursor(), nil, span(5, 1), false},
		{"after_3rd_short_last_page", 5, k(3).cursor(), nil, span(2, 1), false},
		{"after_oldest_empty", 5, k(1).cursor(), nil, []string{}, false},
		{"before_11th", 5, nil, k(11).cursor(), span(16, 12), true},
		{"before_12th_last_of_a_tie", 5, nil, k(12).cursor(), span(17, 13), true},
		{"before_20th_first_page_exact", 5, nil, k(20).cursor(), span(25, 21), false},
		{"before_22nd_short_first_page", 5, nil, k(22).cursor(), span(25, 23), false},
		{"before_newest_empty", 5, nil, k(25).cursor(), []string{}, false},
		{"before_oldest", 5, nil, k(1).cursor(), span(6, 2), true},
		{"limit_equals_total", 25, nil, nil, span(25, 1), false},
		{"limit_one_below_total", 24, nil, nil, span(25, 2), true},
		{"limit_above_total", 100, nil, nil, span(25, 1), false},
		{"limit_1_after_13th", 1, k(13).cursor(), nil, span(12, 12), true},
		{"limit_1_before_13th", 1, nil, k(13).cursor(), span(14, 14), true},
		{"limit_1_after_2nd", 1, k(2).cursor(), nil, span(1, 1), false},
		{"limit_1_before_24th", 1, nil, k(24).cursor(), span(25, 25), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, more := list(t, c.limit, c.after, c.before)
			assert.Equal(t, c.want, nonNil(got), "items")
			assert.Equal(t, c.more, more, "has_more")
		})
	}

	t.Run("walk_forward", func(t *testing.T) {
		var all []string
		var mores []bool
		var after *driver.Cursor
		for range 10 {
			got, more := list(t, 5, after, nil)
			all = append(all, got...)
			mores = append(mores, more)
			if !more || len(got) == 0 {
				break
			}
			after = itemOf(items, got[len(got)-1]).cursor()
		}
		assert.Equal(t, span(25, 1), all)
		assert.Equal(t, []bool{true, true, true, true, false}, mores, "has_more of each page; 25 is an exact multiple of 5")
	})

	t.Run("walk_backward", func(t *testing.T) {
		var pages [][]string
		var mores []bool
		before := k(1).cursor()
		for range 10 {
			got, more := list(t, 7, nil, before)
			pages = append(pages, got)
			mores = append(mores, more)
			if !more || len(got) == 0 {
				break
			}
			before = itemOf(items, got[0]).cursor()
		}
		require.Len(t, pages, 4)
		assert.Equal(t, span(8, 2), pages[0])
		assert.Equal(t, span(15, 9), pages[1])
		assert.Equal(t, span(22, 16), pages[2])
		assert.Equal(t, span(25, 23), pages[3])
		assert.Equal(t, []bool{true, true, true, false}, mores, "has_more of each page")
	})
}

// itemOf returns the item with the id, or a zero item.
func itemOf(items []item, id string) item {
	for _, it := range items {
		if it.id == id {
			return it
		}
	}
	return item{id: id}
}

// nonNil returns s, or an empty slice for nil: backends return either
// for an empty page.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
