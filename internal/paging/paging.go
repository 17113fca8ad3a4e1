// Package paging walks a keyset-paged list from Go: the All methods of the
// services are made with it. Give All the first cursor, a function that
// reads the page after a cursor, and the id of an item (the next cursor):
//
//	return paging.All(o.StartingAfter, func(after string) ([]Conversation, bool, error) {
//		o.StartingAfter = after
//		p, err := s.Conversations(ctx, caller, o)
//		return p.Data, p.HasMore, err
//	}, func(c Conversation) string { return c.ID })
package paging

import "iter"

// All returns an iterator over every item of a list, page by page: page
// returns the items just older than the item whose id is after ("" for the
// first page) and whether more exist. The iterator yields each item with a
// nil error, or the first error with a zero item, and then stops; the
// caller may stop it earlier by breaking out of its loop.
func All[T any](after string, page func(after string) ([]T, bool, error), id func(T) string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			items, more, err := page(after)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if !more || len(items) == 0 {
				return
			}
			after = id(items[len(items)-1])
		}
	}
}
