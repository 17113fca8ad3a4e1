package memstore

import (
	"slices"

	"github.com/parleychat/parley/storage/storecopy"
)

// reactionRows returns the reaction names and reactors of msgs (sorted by
// id), numbered in the order the messages show them; under s.mu.
func (s *store) reactionRows(msgs []storecopy.Message) ([]storecopy.ReactionName, []storecopy.Reaction) {
	var names []storecopy.ReactionName
	var reactors []storecopy.Reaction
	for _, row := range msgs {
		for _, r := range s.reacts[row.ID] {
			names = append(names, storecopy.ReactionName{MessageID: row.ID, Name: r.name, Seq: int64(len(names) + 1)})
			for _, who := range r.reactors {
				reactors = append(reactors, storecopy.Reaction{MessageID: row.ID, Name: r.name, Seq: int64(len(reactors) + 1), ContactID: who.id, ReactedAt: who.at})
			}
		}
	}
	return names, reactors
}

// loadReactions adds the reaction names or reactors of b, which come in
// the order their messages show them, that the messages lack; under s.mu.
func (s *store) loadReactions(b *storecopy.Batch) {
	for _, n := range b.ReactionNames {
		if _, ok := s.messages[n.MessageID]; ok && !slices.ContainsFunc(s.reacts[n.MessageID], func(r reaction) bool { return r.name == n.Name }) {
			s.reacts[n.MessageID] = append(s.reacts[n.MessageID], reaction{name: n.Name})
		}
	}
	for _, r := range b.Reactions {
		if _, ok := s.messages[r.MessageID]; ok {
			s.reacts[r.MessageID] = addReactions(s.reacts[r.MessageID], r.ContactID, []string{r.Name}, norm(r.ReactedAt))
		}
	}
}
