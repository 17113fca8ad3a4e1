package memstore

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

var _ driver.EventStore = (*store)(nil)

// outbox is the Store's events, in Seq order: each write records its
// Recorder's events under the Store's lock, as it makes its change, so
// that Seq order is the order of the writes. Each event's id is its Seq,
// sealed under a key of the Store (ids.Sealer), as sqlstore's are.
type outbox struct {
	sealer  *ids.Sealer
	events  []messaging.Event // by Seq ascending
	seq     int64             // the greatest Seq given; never reused
	deleted map[string]int64  // the DeletedID of each kept delete event: its Seq
	cursors map[string]*handlerCursor
}

// handlerCursor is the stored position of a handler and its claim.
type handlerCursor struct {
	seq   int64
	owner string
	until time.Time
}

// record stores the events rec makes of c; the caller holds s.mu and has
// made the change.
func (s *store) record(rec driver.Recorder, c driver.Change) {
	if rec == nil {
		return
	}
	if s.out.sealer == nil {
		s.out.sealer = newSealer()
	}
	for _, e := range rec(c) {
		s.out.seq++
		e.Seq = s.out.seq
		e.ID = s.out.sealer.Seal(ids.Event, e.Seq)
		e.Created = norm(e.Created)
		s.out.events = append(s.out.events, copyEvent(e))
		if e.DeletedID != "" {
			if s.out.deleted == nil {
				s.out.deleted = make(map[string]int64)
			}
			s.out.deleted[e.DeletedID] = e.Seq
		}
	}
}

// copyEvent returns a deep copy of e.
func copyEvent(e messaging.Event) messaging.Event {
	if e.Message != nil {
		m := copyMessage(*e.Message)
		e.Message = &m
	}
	if e.Attachment != nil {
		a := *e.Attachment
		e.Attachment = &a
	}
	if e.Thread != nil {
		t := *e.Thread
		t.Root = copyMessage(t.Root)
		e.Thread = &t
	}
	if e.Conversation != nil {
		c := *e.Conversation
		if c.LastMessage != nil {
			m := copyMessage(*c.LastMessage)
			c.LastMessage = &m
		}
		e.Conversation = &c
	}
	return e
}

func copyMessage(m messaging.Message) messaging.Message {
	m.Reactions = copyReactions(m.Reactions)
	m.Attachments = append([]messaging.Attachment{}, m.Attachments...)
	return m
}

// matches reports whether q selects e; the caller holds s.mu.
func (s *store) matches(q driver.EventQuery, e *messaging.Event) bool {
	if q.ViewerID != "" && e.AudienceID != "" && e.AudienceID != q.ViewerID {
		return false
	}
	if e.ConversationID == "" {
		return q.Unfiled
	}
	return q.All || slices.Contains(q.ConversationIDs, e.ConversationID) || s.isMember(e.ConversationID, q.MemberID)
}

// ReadEvents returns up to q.Limit events matching q in Seq order.
func (s *store) ReadEvents(ctx context.Context, q driver.EventQuery) ([]messaging.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if q.Limit < 1 {
		return nil, invalid("limit must be at least 1")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	evs := s.out.events
	// The events after q.After and before q.Before, by binary search on Seq.
	lo, _ := slices.BinarySearchFunc(evs, q.After+1, func(e messaging.Event, seq int64) int { return cmpSeq(e.Seq, seq) })
	hi := len(evs)
	if q.Before > 0 {
		hi, _ = slices.BinarySearchFunc(evs, q.Before, func(e messaging.Event, seq int64) int { return cmpSeq(e.Seq, seq) })
	}
	out := []messaging.Event{}
	for i := range hi - lo {
		j := lo + i
		if q.Newest {
			j = hi - 1 - i
		}
		if s.matches(q, &evs[j]) {
			e := copyEvent(evs[j])
			if q.Redact {
				driver.Redact(&e, func(id string) bool { _, ok := s.out.deleted[id]; return ok })
			}
			out = append(out, e)
			if len(out) == q.Limit {
				break
			}
		}
	}
	return out, nil
}

// newSealer returns a Sealer of a random key.
func newSealer() *ids.Sealer {
	var key [16]byte
	_, _ = rand.Read(key[:]) // never fails (crypto/rand)
	sl, err := ids.NewSealer(key[:])
	if err != nil {
		panic(err) // a 16-byte key is always one
	}
	return sl
}

func invalid(msg string) error { return fmt.Errorf("memstore: %s: %w", msg, messaging.ErrInvalid) }

func cmpSeq(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// GetEvent returns the event with this id, or an error matching
// messaging.ErrNotFound.
func (s *store) GetEvent(ctx context.Context, id string) (messaging.Event, error) {
	if err := ctx.Err(); err != nil {
		return messaging.Event{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out.sealer != nil {
		if seq, ok := s.out.sealer.Open(ids.Event, id); ok {
			evs := s.out.events
			if i, found := slices.BinarySearchFunc(evs, seq, func(e messaging.Event, seq int64) int { return cmpSeq(e.Seq, seq) }); found {
				return copyEvent(evs[i]), nil
			}
		}
	}
	return messaging.Event{}, notFound("event", id)
}

// LastEvent returns the event of greatest Seq, or an error matching
// messaging.ErrNotFound.
func (s *store) LastEvent(ctx context.Context) (messaging.Event, error) {
	if err := ctx.Err(); err != nil {
		return messaging.Event{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.out.events); n > 0 {
		return copyEvent(s.out.events[n-1]), nil
	}
	return messaging.Event{}, notFound("event", "")
}

// PruneEvents removes the events created before before, with every event
// of a lower Seq.
func (s *store) PruneEvents(ctx context.Context, before time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for i, e := range s.out.events {
		if e.Created.Before(before) {
			n = i + 1
		}
	}
	if n > 0 {
		// An event about a deleted resource comes before its delete, which
		// is kept while it is.
		pruned := s.out.events[n-1].Seq
		maps.DeleteFunc(s.out.deleted, func(_ string, seq int64) bool { return seq <= pruned })
	}
	s.out.events = slices.Delete(s.out.events, 0, n)
	return n, nil
}

// ClaimCursor claims the handler position name for owner until until.
func (s *store) ClaimCursor(ctx context.Context, name, owner string, start int64, now, until time.Time) (int64, bool, error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out.cursors == nil {
		s.out.cursors = make(map[string]*handlerCursor)
	}
	c, ok := s.out.cursors[name]
	if !ok {
		c = &handlerCursor{seq: start}
		s.out.cursors[name] = c
	}
	if c.owner != "" && c.owner != owner && !c.until.Before(now) {
		return c.seq, false, nil
	}
	c.owner, c.until = owner, until
	return c.seq, true, nil
}

// SaveCursor stores the handler position name, if owner holds its claim.
func (s *store) SaveCursor(ctx context.Context, name, owner string, seq int64, until time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.out.cursors[name]
	if !ok || c.owner != owner {
		return conflict("the handler " + name + " is claimed by another owner")
	}
	c.seq, c.until = seq, until
	return nil
}
