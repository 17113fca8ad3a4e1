package storetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// attachTests check MessageChange.NewAttachment: an upload stored linked to
// its message in one transaction.
var attachTests = []test{
	{"new_attachment_is_stored_linked", testNewAttachment},
	{"new_attachment_counts_against_the_limit", testNewAttachmentLimit},
	{"new_attachment_with_an_existing_id_is_conflict", testNewAttachmentConflict},
	{"new_attachment_of_a_missing_message_stores_nothing", testNewAttachmentNoMessage},
}

func testNewAttachment(t *testing.T, h *harness) {
	alice := h.contact("alice")
	old := h.attachment("c", alice, at(1))
	m := h.message("c", alice, at(2), old.ID)
	a := newAttachment("", alice.ID, at(3))
	got := h.update(m.ID, driver.MessageChange{NewAttachment: &a, UpdatedAt: at(4)})
	want := linked(a, m)
	assert.Equal(t, []messaging.Attachment{linked(old, m), want}, got.Attachments)
	assert.Equal(t, want, h.getAttachment(a.ID), "the row is stored linked, in the message's conversation")
	assert.True(t, got.UpdatedAt.Equal(at(4)))
}

func testNewAttachmentLimit(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("c", alice, at(1), h.attachment("c", alice, at(0)).ID)
	a := newAttachment("c", alice.ID, at(2))
	var seen driver.MessageCounts
	_, err := h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{NewAttachment: &a, Check: func(before, after driver.MessageCounts) error {
		seen = after
		return Limits(0, 1)(before, after)
	}})
	assert.ErrorIs(t, err, messaging.ErrInvalid)
	assert.Equal(t, 2, seen.Attachments, "Check counts the new attachment")
	_, err = h.s.GetAttachment(h.ctx, a.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "no row is stored")
	assert.Len(t, h.get(m.ID).Attachments, 1)
}

func testNewAttachmentConflict(t *testing.T, h *harness) {
	alice := h.contact("alice")
	a := h.attachment("c", alice, at(1))
	m := h.message("c", alice, at(2))
	dup := a
	_, err := h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{NewAttachment: &dup})
	assert.ErrorIs(t, err, messaging.ErrConflict)
	assert.Equal(t, a, h.getAttachment(a.ID), "the existing row is untouched")
	assert.Empty(t, h.get(m.ID).Attachments)
}

func testNewAttachmentNoMessage(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := newMessage("c", alice, at(1))
	a := newAttachment("c", alice.ID, at(2))
	_, err := h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{NewAttachment: &a})
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	_, err = h.s.GetAttachment(h.ctx, a.ID)
	require.ErrorIs(t, err, messaging.ErrNotFound)
}
