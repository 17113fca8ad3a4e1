package storetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
)

// serviceTests drive the messaging Service over the backend: the wording
// people read is the Service's, so a failure reads the same on every
// backend.
var serviceTests = []test{
	{"same_words_on_every_backend", testSameWords},
	{"renamed_contact_keeps_its_reactions", testRenamedReactor},
}

// testRenamedReactor renames a contact who reacted, and gives its old
// username to a new contact: the reactions stay with the renamed contact,
// under its new name, and the newcomer inherits none.
func testRenamedReactor(t *testing.T, h *harness) {
	msgs := messaging.New(h.s, nil)
	alice, err := msgs.SaveContact(h.ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	bob, err := msgs.SaveContact(h.ctx, messaging.Contact{Username: "bob"})
	require.NoError(t, err)
	m, err := msgs.Create(h.ctx, alice, messaging.NewMessage{ConversationID: "general", Text: "hi"})
	require.NoError(t, err)
	_, err = msgs.Update(h.ctx, bob, m.ID, messaging.Update{Reactions: []messaging.Reaction{r("👍", "bob"), r("eyes", "bob")}})
	require.NoError(t, err)

	bob.Username = "robert"
	bob, err = msgs.SaveContact(h.ctx, bob)
	require.NoError(t, err)
	newBob, err := msgs.SaveContact(h.ctx, messaging.Contact{Username: "bob"})
	require.NoError(t, err)
	require.NotEqual(t, bob.ID, newBob.ID, "the old name goes to a new contact")

	want := []messaging.Reaction{r("👍", "robert"), r("eyes", "robert")}
	got, err := msgs.Get(h.ctx, alice, m.ID)
	require.NoError(t, err)
	assert.Equal(t, want, got.Reactions, "the renamed contact keeps its reactions, shown by its new name")
	page, err := msgs.List(h.ctx, alice, messaging.ListOptions{ConversationID: "general"})
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	assert.Equal(t, want, page.Data[0].Reactions, "in a list too")
	rs, err := msgs.Reactors(h.ctx, alice, m.ID, "👍", messaging.ReactorListOptions{})
	require.NoError(t, err)
	require.Len(t, rs.Data, 1)
	assert.Equal(t, bob.ID, rs.Data[0].ContactID)
	assert.Equal(t, "robert", rs.Data[0].Username)

	// The newcomer has no reaction to take back, and reacts on its own.
	got, err = msgs.RemoveReaction(h.ctx, newBob, m.ID, "👍")
	require.NoError(t, err)
	assert.Equal(t, want, got.Reactions, "the newcomer cannot remove the reaction of the one who had its name")
	got, err = msgs.Update(h.ctx, newBob, m.ID, messaging.Update{Reactions: []messaging.Reaction{r("👍", "bob")}})
	require.NoError(t, err)
	assert.Equal(t, []messaging.Reaction{r("👍", "robert", "bob"), r("eyes", "robert")}, got.Reactions, "the newcomer is a reactor of its own")
	got, err = msgs.RemoveReaction(h.ctx, bob, m.ID, "eyes")
	require.NoError(t, err)
	assert.Equal(t, []messaging.Reaction{r("👍", "robert", "bob")}, got.Reactions, "the renamed contact removes its own reaction")
}

func testSameWords(t *testing.T, h *harness) {
	msgs := messaging.New(h.s, &messaging.Options{MaxReactionNames: 1, MaxAttachments: 1})
	alice, err := msgs.SaveContact(h.ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	m, err := msgs.Create(h.ctx, alice, messaging.NewMessage{ConversationID: "general", Text: "hi"})
	require.NoError(t, err)

	want := func(err error, kind messaging.ErrorKind, param, message string) {
		t.Helper()
		var e *messaging.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, kind, messaging.KindOf(err))
		assert.Equal(t, param, e.Param)
		assert.Equal(t, message, e.Message)
	}

	_, err = msgs.Update(h.ctx, alice, m.ID, messaging.Update{Reactions: []messaging.Reaction{{Name: "a", Reactors: []string{"alice"}}}})
	require.NoError(t, err)
	_, err = msgs.Update(h.ctx, alice, m.ID, messaging.Update{Reactions: []messaging.Reaction{{Name: "b", Reactors: []string{"alice"}}}})
	want(err, messaging.ErrInvalid, "reactions", "a message may have at most 1 distinct reactions")

	atts := []messaging.Attachment{h.attachment("general", alice, at(1)), h.attachment("general", alice, at(2))}
	_, err = msgs.Update(h.ctx, alice, m.ID, messaging.Update{Attachments: []string{atts[0].ID}})
	require.NoError(t, err)
	_, err = msgs.Update(h.ctx, alice, m.ID, messaging.Update{Attachments: []string{atts[1].ID}})
	want(err, messaging.ErrInvalid, "attachments", "a message may have at most 1 attachments")

	missing := ids.NewAt(ids.Message, base)
	_, err = msgs.Get(h.ctx, alice, missing)
	want(err, messaging.ErrNotFound, "", "no such message: "+missing)

	_, err = msgs.SaveContact(h.ctx, messaging.Contact{ID: "ctc_other", Username: "alice"})
	want(err, messaging.ErrConflict, "username", "username is taken by another contact")
}
