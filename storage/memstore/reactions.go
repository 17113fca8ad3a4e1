package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// reaction is a reaction name of a message and its reactors, in the order
// they came, by contact id.
type reaction struct {
	name     string
	reactors []reactor
}

// reactor is a contact who reacted, and when.
type reactor struct {
	id string
	at time.Time
}

// reactionsOf returns a deep copy of the reactions of the message id.
func (s *store) reactionsOf(id string) []reaction {
	rs := slices.Clone(s.reacts[id])
	for i := range rs {
		rs[i].reactors = slices.Clone(rs[i].reactors)
	}
	return rs
}

// viewReactions returns rs as a Message carries them: each name with its
// count and its first messaging.MaxEmbeddedReactors reactors by their
// usernames as stored now; never nil.
func (s *store) viewReactions(rs []reaction) []messaging.Reaction {
	out := make([]messaging.Reaction, len(rs))
	for i, r := range rs {
		head := r.reactors[:min(len(r.reactors), messaging.MaxEmbeddedReactors)]
		v := messaging.Reaction{Name: r.name, Reactors: make([]string, len(head)), Count: len(r.reactors)}
		for j, who := range head {
			v.Reactors[j] = s.contacts[who.id].Username
		}
		out[i] = v
	}
	return out
}

// addReactions adds the contact who to the reactions names of rs,
// reacted at at: a contact already under a name is not added again; new
// names come after existing ones and new reactors after existing ones, in
// the order given.
func addReactions(rs []reaction, who string, names []string, at time.Time) []reaction {
	for _, name := range names {
		i := slices.IndexFunc(rs, func(x reaction) bool { return x.name == name })
		if i < 0 {
			rs = append(rs, reaction{name: name})
			i = len(rs) - 1
		}
		if !slices.ContainsFunc(rs[i].reactors, func(x reactor) bool { return x.id == who }) {
			rs[i].reactors = append(rs[i].reactors, reactor{who, at})
		}
	}
	return rs
}

// ownNames returns the number of names that the contact who has in rs.
func ownNames(rs []reaction, who string) int {
	n := 0
	for _, r := range rs {
		if slices.ContainsFunc(r.reactors, func(x reactor) bool { return x.id == who }) {
			n++
		}
	}
	return n
}

// removeReactor removes the contact who from the reactions names of rs,
// and each reaction left with no reactor. rs must be a copy owned by the
// caller.
func removeReactor(rs []reaction, who string, names []string) []reaction {
	for _, name := range names {
		i := slices.IndexFunc(rs, func(x reaction) bool { return x.name == name })
		if i < 0 {
			continue
		}
		rs[i].reactors = slices.DeleteFunc(rs[i].reactors, func(x reactor) bool { return x.id == who })
		if len(rs[i].reactors) == 0 {
			rs = slices.Delete(rs, i, i+1)
		}
	}
	return rs
}

// copyReactions returns a deep copy of rs, never nil.
func copyReactions(rs []messaging.Reaction) []messaging.Reaction {
	out := make([]messaging.Reaction, len(rs))
	for i, r := range rs {
		out[i] = messaging.Reaction{Name: r.Name, Reactors: slices.Clone(r.Reactors), Count: r.Count}
	}
	return out
}

// LookupMessage returns the conversation, sender and creation time of the
// message, or an error matching messaging.ErrNotFound.
func (s *store) LookupMessage(ctx context.Context, id string) (driver.MessageRef, error) {
	if err := ctx.Err(); err != nil {
		return driver.MessageRef{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[id]
	if !ok {
		return driver.MessageRef{}, notFound("message", id)
	}
	return driver.MessageRef{ID: m.ID, ConversationID: m.ConversationID, SenderID: m.Contact.ID, CreatedAt: m.CreatedAt, ParentID: m.ParentID, Deleted: m.Deleted}, nil
}

// ListReactors returns a page of the reactors of a reaction, in the order
// they came. A cursor that is not a reactor of it is an error matching
// messaging.ErrNotFound.
func (s *store) ListReactors(ctx context.Context, q driver.ReactorQuery) ([]messaging.Reactor, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if q.Limit < 1 {
		return nil, false, invalid("limit must be at least 1")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []reactor
	if i := slices.IndexFunc(s.reacts[q.MessageID], func(x reaction) bool { return x.name == q.Name }); i >= 0 {
		all = s.reacts[q.MessageID][i].reactors
	}
	lo, hi := 0, len(all)
	after, before := cursorID(q.After), cursorID(q.Before)
	if cursor := max(after, before); cursor != "" {
		at := slices.IndexFunc(all, func(x reactor) bool { return x.id == cursor })
		if at < 0 {
			return nil, false, notFound("reactor", cursor)
		}
		if after != "" {
			lo = at + 1
		} else {
			hi = at
		}
	}
	var sel []reactor
	more := hi-lo > q.Limit
	if before != "" {
		sel = all[max(lo, hi-q.Limit):hi]
	} else {
		sel = all[lo:min(hi, lo+q.Limit)]
	}
	out := make([]messaging.Reactor, len(sel))
	for i, r := range sel {
		out[i] = messaging.Reactor{ContactID: r.id, Username: s.contacts[r.id].Username, ReactedAt: r.at}
	}
	return out, more, nil
}
