package storetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

var linkTests = []test{
	{"create_links_attachments_oldest_first", testCreateLinks},
	{"create_with_missing_attachment_stores_nothing", testCreateMissingAttachment},
	{"create_with_attachment_of_another_message_is_conflict", testCreateOtherMessage},
	{"create_with_attachment_of_another_conversation_is_conflict", testCreateOtherConversation},
	{"update_links_and_relinking_is_fine", testUpdateLinks},
	{"update_link_errors_change_nothing", testUpdateLinkErrors},
	{"max_attachments", testMaxAttachments},
}

func testCreateLinks(t *testing.T, h *harness) {
	alice := h.contact("alice")
	a1 := h.attachment("c", alice, at(1))
	a2 := h.attachment("", alice, at(2)) // unfiled: linking files it in c
	a3 := h.attachment("c", alice, at(0))
	other := h.attachment("c", alice, at(3))

	m := h.message("c", alice, at(5), a1.ID, a2.ID, a3.ID)
	got := h.get(m.ID)
	want := []messaging.Attachment{linked(a3, m), linked(a1, m), linked(a2, m)}
	assert.Equal(t, want, got.Attachments, "attachments oldest first, each with MessageID and ConversationID set")
	for _, a := range want {
		assert.Equal(t, a, h.getAttachment(a.ID))
	}
	assert.Equal(t, other, h.getAttachment(other.ID), "other attachments are untouched")
}

// assertNoMessage checks that the message was not stored.
func (h *harness) assertNoMessage(id string) {
	h.t.Helper()
	_, err := h.s.GetMessage(h.ctx, id)
	assert.ErrorIs(h.t, err, messaging.ErrNotFound, "the message must not be stored")
	items, _, err := h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 100}})
	require.NoError(h.t, err)
	assert.NotContains(h.t, messageIDs(items), id)
}

func testCreateMissingAttachment(t *testing.T, h *harness) {
	alice := h.contact("alice")
	a1 := h.attachment("", alice, at(1))
	m := newMessage("c", alice, at(2))
	err := h.s.CreateMessage(h.ctx, m, []string{a1.ID, ids.New(ids.Attachment)}, nil)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	h.assertNoMessage(m.ID)
	assert.Equal(t, a1, h.getAttachment(a1.ID), "the good attachment stays unlinked")
}

func testCreateOtherMessage(t *testing.T, h *harness) {
	alice := h.contact("alice")
	a1 := h.attachment("c", alice, at(1))
	a2 := h.attachment("c", alice, at(2))
	m1 := h.message("c", alice, at(3), a1.ID)
	m2 := newMessage("c", alice, at(4))
	err := h.s.CreateMessage(h.ctx, m2, []string{a2.ID, a1.ID}, nil)
	assert.ErrorIs(t, err, messaging.ErrConflict)
	h.assertNoMessage(m2.ID)
	assert.Equal(t, a2, h.getAttachment(a2.ID), "the other attachment stays unlinked")
	assert.Equal(t, linked(a1, m1), h.getAttachment(a1.ID), "the attachment stays with its message")
	assert.Equal(t, []string{a1.ID}, attachmentIDs(h.get(m1.ID).Attachments))
}

func testCreateOtherConversation(t *testing.T, h *harness) {
	alice := h.contact("alice")
	a1 := h.attachment("c", alice, at(1))
	elsewhere := h.attachment("d", alice, at(2))
	m := newMessage("c", alice, at(3))
	err := h.s.CreateMessage(h.ctx, m, []string{a1.ID, elsewhere.ID}, nil)
	assert.ErrorIs(t, err, messaging.ErrConflict)
	h.assertNoMessage(m.ID)
	assert.Equal(t, a1, h.getAttachment(a1.ID))
	assert.Equal(t, elsewhere, h.getAttachment(elsewhere.ID))
}

func testUpdateLinks(t *testing.T, h *harness) {
	alice := h.contact("alice")
	a1 := h.attachment("c", alice, at(2))
	a2 := h.attachment("", alice, at(1))
	m := h.message("c", alice, at(3))

	got := h.update(m.ID, driver.MessageChange{LinkAttachments: []string{a1.ID}, UpdatedAt: at(4)})
	assert.Equal(t, []messaging.Attachment{linked(a1, m)}, got.Attachments)
	assert.Equal(t, at(4), got.UpdatedAt)

	got = h.update(m.ID, driver.MessageChange{LinkAttachments: []string{a1.ID}})
	assert.Equal(t, []messaging.Attachment{linked(a1, m)}, got.Attachments, "relinking to the same message is fine and adds nothing")

	got = h.update(m.ID, driver.MessageChange{LinkAttachments: []string{a1.ID, a2.ID}})
	assert.Equal(t, []messaging.Attachment{linked(a2, m), linked(a1, m)}, got.Attachments, "oldest first")
	assert.Equal(t, linked(a2, m), h.getAttachment(a2.ID))
}

func testUpdateLinkErrors(t *testing.T, h *harness) {
	alice := h.contact("alice")
	a1 := h.attachment("c", alice, at(1))
	a2 := h.attachment("", alice, at(2))
	elsewhere := h.attachment("d", alice, at(3))
	m1 := h.message("c", alice, at(4), a1.ID)
	m2 := h.message("c", alice, at(5))
	text := "changed"

	cases := []struct {
		name    string
		link    []string
		wantErr error
	}{
		{"linked_to_another_message", []string{a2.ID, a1.ID}, messaging.ErrConflict},
		{"of_another_conversation", []string{a2.ID, elsewhere.ID}, messaging.ErrConflict},
		{"missing", []string{a2.ID, ids.New(ids.Attachment)}, messaging.ErrNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.s.UpdateMessage(h.ctx, m2.ID, driver.MessageChange{
				Text:            &text,
				Reactions:       h.adds("alice", "👍"),
				LinkAttachments: c.link,
				UpdatedAt:       at(9),
			})
			assert.ErrorIs(t, err, c.wantErr)
			assertMessage(t, m2, h.get(m2.ID), "the failed change is not applied")
			assert.Equal(t, a2, h.getAttachment(a2.ID), "the good attachment stays unlinked")
			assert.Equal(t, linked(a1, m1), h.getAttachment(a1.ID))
			assert.Equal(t, elsewhere, h.getAttachment(elsewhere.ID))
		})
	}
}

func testMaxAttachments(t *testing.T, h *harness) {
	alice := h.contact("alice")
	var as []messaging.Attachment
	for i := range 5 {
		as = append(as, h.attachment("c", alice, at(i)))
	}
	m := h.message("c", alice, at(10), as[0].ID, as[1].ID)
	before := h.get(m.ID)

	_, err := h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{LinkAttachments: []string{as[2].ID, as[3].ID}, UpdatedAt: at(11), Check: Limits(0, 3)})
	assert.ErrorIs(t, err, messaging.ErrInvalid, "four attachments with a limit of three")
	assertMessage(t, before, h.get(m.ID), "nothing changed")
	assert.Equal(t, as[2], h.getAttachment(as[2].ID), "not linked")

	got := h.update(m.ID, driver.MessageChange{LinkAttachments: []string{as[2].ID}, Check: Limits(0, 3)})
	assert.Len(t, got.Attachments, 3, "exactly the limit is allowed")
	got = h.update(m.ID, driver.MessageChange{LinkAttachments: []string{as[0].ID, as[2].ID}, Check: Limits(0, 3)})
	assert.Len(t, got.Attachments, 3, "relinking at the limit counts nothing twice")

	before = h.get(m.ID)
	_, err = h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{LinkAttachments: []string{as[0].ID, as[4].ID}, Check: Limits(0, 3)})
	assert.ErrorIs(t, err, messaging.ErrInvalid, "a fourth attachment")
	assertMessage(t, before, h.get(m.ID))
	assert.Equal(t, as[4], h.getAttachment(as[4].ID), "not linked")
}
