package storetest

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/parleychat/parley/messaging/driver"
)

var updateTests = []test{
	{"text", testUpdateText},
	{"updated_at_only_when_given", testUpdatedAt},
	{"empty_change_changes_nothing", testEmptyChange},
	{"read_set_once_and_cleared", testRead},
}

func testUpdateText(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	other := h.message("c", alice, at(2))
	text := "edited ✎\nline two"
	got := h.update(m.ID, driver.MessageChange{Text: &text})
	want := m
	want.Text = text
	assertMessage(t, want, got, "only the text changed")
	assertMessage(t, other, h.get(other.ID), "other messages are untouched")
}

func testUpdatedAt(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	text := "edited"
	got := h.update(m.ID, driver.MessageChange{Text: &text})
	assert.True(t, got.UpdatedAt.IsZero(), "UpdatedAt stays zero when the change gives none")
	got = h.update(m.ID, driver.MessageChange{Reactions: h.adds("alice", "👍"), UpdatedAt: at(3)})
	assert.Equal(t, at(3), got.UpdatedAt)
	assertUTC(t, got.UpdatedAt, "UpdatedAt")
	got = h.update(m.ID, driver.MessageChange{UpdatedAt: at(4).Add(1)}) // 1ns: below the precision kept
	assert.True(t, got.UpdatedAt.Equal(at(4)) || got.UpdatedAt.Equal(at(4).Add(1)), "UpdatedAt %v", got.UpdatedAt)
	got = h.update(m.ID, driver.MessageChange{Text: &text})
	assert.True(t, got.UpdatedAt.Equal(at(4)) || got.UpdatedAt.Equal(at(4).Add(1)), "a change without UpdatedAt keeps it")
}

func testEmptyChange(t *testing.T, h *harness) {
	alice := h.contact("alice")
	a := h.attachment("c", alice, at(0))
	m := h.message("c", alice, at(1), a.ID)
	h.update(m.ID, driver.MessageChange{Reactions: h.adds("alice", "👍")})
	before := h.get(m.ID)
	got := h.update(m.ID, driver.MessageChange{})
	assertMessage(t, before, got)
	got = h.update(m.ID, driver.MessageChange{Check: Limits(1, 1)})
	assertMessage(t, before, got, "limits alone change nothing and are met")
}

func testRead(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	yes, no := true, false

	got := h.update(m.ID, driver.MessageChange{Read: &yes, ReadAt: at(2)})
	assert.Equal(t, at(2), got.ReadAt, "read")
	assert.True(t, got.UpdatedAt.IsZero(), "reading does not set UpdatedAt by itself")

	got = h.update(m.ID, driver.MessageChange{Read: &yes, ReadAt: at(3)})
	assert.Equal(t, at(2), got.ReadAt, "ReadAt is set once, to the first read")

	got = h.update(m.ID, driver.MessageChange{ReadAt: at(4)})
	assert.Equal(t, at(2), got.ReadAt, "ReadAt without Read changes nothing")

	got = h.update(m.ID, driver.MessageChange{Read: &no, ReadAt: at(5)})
	assert.True(t, got.ReadAt.IsZero(), "unread clears ReadAt; got %v", got.ReadAt)

	got = h.update(m.ID, driver.MessageChange{Read: &no, ReadAt: at(5)})
	assert.True(t, got.ReadAt.IsZero(), "unread twice is fine")

	got = h.update(m.ID, driver.MessageChange{Read: &yes, ReadAt: at(6)})
	assert.Equal(t, at(6), got.ReadAt, "read again after unread")
}
