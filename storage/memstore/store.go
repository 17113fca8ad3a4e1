package memstore

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// Store is Parley's storage in memory, for tests: hand it to
// messaging.New. The zero value is not usable; call New.
type Store struct{ s *store }

// Driver returns the contract the Store implements, for the services (see
// messaging/driver); hosts do not call it.
func (st *Store) Driver() driver.Store { return st.s }

// store implements driver.Store in memory. One mutex guards all of its
// state, so every call is atomic and calls are serialized.
type store struct {
	mu        sync.Mutex
	contacts  map[string]messaging.Contact    // by id
	usernames map[string]string               // username -> contact id
	messages  map[string]*messaging.Message   // by id; Contact holds the id only, Attachments is nil
	atts      map[string]messaging.Attachment // by id
	linked    map[string][]string             // message id -> ids of its attachments
	reacts    map[string][]reaction           // message id -> its reactions, names in order of first use
	pending   []string                        // keys of pending deletions, oldest first
	reserved  map[string]driver.Reservation   // upload reservations by id (made on first use)

	convs   map[string]*conversation // by id
	reads   map[member]readPos       // read positions
	members map[member]time.Time     // memberships -> joined at

	threads     map[string]*thread // by root id
	threadReads map[member]readPos // read positions in threads, keyed by root id

	out outbox // the events the writes record

	keys      map[keyID]driver.IdempotencyRecord
	revisions map[string]messaging.Revision // by id
	revsOf    map[string][]string           // message id -> ids of its revisions, oldest first

	installation string // made on first use
	epoch        int64  // reconcile epoch
}

var (
	_ driver.Store = (*store)(nil)
)

// New returns an empty Store.
func New() *Store { return &Store{newStore()} }

func newStore() *store {
	return &store{
		contacts:  make(map[string]messaging.Contact),
		usernames: make(map[string]string),
		messages:  make(map[string]*messaging.Message),
		atts:      make(map[string]messaging.Attachment),
		linked:    make(map[string][]string),
		reacts:    make(map[string][]reaction),
		convs:     make(map[string]*conversation),
		reads:     make(map[member]readPos),
		members:   make(map[member]time.Time),

		threads:     make(map[string]*thread),
		threadReads: make(map[member]readPos),
		keys:        make(map[keyID]driver.IdempotencyRecord),
		revisions:   make(map[string]messaging.Revision),
		revsOf:      make(map[string][]string),
	}
}

// norm returns t as the Store keeps it: UTC, truncated to the microsecond.
func norm(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// notFound reports that no what has this id. Messages of the Store's
// errors are shown to the people who call the API: they say what is wrong
// in their terms, never which backend stores the data.
func notFound(what, id string) error {
	return fmt.Errorf("memstore: no %s %s: %w", what, strconv.Quote(id), messaging.ErrNotFound)
}

func conflict(msg string) error { return fmt.Errorf("memstore: %s: %w", msg, messaging.ErrConflict) }

// compareCursor orders (CreatedAt, ID) pairs ascending.
func compareCursor(a, b driver.Cursor) int {
	if c := a.Time.Compare(b.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// page selects a page of items sorted newest first, as the query types
// describe: Limit items just older than after, or just newer than before
// (still newest first), or the newest, and whether more lie beyond them in
// the direction of travel.
func page[T any](items []T, pos func(T) driver.Cursor, limit int, after, before *driver.Cursor) ([]T, bool, error) {
	if limit < 1 {
		return nil, false, fmt.Errorf("memstore: limit must be at least 1: %w", messaging.ErrInvalid)
	}
	if after != nil && before != nil {
		return nil, false, fmt.Errorf("memstore: After and Before cannot be used together: %w", messaging.ErrInvalid)
	}
	if before != nil {
		b := driver.Cursor{Time: norm(before.Time), ID: before.ID}
		// items[:end] are newer than the cursor; the page is the oldest of them.
		end, _ := slices.BinarySearchFunc(items, b, func(it T, c driver.Cursor) int { return compareCursor(c, pos(it)) })
		start := max(0, end-limit)
		return items[start:end], start > 0, nil
	}
	start := 0
	if after != nil {
		a := driver.Cursor{Time: norm(after.Time), ID: after.ID}
		// items[start:] are older than the cursor.
		start, _ = slices.BinarySearchFunc(items, a, func(it T, c driver.Cursor) int { return compareCursor(c, pos(it)) })
		if start < len(items) && compareCursor(pos(items[start]), a) == 0 {
			start++
		}
	}
	end := min(len(items), start+limit)
	return items[start:end], end < len(items), nil
}

// sortNewestFirst sorts items by (CreatedAt, ID) descending.
func sortNewestFirst[T any](items []T, pos func(T) driver.Cursor) {
	slices.SortFunc(items, func(a, b T) int { return compareCursor(pos(b), pos(a)) })
}

// cursorID returns the ID of c, a cursor by id, or "" when c is nil.
func cursorID(c *driver.Cursor) string {
	if c == nil {
		return ""
	}
	return c.ID
}
