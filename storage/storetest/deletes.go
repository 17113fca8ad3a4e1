package storetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

var deleteTests = []test{
	{"delete_message_cascades", testDeleteMessageCascades},
	{"delete_message_without_attachments", testDeleteMessagePlain},
	{"delete_attachment", testDeleteAttachment},
	{"pending_deletions_oldest_first", testPendingOrder},
	{"keys_in_use", testKeysInUse},
}

func testDeleteMessageCascades(t *testing.T, h *harness) {
	h.reactors("bob")
	alice := h.contact("alice")
	a1 := h.attachment("c", alice, at(1))
	a2 := h.attachment("", alice, at(2))
	a3 := h.attachment("c", alice, at(3))
	loose := h.attachment("c", alice, at(4))
	m1 := h.message("c", alice, at(5), a2.ID, a1.ID)
	m2 := h.message("c", alice, at(6), a3.ID)
	h.react(m1.ID, r("👍", "alice", "bob"))
	m2 = h.get(m2.ID)

	removed, err := h.s.DeleteMessage(h.ctx, m1.ID, nil)
	require.NoError(t, err)
	assert.ElementsMatch(t, []messaging.Attachment{linked(a1, m1), linked(a2, m1)}, removed, "DeleteMessage returns the removed attachments")

	_, err = h.s.GetMessage(h.ctx, m1.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "the message is gone")
	for _, a := range []messaging.Attachment{a1, a2} {
		_, err = h.s.GetAttachment(h.ctx, a.ID)
		assert.ErrorIs(t, err, messaging.ErrNotFound, "the attachment rows are gone")
	}
	pending, err := h.s.PendingDeletions(h.ctx, 10)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{a1.Key, a2.Key}, pending, "their keys are pending deletions")

	assertMessage(t, m2, h.get(m2.ID), "other messages are untouched")
	assert.Equal(t, loose, h.getAttachment(loose.ID), "unlinked attachments are untouched")
	msgs, _, err := h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 10}})
	require.NoError(t, err)
	assert.Equal(t, []string{m2.ID}, messageIDs(msgs))
	atts, _, err := h.s.ListAttachments(h.ctx, driver.AttachmentQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 10}, UploaderID: alice.ID})
	require.NoError(t, err)
	assert.Equal(t, []string{loose.ID, a3.ID}, attachmentIDs(atts))

	_, err = h.s.DeleteMessage(h.ctx, m1.ID, nil)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "deleting twice")
	_, err = h.s.UpdateMessage(h.ctx, m1.ID, driver.MessageChange{Reactions: h.adds("bob", "👍")})
	assert.ErrorIs(t, err, messaging.ErrNotFound, "updating a deleted message")
}

func testDeleteMessagePlain(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	removed, err := h.s.DeleteMessage(h.ctx, m.ID, nil)
	require.NoError(t, err)
	assert.Empty(t, removed)
	pending, err := h.s.PendingDeletions(h.ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, pending)
	h.assertNoMessage(m.ID)
}

func testDeleteAttachment(t *testing.T, h *harness) {
	alice := h.contact("alice")
	a1 := h.attachment("c", alice, at(1))
	a2 := h.attachment("c", alice, at(2))
	m := h.message("c", alice, at(3), a1.ID, a2.ID)

	got, err := h.s.DeleteAttachment(h.ctx, a1.ID, nil)
	require.NoError(t, err)
	assert.Equal(t, linked(a1, m), got, "DeleteAttachment returns the removed row")
	_, err = h.s.GetAttachment(h.ctx, a1.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	assert.Equal(t, []messaging.Attachment{linked(a2, m)}, h.get(m.ID).Attachments, "a deleted attachment disappears from its message")
	pending, err := h.s.PendingDeletions(h.ctx, 10)
	require.NoError(t, err)
	assert.Equal(t, []string{a1.Key}, pending)

	_, err = h.s.DeleteAttachment(h.ctx, a1.ID, nil)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "deleting twice")

	removed, err := h.s.DeleteMessage(h.ctx, m.ID, nil)
	require.NoError(t, err)
	assert.Equal(t, []messaging.Attachment{linked(a2, m)}, removed)
}

func testPendingOrder(t *testing.T, h *harness) {
	alice := h.contact("alice")
	as := []messaging.Attachment{h.attachment("c", alice, at(1)), h.attachment("c", alice, at(3)), h.attachment("c", alice, at(2))}
	var keys []string
	for _, i := range []int{2, 0, 1} { // neither in the order of keys nor of CreatedAt
		_, err := h.s.DeleteAttachment(h.ctx, as[i].ID, nil)
		require.NoError(t, err)
		keys = append(keys, as[i].Key)
	}
	last := h.attachment("c", alice, at(0))
	m := h.message("c", alice, at(1), last.ID)
	_, err := h.s.DeleteMessage(h.ctx, m.ID, nil)
	require.NoError(t, err)
	keys = append(keys, last.Key)

	got, err := h.s.PendingDeletions(h.ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, keys[:2], got, "up to limit, oldest first")
	got, err = h.s.PendingDeletions(h.ctx, 10)
	require.NoError(t, err)
	assert.Equal(t, keys, got, "oldest first, in the order they were recorded")

	require.NoError(t, h.s.ForgetDeletion(h.ctx, keys[1]))
	got, err = h.s.PendingDeletions(h.ctx, 10)
	require.NoError(t, err)
	assert.Equal(t, []string{keys[0], keys[2], keys[3]}, got)
	require.NoError(t, h.s.ForgetDeletion(h.ctx, keys[1]), "forgetting twice is no error")
	require.NoError(t, h.s.ForgetDeletion(h.ctx, attachments.KeyPrefix+"never-pending"), "forgetting an unknown key is no error")
	for _, k := range []string{keys[0], keys[2], keys[3]} {
		require.NoError(t, h.s.ForgetDeletion(h.ctx, k))
	}
	got, err = h.s.PendingDeletions(h.ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func testKeysInUse(t *testing.T, h *harness) {
	alice := h.contact("alice")
	live := h.attachment("c", alice, at(1))
	linkedAtt := h.attachment("c", alice, at(2))
	h.message("c", alice, at(3), linkedAtt.ID)
	gone := h.attachment("c", alice, at(4))
	_, err := h.s.DeleteAttachment(h.ctx, gone.ID, nil)
	require.NoError(t, err)
	forgotten := h.attachment("c", alice, at(5))
	_, err = h.s.DeleteAttachment(h.ctx, forgotten.ID, nil)
	require.NoError(t, err)
	require.NoError(t, h.s.ForgetDeletion(h.ctx, forgotten.Key))
	unknown := attachments.KeyPrefix + "orphan"

	used, err := h.s.KeysInUse(h.ctx, []string{live.Key, linkedAtt.Key, gone.Key, forgotten.Key, unknown})
	require.NoError(t, err)
	assert.True(t, used[live.Key], "an attachment row's key")
	assert.True(t, used[linkedAtt.Key], "a linked attachment row's key")
	assert.True(t, used[gone.Key], "a pending deletion's key")
	assert.False(t, used[forgotten.Key], "a forgotten deletion's key")
	assert.False(t, used[unknown], "a key of nothing")

	used, err = h.s.KeysInUse(h.ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, used, "no keys asked, none reported")
}
