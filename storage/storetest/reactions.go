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
	{"unreact_several_names", testUnreactSeveral},
	{"reactions_with_an_edit_in_one_change", testReactionsWithEdit},
	{"refused_mixed_change_applies_nothing", testRefusedMixedChange},
}

// r is shorthand for a reaction: name, the usernames of its reactors,
// and their number as its Count.
func r(name string, reactors ...string) messaging.Reaction {
	return messaging.Reaction{Name: name, Reactors: reactors, Count: len(reactors)}
}

// cid returns the id of the contact with the username, stored first if
// there is none.
func (h *harness) cid(username string) string {
	h.t.Helper()
	return contactID(h.t, h.ctx, h.s, username)
}

// contactID is harness.cid, for benchmarks.
func contactID(tb testing.TB, ctx context.Context, s Store, username string) string {
	tb.Helper()
	c, err := s.ContactByUsername(ctx, username)
	if errors.Is(err, messaging.ErrNotFound) {
		c = messaging.Contact{ID: ids.New(ids.Contact), Username: username, CreatedAt: base}
		err = s.PutContact(ctx, c)
	}
	require.NoError(tb, err, "the contact of reactor %q", username)
	return c.ID
}

// adds is the reaction change of the contact username adding names.
func (h *harness) adds(username string, names ...string) *driver.ReactionChange {
	h.t.Helper()
	return &driver.ReactionChange{ContactID: h.cid(username), Add: names}
}

// removes is the reaction change of the contact username removing names.
func (h *harness) removes(username string, names ...string) *driver.ReactionChange {
	h.t.Helper()
	return &driver.ReactionChange{ContactID: h.cid(username), Remove: names}
}

// react adds the reactions rs (reactors by username) to the message id,
// one change for each name and reactor, in order, and returns the
// message after the last.
func (h *harness) react(id string, rs ...messaging.Reaction) messaging.Message {
	h.t.Helper()
	var m messaging.Message
	for _, r := range rs {
		for _, who := range r.Reactors {
			m = h.update(id, driver.MessageChange{Reactions: h.adds(who, r.Name)})
		}
	}
	return m
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

	got := h.update(m.ID, driver.MessageChange{Reactions: h.adds("alice", "👍")})
	assert.Equal(t, []messaging.Reaction{r("👍", "alice")}, got.Reactions)

	h.update(m.ID, driver.MessageChange{Reactions: h.adds("bob", "🎉", "👍")})
	h.update(m.ID, driver.MessageChange{Reactions: h.adds("alice", "👍")})
	h.update(m.ID, driver.MessageChange{Reactions: h.adds("carol", "🎉")})
	h.update(m.ID, driver.MessageChange{Reactions: h.adds("dave", "eyes")})
	h.update(m.ID, driver.MessageChange{Reactions: h.adds("dave", "eyes")})
	got = h.update(m.ID, driver.MessageChange{Reactions: h.adds("carol", "thumbs_up")})
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
	h.update(m.ID, driver.MessageChange{Reactions: h.adds("alice", "heart")})
	first := h.update(m.ID, driver.MessageChange{Reactions: h.adds("bob", "heart", "fire")})
	again := h.update(m.ID, driver.MessageChange{Reactions: h.adds("bob", "heart", "fire")})
	assert.Equal(t, first.Reactions, again.Reactions)
	assert.Equal(t, []messaging.Reaction{r("heart", "alice", "bob"), r("fire", "bob")}, again.Reactions)
}

func testRemoveReaction(t *testing.T, h *harness) {
	h.reactors("bob", "carol", "dave")
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	h.react(m.ID, r("👍", "alice", "bob"), r("🎉", "bob"), r("eyes", "carol"))

	remove := func(name, who string) messaging.Message {
		t.Helper()
		return h.update(m.ID, driver.MessageChange{Reactions: h.removes(who, name)})
	}
	got := remove("👍", "bob")
	assert.Equal(t, []messaging.Reaction{r("👍", "alice"), r("🎉", "bob"), r("eyes", "carol")}, got.Reactions)

	got = remove("🎉", "bob")
	assert.Equal(t, []messaging.Reaction{r("👍", "alice"), r("eyes", "carol")}, got.Reactions, "a reaction left with no reactors disappears")

	got = remove("👍", "zed")
	assert.Equal(t, []messaging.Reaction{r("👍", "alice"), r("eyes", "carol")}, got.Reactions, "removing an absent reactor changes nothing")
	got = remove("nope", "alice")
	assert.Equal(t, []messaging.Reaction{r("👍", "alice"), r("eyes", "carol")}, got.Reactions, "removing an absent name changes nothing")

	got = h.react(m.ID, r("🎉", "dave"), r("👍", "bob"))
	assert.Equal(t, []messaging.Reaction{r("👍", "alice", "bob"), r("eyes", "carol"), r("🎉", "dave")}, got.Reactions,
		"a name used again after it disappeared is new and comes last")

	remove("👍", "alice")
	got = h.update(m.ID, driver.MessageChange{Reactions: h.adds("alice", "👍")})
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
	h.update(m.ID, driver.MessageChange{Reactions: h.adds("x", "a", "b")})
	before := h.get(m.ID)

	text := "changed"
	_, err := h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{
		Text:      &text,
		Reactions: h.adds("x", "c", "d"),
		UpdatedAt: at(9),
		Check:     Limits(3, 0),
	})
	assert.ErrorIs(t, err, messaging.ErrInvalid, "four names with a limit of three")
	assertMessage(t, before, h.get(m.ID), "a change that fails on a limit changes nothing")

	got := h.update(m.ID, driver.MessageChange{Reactions: h.adds("x", "c"), Check: Limits(3, 0)})
	assert.Equal(t, []messaging.Reaction{r("a", "x"), r("b", "x"), r("c", "x")}, got.Reactions, "exactly the limit is allowed")

	got = h.update(m.ID, driver.MessageChange{Reactions: h.adds("y", "a", "c"), Check: Limits(3, 0)})
	assert.Equal(t, []messaging.Reaction{r("a", "x", "y"), r("b", "x"), r("c", "x", "y")}, got.Reactions, "reactors join existing names at the limit")

	before = h.get(m.ID)
	_, err = h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{Reactions: h.adds("y", "b", "d"), Check: Limits(3, 0)})
	assert.ErrorIs(t, err, messaging.ErrInvalid, "a fourth name")
	assertMessage(t, before, h.get(m.ID), "nothing of the failed change is applied, not even the reactor of an existing name")

	got = h.update(m.ID, driver.MessageChange{Reactions: h.adds("y", "d")})
	require.Len(t, got.Reactions, 4, "without a Check, no limit")
}

func testUnreactSeveral(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	h.update(m.ID, driver.MessageChange{Reactions: h.adds("alice", "a", "b", "c")})
	h.update(m.ID, driver.MessageChange{Reactions: h.adds("bob", "b", "d")})
	got := h.update(m.ID, driver.MessageChange{Reactions: h.removes("alice", "a", "b", "absent")})
	assert.Equal(t, []messaging.Reaction{r("b", "bob"), r("c", "alice"), r("d", "bob")}, got.Reactions,
		"every name removed at once; a name left with no reactors disappears; an absent one is no error")
	got = h.update(m.ID, driver.MessageChange{Reactions: h.removes("bob", "b", "d")})
	assert.Equal(t, []messaging.Reaction{r("c", "alice")}, got.Reactions)
}

// testReactionsWithEdit makes one change of text, reactions, attachments
// and read state, as one PUT may: all of it is applied, with its
// idempotency record.
func testReactionsWithEdit(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	a := h.attachment("c", alice, at(2))
	h.update(m.ID, driver.MessageChange{Reactions: h.adds("bob", "👍")})
	text := "edited"
	d := done(claim(alice.ID, "mixed", at(0)), m.ID)
	got := h.update(m.ID, driver.MessageChange{
		Text: &text, RevisionID: ids.NewAt(ids.Revision, at(5)),
		Reactions:       h.adds("alice", "👍", "eyes"),
		LinkAttachments: []string{a.ID},
		Read:            ptr(true), ReadAt: at(5),
		UpdatedAt: at(5),
		Check:     Limits(50, 10),
		Done:      &d,
	})
	assert.Equal(t, "edited", got.Text)
	assert.Equal(t, []messaging.Reaction{r("👍", "bob", "alice"), r("eyes", "alice")}, got.Reactions)
	assert.Equal(t, []string{a.ID}, attachmentIDs(got.Attachments))
	assert.Equal(t, at(5), got.ReadAt)
	assert.Equal(t, at(5), got.UpdatedAt)
	assert.Equal(t, []string{m.Text}, revisionTexts(h.revisions(m.ID)), "the replaced text is kept")
	rec, ok := h.record(alice.ID, "mixed")
	require.True(t, ok, "the idempotency record is stored with the change")
	assert.Equal(t, m.ID, string(rec.Result))

	text = "edited again"
	got = h.update(m.ID, driver.MessageChange{Text: &text, Reactions: h.removes("alice", "👍", "eyes"), UpdatedAt: at(6)})
	assert.Equal(t, "edited again", got.Text)
	assert.Equal(t, []messaging.Reaction{r("👍", "bob")}, got.Reactions, "reactions taken back with an edit")
}

// testRefusedMixedChange makes changes of text, reactions and attachments
// that fail on one part: none of it is applied, nor their idempotency
// record.
func testRefusedMixedChange(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	a1, a2 := h.attachment("c", alice, at(2)), h.attachment("c", alice, at(3))
	h.update(m.ID, driver.MessageChange{Reactions: h.adds("bob", "a"), LinkAttachments: []string{a1.ID}})
	before := h.get(m.ID)
	text := "never"
	for i, tc := range []struct {
		name string
		ch   driver.MessageChange
		kind error
	}{
		{"over the attachment limit", driver.MessageChange{LinkAttachments: []string{a2.ID}, Check: Limits(50, 1)}, messaging.ErrInvalid},
		{"over the reaction name limit", driver.MessageChange{Reactions: h.adds("alice", "a", "b"), Check: Limits(1, 0)}, messaging.ErrInvalid},
		{"an attachment that does not exist", driver.MessageChange{LinkAttachments: []string{ids.New(ids.Attachment)}}, messaging.ErrNotFound},
	} {
		ch := tc.ch
		ch.Text, ch.RevisionID, ch.UpdatedAt = &text, ids.NewAt(ids.Revision, at(10+i)), at(10+i)
		if ch.Reactions == nil {
			ch.Reactions = h.adds("alice", "a", "new")
		}
		key := "refused" + itoa(i)
		d := done(claim(alice.ID, key, at(0)), m.ID)
		ch.Done = &d
		_, err := h.s.UpdateMessage(h.ctx, m.ID, ch)
		assert.ErrorIs(t, err, tc.kind, tc.name)
		assertMessage(t, before, h.get(m.ID), "%s: no reactor, no text, no link", tc.name)
		assert.Empty(t, h.revisions(m.ID), "%s: no revision", tc.name)
		_, ok := h.record(alice.ID, key)
		assert.False(t, ok, "%s: no idempotency record", tc.name)
		assert.Equal(t, a2, h.getAttachment(a2.ID), "%s: the attachment stays unlinked", tc.name)
	}
}
