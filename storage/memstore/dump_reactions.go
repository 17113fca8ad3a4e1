package memstore

import (
	"slices"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/storecopy"
)

// reactionRows returns the reaction names and reactors of msgs (sorted by
// id), numbered in the order the messages show them; under s.mu.
func (s *Store) reactionRows(msgs []storecopy.Message) ([]storecopy.ReactionName, []storecopy.Reaction) {
	var names []storecopy.ReactionName
	var reactors []storecopy.Reaction
	for _, row := range msgs {
		for _, r := range s.messages[row.ID].Reactions {
			names = append(names, storecopy.ReactionName{MessageID: row.ID, Name: r.Name, Seq: int64(len(names) + 1)})
			for _, who := range r.Reactors {
				reactors = append(reactors, storecopy.Reaction{MessageID: row.ID, Name: r.Name, Seq: int64(len(reactors) + 1), Reactor: who})
			}
		}
	}
	return names, reactors
}

// loadReactions adds the reaction names or reactors of b, which come in
// the order their messages show them, that the messages lack; under s.mu.
func (s *Store) loadReactions(b *storecopy.Batch) {
	for _, n := range b.ReactionNames {
		if m, ok := s.messages[n.MessageID]; ok && !slices.ContainsFunc(m.Reactions, func(r messaging.Reaction) bool { return r.Name == n.Name }) {
			m.Reactions = append(m.Reactions, messaging.Reaction{Name: n.Name, Reactors: []string{}})
		}
	}
	for _, r := range b.Reactions {
		if m, ok := s.messages[r.MessageID]; ok {
			m.Reactions = addReactions(m.Reactions, []messaging.Reaction{{Name: r.Name, Reactors: []string{r.Reactor}}})
		}
	}
}
