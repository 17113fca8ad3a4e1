package driver

// Page is one page of a list, as every list of the services returns it:
// its items in the list's order, and whether more exist beyond them in
// the direction of travel (toward the end of the list, or toward its
// start when the page was asked for with EndingBefore).
type Page[T any] struct {
	// Data are the items of the page, never nil.
	Data []T
	// HasMore reports whether more items exist beyond the page in the
	// direction of travel.
	HasMore bool
}

// ListOptions select a page of a list. What a list is narrowed by (a
// conversation, a message) is an argument of the call, not an option.
type ListOptions struct {
	// Limit is the page size: 0 for the default of 10, at most the
	// messaging Service's Options.MaxListLimit (the one page size limit of
	// every list); a larger or negative one is an error of kind ErrInvalid
	// naming "limit".
	Limit int
	// StartingAfter is the id of an item of the list (a username for
	// reactors); the page holds the items just after it in the list's
	// order.
	StartingAfter string
	// EndingBefore is the id of an item of the list; the page holds the
	// items just before it, still in the list's order. It cannot be used
	// with StartingAfter, nor by the All iterators, nor by the lists that
	// only go forward (members and memberships): an error of kind
	// ErrInvalid naming "ending_before".
	EndingBefore string
}
