package driver

import (
	"context"
	"time"
)

// EventStore is the outbox of a store, for the Feed: the events that the
// writes of EventStore and attachments.EventStore record in their
// transactions, and the positions of the Feed's handlers. A backend
// implements it over the same storage as those repositories.
// Implementations must be safe for concurrent use. The storetest package
// checks every obligation below.
//
// # Order
//
// The store gives each event a Seq when it is stored, or soon after its
// transaction commits, such that Seq order is commit order as a reader
// sees it: once ReadEvents has returned an event, every event it has not
// yet returned with a lower Seq is visible already (or pruned); an event
// that becomes visible later always has a greater Seq than every event
// returned before. So a reader that remembers the greatest Seq it has read
// and asks for the events after it never misses one, and two changes of
// which one began after the other committed (all the changes of one
// message, say) have their events in that order. Seq values are never
// reused, also after pruning.
type EventStore interface {
	// ReadEvents returns up to q.Limit events matching q, ordered by Seq
	// (ascending, or descending with q.Newest), each as the write's
	// Recorder returned it with Seq set, and with an id of the store's
	// own instead of the Recorder's: unique, valid event ids that GetEvent
	// finds, the same at every read, that tell nothing of the Seq (nor of
	// how many events came between two), and that another store never
	// gives (sqlstore and memstore seal the Seq under a secret key of the
	// installation, ids.Sealer). It sees only events of transactions that
	// have committed.
	ReadEvents(ctx context.Context, q EventQuery) ([]Event, error)

	// GetEvent returns the event with this id, with its Seq, or an error
	// matching ErrNotFound when no such event is stored (never
	// was, or was pruned, or the id is not one this store gave).
	GetEvent(ctx context.Context, id string) (Event, error)

	// LastEvent returns the event of greatest Seq, or an error matching
	// ErrNotFound when none is stored.
	LastEvent(ctx context.Context) (Event, error)

	// PruneEvents removes events oldest first (in Seq order) while they
	// were created before before, so that what remains is every event
	// after some Seq; it may keep the newest event (a store that gives
	// seqs from the greatest stored does, so as never to give one twice).
	// It returns how many it removed.
	PruneEvents(ctx context.Context, before time.Time) (int, error)

	// ClaimCursor claims the position of the handler name for owner until
	// until, and returns it: when no position is stored, it stores start;
	// when the position is unclaimed, its claim has expired (before now)
	// or owner holds it, owner takes it. Otherwise it returns ok false and
	// the position as stored.
	ClaimCursor(ctx context.Context, name, owner string, start int64, now, until time.Time) (seq int64, ok bool, err error)

	// SaveCursor stores seq as the position of the handler name and
	// extends owner's claim to until, if owner holds the claim; otherwise
	// it changes nothing and returns an error matching
	// ErrConflict.
	SaveCursor(ctx context.Context, name, owner string, seq int64, until time.Time) error
}
