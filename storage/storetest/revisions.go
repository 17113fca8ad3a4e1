package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// revisionTests check driver.RevisionStore and the revisions that
// UpdateMessage keeps and DeleteMessage removes.
var revisionTests = []test{
	{"edit_keeps_the_replaced_text", testRevisionKept},
	{"same_text_or_no_revision_id_keeps_none", testRevisionNone},
	{"revisions_newest_first_with_cursors", testRevisionCursors},
	{"revisions_are_per_message", testRevisionsPerMessage},
	{"failed_edit_keeps_no_revision", testRevisionFailedEdit},
	{"deleted_with_the_message", testRevisionsDeleted},
	{"service_lists_edits_in_order", testServiceRevisions},
}

// edit sets the message's text at t, keeping a revision, and returns the
// revision's id.
func (h *harness) edit(id, text string, t time.Time) string {
	h.t.Helper()
	rev := ids.NewAt(ids.Revision, t)
	h.update(id, driver.MessageChange{Text: &text, RevisionID: rev, UpdatedAt: t})
	return rev
}

// revisions returns the whole list of the message's revisions, newest first.
func (h *harness) revisions(id string) []messaging.Revision {
	h.t.Helper()
	items, more, err := h.s.ListRevisions(h.ctx, driver.RevisionQuery{Window: driver.Window{Limit: 1000}, MessageID: id})
	require.NoError(h.t, err, "ListRevisions")
	assert.False(h.t, more)
	return items
}

func revisionTexts(rs []messaging.Revision) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Text
	}
	return out
}

func revisionIDs(rs []messaging.Revision) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func testRevisionKept(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	rev := h.edit(m.ID, "second", at(2))
	assert.Equal(t, "second", h.get(m.ID).Text)
	want := messaging.Revision{ID: rev, MessageID: m.ID, Text: m.Text, CreatedAt: at(2)}
	assert.Equal(t, []messaging.Revision{want}, h.revisions(m.ID))
	got, err := h.s.GetRevision(h.ctx, rev)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assertUTC(t, got.CreatedAt, "CreatedAt")
	_, err = h.s.GetRevision(h.ctx, ids.New(ids.Revision))
	assert.ErrorIs(t, err, messaging.ErrNotFound)
}

func testRevisionNone(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	same := m.Text
	h.update(m.ID, driver.MessageChange{Text: &same, RevisionID: ids.NewAt(ids.Revision, at(2)), UpdatedAt: at(2)})
	other := "other"
	h.update(m.ID, driver.MessageChange{Text: &other, UpdatedAt: at(3)})
	h.update(m.ID, driver.MessageChange{Reactions: h.adds("alice", "x"), UpdatedAt: at(4)})
	assert.Empty(t, h.revisions(m.ID), "an edit to the same text, or without RevisionID, keeps none")
}

func testRevisionCursors(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("c", alice, at(0))
	// Twelve edits, each three in a row at the same time: ties break on id.
	var want []string // newest first
	texts := map[string]string{}
	prev := m.Text
	for i := range 12 {
		when := at(10 + i/3)
		id := h.edit(m.ID, "text "+itoa(i), when)
		texts[id] = prev
		prev = "text " + itoa(i)
		want = append([]string{id}, want...)
	}
	all := h.revisions(m.ID)
	assert.Equal(t, want, revisionIDs(all))
	for _, rv := range all {
		assert.Equal(t, texts[rv.ID], rv.Text, "each revision keeps the text its edit replaced")
	}
	cur := func(i int) *driver.Cursor { return &driver.Cursor{Time: all[i].CreatedAt, ID: all[i].ID} }

	page, more, err := h.s.ListRevisions(h.ctx, driver.RevisionQuery{Window: driver.Window{Limit: 5}, MessageID: m.ID})
	require.NoError(t, err)
	assert.Equal(t, want[:5], revisionIDs(page))
	assert.True(t, more)
	page, more, err = h.s.ListRevisions(h.ctx, driver.RevisionQuery{Window: driver.Window{Limit: 5, After: cur(4)}, MessageID: m.ID})
	require.NoError(t, err)
	assert.Equal(t, want[5:10], revisionIDs(page))
	assert.True(t, more)
	page, more, err = h.s.ListRevisions(h.ctx, driver.RevisionQuery{Window: driver.Window{Limit: 5, After: cur(9)}, MessageID: m.ID})
	require.NoError(t, err)
	assert.Equal(t, want[10:], revisionIDs(page))
	assert.False(t, more)
	page, more, err = h.s.ListRevisions(h.ctx, driver.RevisionQuery{Window: driver.Window{Limit: 4, Before: cur(10)}, MessageID: m.ID})
	require.NoError(t, err)
	assert.Equal(t, want[6:10], revisionIDs(page), "Before: the items just newer, still newest first")
	assert.True(t, more)
	page, more, err = h.s.ListRevisions(h.ctx, driver.RevisionQuery{Window: driver.Window{Limit: 4, Before: cur(2)}, MessageID: m.ID})
	require.NoError(t, err)
	assert.Equal(t, want[:2], revisionIDs(page))
	assert.False(t, more)
}

func testRevisionsPerMessage(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m1 := h.message("c", alice, at(1))
	m2 := h.message("c", alice, at(2))
	h.edit(m1.ID, "m1 edited", at(3))
	r2 := h.edit(m2.ID, "m2 edited", at(4))
	assert.Equal(t, []string{r2}, revisionIDs(h.revisions(m2.ID)))
	assert.Len(t, h.revisions(m1.ID), 1)
	assert.Empty(t, h.revisions(ids.New(ids.Message)), "an unknown message has none")
}

func testRevisionFailedEdit(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	text := "never"
	_, err := h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{Text: &text, RevisionID: ids.NewAt(ids.Revision, at(2)), UpdatedAt: at(2),
		Reactions: h.adds("alice", "a", "b"), Check: Limits(1, 0)})
	assert.ErrorIs(t, err, messaging.ErrInvalid)
	assert.Equal(t, m.Text, h.get(m.ID).Text)
	assert.Empty(t, h.revisions(m.ID))
}

func testRevisionsDeleted(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	keep := h.message("c", alice, at(2))
	rev := h.edit(m.ID, "edited", at(3))
	kept := h.edit(keep.ID, "kept", at(4))
	_, err := h.s.DeleteMessage(h.ctx, m.ID, nil)
	require.NoError(t, err)
	_, err = h.s.GetRevision(h.ctx, rev)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "the revisions go with their message")
	assert.Empty(t, h.revisions(m.ID))
	_, err = h.s.GetRevision(h.ctx, kept)
	assert.NoError(t, err, "other messages keep theirs")
}

func testServiceRevisions(t *testing.T, h *harness) {
	msgs, alice := h.keyedService(nil)
	m, err := msgs.Create(h.ctx, alice, messaging.NewMessage{ConversationID: "general", Text: "v0"})
	require.NoError(t, err)
	for i := 1; i <= 25; i++ {
		text := "v" + itoa(i)
		_, err := msgs.Update(h.ctx, alice, m.ID, messaging.Update{Text: &text})
		require.NoError(t, err)
	}
	var texts []string
	var prev time.Time
	for rv, err := range msgs.AllRevisions(h.ctx, alice, m.ID, messaging.ListOptions{Limit: 7}) {
		require.NoError(t, err)
		texts = append(texts, rv.Text)
		if !prev.IsZero() {
			assert.False(t, rv.CreatedAt.After(prev), "newest first")
		}
		prev = rv.CreatedAt
		assert.Equal(t, m.ID, rv.MessageID)
	}
	require.Len(t, texts, 25)
	assert.Equal(t, "v24", texts[0], "the newest revision holds the text the last edit replaced")
	assert.Equal(t, "v0", texts[24])

	page, err := msgs.Revisions(h.ctx, alice, m.ID, messaging.ListOptions{Limit: 3})
	require.NoError(t, err)
	assert.True(t, page.HasMore)
	next, err := msgs.Revisions(h.ctx, alice, m.ID, messaging.ListOptions{Limit: 3, StartingAfter: page.Data[2].ID})
	require.NoError(t, err)
	assert.Equal(t, []string{"v21", "v20", "v19"}, revisionTexts(next.Data))
	back, err := msgs.Revisions(h.ctx, alice, m.ID, messaging.ListOptions{Limit: 3, EndingBefore: next.Data[0].ID})
	require.NoError(t, err)
	assert.Equal(t, revisionTexts(page.Data), revisionTexts(back.Data))

	// A cursor of another message's revisions is not of this list.
	other, err := msgs.Create(h.ctx, alice, messaging.NewMessage{ConversationID: "general", Text: "o"})
	require.NoError(t, err)
	text := "o2"
	_, err = msgs.Update(h.ctx, alice, other.ID, messaging.Update{Text: &text})
	require.NoError(t, err)
	otherRevs, err := msgs.Revisions(h.ctx, alice, other.ID, messaging.ListOptions{})
	require.NoError(t, err)
	_, err = msgs.Revisions(h.ctx, alice, m.ID, messaging.ListOptions{StartingAfter: otherRevs.Data[0].ID})
	assert.ErrorIs(t, err, messaging.ErrInvalid)

	require.NoError(t, msgs.Delete(h.ctx, alice, m.ID))
	_, err = msgs.Revisions(h.ctx, alice, m.ID, messaging.ListOptions{})
	assert.ErrorIs(t, err, messaging.ErrNotFound)
}
