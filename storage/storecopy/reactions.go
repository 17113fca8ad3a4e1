package storecopy

import (
	"strconv"
	"time"
)

// The rows of reactions, in the shape the stores keep them now. Reactions
// are the part of the schema most likely to change shape: everything that
// knows it is in this file (and in each store's own reactions file).

// ReactionName is a reaction name of a message, which keeps its place
// among the message's names while it has reactors: Seq orders the names of
// a message (a SQL store's own sequence; a store without one numbers them
// in order).
type ReactionName struct {
	// MessageID is the message; Name is the reaction's name, such as
	// "tada".
	MessageID, Name string
	// Seq orders the names of the message.
	Seq int64
}

// Reaction is one reactor of a reaction name of a message: Seq orders the
// reactors of a name, as ReactionName.Seq orders names.
type Reaction struct {
	// MessageID and Name are the reaction name's (see ReactionName).
	MessageID, Name string
	// Seq orders the reactors of the name.
	Seq int64
	// ContactID is who reacted: the contact's id.
	ContactID string
	// ReactedAt is when.
	ReactedAt time.Time
}

// reactionFields returns the compared fields of the row i of b, a batch of
// reaction names or reactions: a row's place is its message and its
// ordinal among the message's rows (n, given by the caller), never its
// Seq, which another store numbers otherwise.
func reactionFields(b *Batch, i int, n int) (key string, names, values []string) {
	if b.Kind == ReactionNames {
		r := b.ReactionNames[i]
		return r.MessageID + "\x00" + ordinal(n), []string{"name"}, []string{r.Name}
	}
	r := b.Reactions[i]
	return r.MessageID + "\x00" + ordinal(n), []string{"name", "contact", "reacted"}, []string{r.Name, r.ContactID, tm(r.ReactedAt)}
}

// reactionMessage returns the message of the row i of b, a batch of
// reaction names or reactions.
func reactionMessage(b *Batch, i int) string {
	if b.Kind == ReactionNames {
		return b.ReactionNames[i].MessageID
	}
	return b.Reactions[i].MessageID
}

// ordinal is n as a key part that sorts as numbers do.
func ordinal(n int) string {
	s := strconv.Itoa(n)
	return string(rune('a'+len(s))) + s
}
