package storetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/messaging"
)

var reactionTests = []test{
	{"merge_keeps_first_use_order_without_duplicates", testReactionMerge},
	{"adding_again_changes_nothing", testReactionIdempotent},
	{"remove_reaction", testRemoveReaction},
	{"max_reaction_names", testMaxReactionNames},
}

// r is shorthand for a reaction.
func r(name string, reactors ...string) messaging.Reaction {
	return messaging.Reaction{Name: name, Reactors: reactors}
}

// reactors makes a contact for each username (reactors are usernames).
func (h *harness) reactors(names ...string) {
	h.t.Helper()
	for _, n := range names {
		h.contact(n)
	}
}

func testReactionMerge(t *testing.T, h *harness) {
	h.reactors("bob", "carol", "dave")
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))

	got := h.update(m.ID, messaging.MessageChange{AddReactions: []messaging.Reaction{r("👍", "alice")}})
	assert.Equal(t, []messaging.Reaction{r("👍", "alice")}, got.Reactions)

	got = h.update(m.ID, messaging.MessageChange{AddReactions: []messaging.Reaction{
		r("🎉", "bob"),
		r("👍", "bob", "alice"),
		r("🎉", "carol", "bob"),
		r("eyes", "dave", "dave"),
		r("thumbs_up", "carol"),
	}})
	want := []messaging.Reaction{
		r("👍", "alice", "bob"),
		r("🎉", "bob", "carol"),
		r("eyes", "dave"),
		r("thumbs_up", "carol"),
	}
	assert.Equal(t, want, got.Reactions, "names in order of first use, reactors in order they came, no duplicates; 👍 and 🎉 are distinct names")
}

func testReactionIdempotent(t *testing.T, h *harness) {
	h.reactors("bob")
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	add := []messaging.Reaction{r("heart", "alice", "bob"), r("fire", "bob")}
	first := h.update(m.ID, messaging.MessageChange{AddReactions: add})
	again := h.update(m.ID, messaging.MessageChange{AddReactions: add})
	assert.Equal(t, first.Reactions, again.Reactions)
	assert.Equal(t, []messaging.Reaction{r("heart", "alice", "bob"), r("fire", "bob")}, again.Reactions)
}

func testRemoveReaction(t *testing.T, h *harness) {
	h.reactors("bob", "carol", "dave")
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	h.update(m.ID, messaging.MessageChange{AddReactions: []messaging.Reaction{r("👍", "alice", "bob"), r("🎉", "bob"), r("eyes", "carol")}})

	remove := func(name, who string) messaging.Message {
		t.Helper()
		rm := r(name, who)
		return h.update(m.ID, messaging.MessageChange{RemoveReaction: &rm})
	}
	got := remove("👍", "bob")
	assert.Equal(t, []messaging.Reaction{r("👍", "alice"), r("🎉", "bob"), r("eyes", "carol")}, got.Reactions)

	got = remove("🎉", "bob")
	assert.Equal(t, []messaging.Reaction{r("👍", "alice"), r("eyes", "carol")}, got.Reactions, "a reaction left with no reactors disappears")

	got = remove("👍", "zed")
	assert.Equal(t, []messaging.Reaction{r("👍", "alice"), r("eyes", "carol")}, got.Reactions, "removing an absent reactor changes nothing")
	got = remove("nope", "alice")
	assert.Equal(t, []messaging.Reaction{r("👍", "alice"), r("eyes", "carol")}, got.Reactions, "removing an absent name changes nothing")

	got = h.update(m.ID, messaging.MessageChange{AddReactions: []messaging.Reaction{r("🎉", "dave"), r("👍", "bob")}})
	assert.Equal(t, []messaging.Reaction{r("👍", "alice", "bob"), r("eyes", "carol"), r("🎉", "dave")}, got.Reactions,
		"a name used again after it disappeared is new and comes last")

	remove("👍", "alice")
	got = h.update(m.ID, messaging.MessageChange{AddReactions: []messaging.Reaction{r("👍", "alice")}})
	assert.Equal(t, []messaging.Reaction{r("👍", "bob", "alice"), r("eyes", "carol"), r("🎉", "dave")}, got.Reactions,
		"a reactor who comes back comes after the others")

	remove("eyes", "carol")
	remove("🎉", "dave")
	remove("👍", "alice")
	got = remove("👍", "bob")
	assert.Empty(t, got.Reactions)
	assert.Empty(t, h.get(m.ID).Reactions)
}

func testMaxReactionNames(t *testing.T, h *harness) {
	h.reactors("x", "y")
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	h.update(m.ID, messaging.MessageChange{AddReactions: []messaging.Reaction{r("a", "x"), r("b", "x")}})
	before := h.get(m.ID)

	text := "changed"
	_, err := h.s.UpdateMessage(h.ctx, m.ID, messaging.MessageChange{
		Text:         &text,
		AddReactions: []messaging.Reaction{r("c", "x"), r("d", "x")},
		UpdatedAt:    at(9),
		Check:        Limits(3, 0),
	})
	assert.ErrorIs(t, err, messaging.ErrInvalid, "four names with a limit of three")
	assertMessage(t, before, h.get(m.ID), "a change that fails on a limit changes nothing")

	got := h.update(m.ID, messaging.MessageChange{AddReactions: []messaging.Reaction{r("c", "x")}, Check: Limits(3, 0)})
	assert.Equal(t, []messaging.Reaction{r("a", "x"), r("b", "x"), r("c", "x")}, got.Reactions, "exactly the limit is allowed")

	got = h.update(m.ID, messaging.MessageChange{AddReactions: []messaging.Reaction{r("a", "y"), r("c", "y")}, Check: Limits(3, 0)})
	assert.Equal(t, []messaging.Reaction{r("a", "x", "y"), r("b", "x"), r("c", "x", "y")}, got.Reactions, "reactors join existing names at the limit")

	before = h.get(m.ID)
	_, err = h.s.UpdateMessage(h.ctx, m.ID, messaging.MessageChange{AddReactions: []messaging.Reaction{r("b", "y"), r("d", "y")}, Check: Limits(3, 0)})
	assert.ErrorIs(t, err, messaging.ErrInvalid, "a fourth name")
	assertMessage(t, before, h.get(m.ID), "nothing of the failed change is applied, not even the reactor of an existing name")

	got = h.update(m.ID, messaging.MessageChange{AddReactions: []messaging.Reaction{r("d", "y")}})
	require.Len(t, got.Reactions, 4, "without a Check, no limit")
}
