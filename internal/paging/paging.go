// Package paging walks a keyset-paged list from Go: the All… iterators of
// the services are made with it. Give All the options of the first page,
// the page size to use when they set none, the method that reads a page,
// and the id of an item (the next page's StartingAfter):
//
//	return paging.All("messaging.AllConversations", o, s.opts.MaxListLimit,
//		func(o ListOptions) (Page[Conversation], error) { return s.Conversations(ctx, caller, o) },
//		func(c Conversation) string { return c.ID })
package paging

import (
	"iter"

	"github.com/parleychat/parley/internal/check"
	"github.com/parleychat/parley/internal/domain"
	"github.com/parleychat/parley/messaging/driver"
)

// All returns an iterator over every item of a list, page by page, from
// the first or from just after o.StartingAfter, o.Limit items a page (0
// for limit). page reads one page. The iterator yields each item with a
// nil error, or the first error with a zero item, and then stops; the
// caller may stop it earlier by breaking out of its loop. An iterator
// walks in the list's order only: with o.EndingBefore set it yields an
// error of kind ErrInvalid naming "ending_before", wrapped with op.
func All[T any](op string, o driver.ListOptions, limit int, page func(driver.ListOptions) (driver.Page[T], error), id func(T) string) iter.Seq2[T, error] {
	if o.Limit == 0 {
		o.Limit = limit
	}
	return func(yield func(T, error) bool) {
		var zero T
		if o.EndingBefore != "" {
			yield(zero, domain.Wrap(op, check.BadParam("ending_before", "an iterator walks in the list's order: ending_before cannot be used")))
			return
		}
		for {
			p, err := page(o)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, it := range p.Data {
				if !yield(it, nil) {
					return
				}
			}
			if !p.HasMore || len(p.Data) == 0 {
				return
			}
			o.StartingAfter = id(p.Data[len(p.Data)-1])
		}
	}
}
