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
