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

// addReactions merges add (reactors by contact id) into rs, reacted at
// at: a reactor already under a name is not added again; new names come
// after existing ones and new reactors after existing ones, in the order
// given. It returns the names each reactor of add has afterwards, at most.
func addReactions(rs []reaction, add []messaging.Reaction, at time.Time) ([]reaction, int) {
	for _, r := range add {
		i := slices.IndexFunc(rs, func(x reaction) bool { return x.name == r.Name })
		for _, who := range r.Reactors {
			if i < 0 {
				rs = append(rs, reaction{name: r.Name})
				i = len(rs) - 1
			}
			if !slices.ContainsFunc(rs[i].reactors, func(x reactor) bool { return x.id == who }) {
				rs[i].reactors = append(rs[i].reactors, reactor{who, at})
			}
		}
	}
	return rs, reactorNames(rs, add)
}

// reactorNames returns the most names that a reactor of change has in rs.
func reactorNames(rs []reaction, change []messaging.Reaction) int {
	most := 0
	for _, c := range change {
		for _, who := range c.Reactors {
			n := 0
			for _, r := range rs {
				if slices.ContainsFunc(r.reactors, func(x reactor) bool { return x.id == who }) {
					n++
				}
			}
			most = max(most, n)
		}
	}
	return most
}

// removeReactors removes reactors (contact ids) from the reaction name of
// rs, and the reaction if none is left. rs must be a copy owned by the
// caller.
func removeReactors(rs []reaction, name string, reactors []string) []reaction {
	i := slices.IndexFunc(rs, func(x reaction) bool { return x.name == name })
	if i < 0 {
		return rs
	}
	rs[i].reactors = slices.DeleteFunc(rs[i].reactors, func(x reactor) bool { return slices.Contains(reactors, x.id) })
	if len(rs[i].reactors) == 0 {
		rs = slices.Delete(rs, i, i+1)
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
	return driver.MessageRef{ID: m.ID, ConversationID: m.ConversationID, SenderID: m.Contact.ID, CreatedAt: m.CreatedAt}, nil
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
	if cursor := max(q.After, q.Before); cursor != "" {
		at := slices.IndexFunc(all, func(x reactor) bool { return x.id == cursor })
		if at < 0 {
			return nil, false, notFound("reactor", cursor)
		}
		if q.After != "" {
			lo = at + 1
		} else {
			hi = at
		}
	}
	var sel []reactor
	more := hi-lo > q.Limit
	if q.Before != "" {
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
