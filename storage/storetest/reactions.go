package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

var reactionTests = []test{
	{"merge_keeps_first_use_order_without_duplicates", testReactionMerge},
	{"adding_again_changes_nothing", testReactionIdempotent},
	{"remove_reaction", testRemoveReaction},
	{"max_reaction_names", testMaxReactionNames},
}

// r is shorthand for a reaction: name, the usernames of its reactors,
// and their number as its Count.
func r(name string, reactors ...string) messaging.Reaction {
	return messaging.Reaction{Name: name, Reactors: reactors, Count: len(reactors)}
}

// as returns rs as a MessageChange names reactors: by contact id. Each
// username of rs is that of a stored contact, or becomes one.
func (h *harness) as(rs ...messaging.Reaction) []messaging.Reaction {
	h.t.Helper()
	return reactorIDs(h.t, h.ctx, h.s, rs...)
}

// reactorIDs is harness.as, for benchmarks.
func reactorIDs(tb testing.TB, ctx context.Context, s Store, rs ...messaging.Reaction) []messaging.Reaction {
	tb.Helper()
	out := make([]messaging.Reaction, len(rs))
	for i, r := range rs {
		out[i] = messaging.Reaction{Name: r.Name, Reactors: make([]string, len(r.Reactors))}
		for j, username := range r.Reactors {
			c, err := s.ContactByUsername(ctx, username)
			if errors.Is(err, messaging.ErrNotFound) {
				c = messaging.Contact{ID: ids.New(ids.Contact), Username: username, CreatedAt: base}
				err = s.PutContact(ctx, c)
			}
			require.NoError(tb, err, "the contact of reactor %q", username)
			out[i].Reactors[j] = c.ID
		}
	}
	return out
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

	got := h.update(m.ID, driver.MessageChange{AddReactions: h.as(r("👍", "alice"))})
	assert.Equal(t, []messaging.Reaction{r("👍", "alice")}, got.Reactions)

	got = h.update(m.ID, driver.MessageChange{AddReactions: h.as(
		r("🎉", "bob"),
		r("👍", "bob", "alice"),
		r("🎉", "carol", "bob"),
		r("eyes", "dave", "dave"),
		r("thumbs_up", "carol"),
	)})
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
	add := h.as(r("heart", "alice", "bob"), r("fire", "bob"))
	first := h.update(m.ID, driver.MessageChange{AddReactions: add})
	again := h.update(m.ID, driver.MessageChange{AddReactions: add})
	assert.Equal(t, first.Reactions, again.Reactions)
	assert.Equal(t, []messaging.Reaction{r("heart", "alice", "bob"), r("fire", "bob")}, again.Reactions)
}

func testRemoveReaction(t *testing.T, h *harness) {
	h.reactors("bob", "carol", "dave")
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	h.update(m.ID, driver.MessageChange{AddReactions: h.as(r("👍", "alice", "bob"), r("🎉", "bob"), r("eyes", "carol"))})

	remove := func(name, who string) messaging.Message {
		t.Helper()
		rm := h.as(r(name, who))[0]
		return h.update(m.ID, driver.MessageChange{RemoveReaction: &rm})
	}
	got := remove("👍", "bob")
	assert.Equal(t, []messaging.Reaction{r("👍", "alice"), r("🎉", "bob"), r("eyes", "carol")}, got.Reactions)

	got = remove("🎉", "bob")
	assert.Equal(t, []messaging.Reaction{r("👍", "alice"), r("eyes", "carol")}, got.Reactions, "a reaction left with no reactors disappears")

	got = remove("👍", "zed")
	assert.Equal(t, []messaging.Reaction{r("👍", "alice"), r("eyes", "carol")}, got.Reactions, "removing an absent reactor changes nothing")
	got = remove("nope", "alice")
	assert.Equal(t, []messaging.Reaction{r("👍", "alice"), r("eyes", "carol")}, got.Reactions, "removing an absent name changes nothing")

	got = h.update(m.ID, driver.MessageChange{AddReactions: h.as(r("🎉", "dave"), r("👍", "bob"))})
	assert.Equal(t, []messaging.Reaction{r("👍", "alice", "bob"), r("eyes", "carol"), r("🎉", "dave")}, got.Reactions,
		"a name used again after it disappeared is new and comes last")

	remove("👍", "alice")
	got = h.update(m.ID, driver.MessageChange{AddReactions: h.as(r("👍", "alice"))})
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
	h.update(m.ID, driver.MessageChange{AddReactions: h.as(r("a", "x"), r("b", "x"))})
	before := h.get(m.ID)

	text := "changed"
	_, err := h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{
		Text:         &text,
		AddReactions: h.as(r("c", "x"), r("d", "x")),
		UpdatedAt:    at(9),
		Check:        Limits(3, 0),
	})
	assert.ErrorIs(t, err, messaging.ErrInvalid, "four names with a limit of three")
	assertMessage(t, before, h.get(m.ID), "a change that fails on a limit changes nothing")

	got := h.update(m.ID, driver.MessageChange{AddReactions: h.as(r("c", "x")), Check: Limits(3, 0)})
	assert.Equal(t, []messaging.Reaction{r("a", "x"), r("b", "x"), r("c", "x")}, got.Reactions, "exactly the limit is allowed")

	got = h.update(m.ID, driver.MessageChange{AddReactions: h.as(r("a", "y"), r("c", "y")), Check: Limits(3, 0)})
	assert.Equal(t, []messaging.Reaction{r("a", "x", "y"), r("b", "x"), r("c", "x", "y")}, got.Reactions, "reactors join existing names at the limit")

	before = h.get(m.ID)
	_, err = h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{AddReactions: h.as(r("b", "y"), r("d", "y")), Check: Limits(3, 0)})
	assert.ErrorIs(t, err, messaging.ErrInvalid, "a fourth name")
	assertMessage(t, before, h.get(m.ID), "nothing of the failed change is applied, not even the reactor of an existing name")

	got = h.update(m.ID, driver.MessageChange{AddReactions: h.as(r("d", "y"))})
	require.Len(t, got.Reactions, 4, "without a Check, no limit")
}
