package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

var messageTests = []test{
	{"create_and_get_round_trip", testMessageRoundTrip},
	{"times_come_back_in_utc", testMessageTimesUTC},
	{"long_unicode_text", testMessageLongText},
	{"contact_as_stored_now", testMessageContactNow},
	{"not_found", testMessageNotFound},
}

func testMessageRoundTrip(t *testing.T, h *harness) {
	alice := h.contact("alice")
	created := base.Add(3*time.Second + 789*time.Microsecond)
	m := messaging.Message{
		ID:             ids.NewAt(ids.Message, created),
		ConversationID: "team:general.v2_x-1",
		Contact:        messaging.Contact{ID: alice.ID},
		Text:           "Hello, world! ✓\n\tsecond line",
		CreatedAt:      created,
	}
	require.NoError(t, h.s.CreateMessage(h.ctx, m, nil, nil))

	got, err := h.s.GetMessage(h.ctx, m.ID)
	require.NoError(t, err)
	want := m
	want.Contact = alice
	assertMessage(t, want, got, "GetMessage returns the message with every field of its contact")
	assert.Empty(t, got.Reactions)
	assert.Empty(t, got.Attachments)
	assert.True(t, got.ReadAt.IsZero(), "ReadAt is zero while unread")
	assert.True(t, got.UpdatedAt.IsZero(), "UpdatedAt is zero while never updated")
	assertUTC(t, got.CreatedAt, "CreatedAt")
	assert.Equal(t, 124245000, got.CreatedAt.Nanosecond(), "CreatedAt keeps its microseconds")
}

func testMessageTimesUTC(t *testing.T, h *harness) {
	alice := h.contact("alice")
	zone := time.FixedZone("UTC+9:30", 9*3600+1800)
	m := newMessage("c", alice, at(5).Add(time.Microsecond).In(zone))
	require.NoError(t, h.s.CreateMessage(h.ctx, m, nil, nil))
	readAt := at(6).Add(2 * time.Microsecond).In(zone)
	updAt := at(7).Add(3 * time.Microsecond).In(time.FixedZone("UTC-3", -3*3600))
	read := true
	h.update(m.ID, driver.MessageChange{Read: &read, ReadAt: readAt, UpdatedAt: updAt})

	got := h.get(m.ID)
	assert.True(t, got.CreatedAt.Equal(m.CreatedAt), "CreatedAt %v, want %v", got.CreatedAt, m.CreatedAt)
	assert.True(t, got.ReadAt.Equal(readAt), "ReadAt %v, want %v", got.ReadAt, readAt)
	assert.True(t, got.UpdatedAt.Equal(updAt), "UpdatedAt %v, want %v", got.UpdatedAt, updAt)
	assertUTC(t, got.CreatedAt, "CreatedAt")
	assertUTC(t, got.ReadAt, "ReadAt")
	assertUTC(t, got.UpdatedAt, "UpdatedAt")

	items, _, err := h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 10}})
	require.NoError(t, err)
	require.Len(t, items, 1)
	assertMessage(t, got, items[0], "ListMessages returns the message as GetMessage does")
}

func testMessageLongText(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := newMessage("c", alice, at(1))
	m.Text = strings.Repeat("😀é", 2000) // 4,000 characters, 12,000 bytes
	require.NoError(t, h.s.CreateMessage(h.ctx, m, nil, nil))
	assert.Equal(t, m.Text, h.get(m.ID).Text)
}

func testMessageContactNow(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	changed := alice
	changed.Username = "alice.new"
	changed.AvatarURL = "https://example.com/changed.png"
	changed.LastActiveAt = at(50)
	require.NoError(t, h.s.PutContact(h.ctx, changed))

	got := h.get(m.ID)
	assert.Equal(t, changed, got.Contact, "GetMessage shows the contact as stored now")
	items, _, err := h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 10}})
	require.NoError(t, err)
	require.Len(t, items, 1)
	assert.Equal(t, changed, items[0].Contact, "ListMessages shows the contact as stored now")
}

func testMessageNotFound(t *testing.T, h *harness) {
	alice := h.contact("alice")
	h.message("c", alice, at(1))
	missing := ids.New(ids.Message)
	_, err := h.s.GetMessage(h.ctx, missing)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "GetMessage")
	text := "x"
	_, err = h.s.UpdateMessage(h.ctx, missing, driver.MessageChange{Text: &text})
	assert.ErrorIs(t, err, messaging.ErrNotFound, "UpdateMessage")
	_, err = h.s.UpdateMessage(h.ctx, missing, driver.MessageChange{})
	assert.ErrorIs(t, err, messaging.ErrNotFound, "UpdateMessage with an empty change")
	_, err = h.s.DeleteMessage(h.ctx, missing, nil)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "DeleteMessage")
	_, err = h.s.GetAttachment(h.ctx, ids.New(ids.Attachment))
	assert.ErrorIs(t, err, messaging.ErrNotFound, "GetAttachment")
}

var listTests = []test{
	{"newest_first_ties_broken_by_id", testListOrder},
	{"filters_by_conversation", testListFilters},
	{"items_as_get_returns_them", testListItemsFull},
	{"MessageCursors", testMessageCursors},
	{"MessageCursorsByID", testMessageCursorsByID},
	{"AttachmentCursors", testAttachmentCursors},
}

func testListOrder(t *testing.T, h *harness) {
	alice := h.contact("alice")
	items := tiedItems(ids.Message, at(0), 12, 1)
	for _, it := range shuffled(items, 2) {
		m := newMessage("c", alice, it.at)
		m.ID = it.id
		require.NoError(t, h.s.CreateMessage(h.ctx, m, nil, nil))
	}
	got, more, err := h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 100}})
	require.NoError(t, err)
	assert.Equal(t, newestFirst(items), messageIDs(got), "newest first by CreatedAt, then by ID")
	assert.False(t, more)
}

func testListFilters(t *testing.T, h *harness) {
	alice := h.contact("alice")
	byConv := map[string][]item{}
	var all []item
	for i, conv := range []string{"a", "b", "c", "a", "b", "c", "a", "a", "c", "b"} {
		m := h.message(conv, alice, at(i/2)) // pairs share a time
		it := item{m.ID, m.CreatedAt}
		byConv[conv] = append(byConv[conv], it)
		all = append(all, it)
	}
	list := func(q driver.MessageQuery) ([]string, bool) {
		t.Helper()
		q.Limit = 100
		got, more, err := h.s.ListMessages(h.ctx, q)
		require.NoError(t, err)
		return nonNil(messageIDs(got)), more
	}
	cases := []struct {
		name string
		q    driver.MessageQuery
		want []item
	}{
		{"one_conversation", driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"a"}}}, byConv["a"]},
		{"two_conversations", driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"a", "c"}}}, append(append([]item{}, byConv["a"]...), byConv["c"]...)},
		{"all", driver.MessageQuery{Scope: driver.Scope{All: true}}, all},
		{"all_ignores_conversation_ids", driver.MessageQuery{Scope: driver.Scope{All: true, ConversationIDs: []string{"b"}}}, all},
		{"unknown_conversation", driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"zzz"}}}, nil},
		{"no_conversations_and_not_all", driver.MessageQuery{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, more := list(c.q)
			assert.Equal(t, nonNil(newestFirst(c.want)), got)
			assert.False(t, more)
		})
	}
	t.Run("paged_within_a_conversation", func(t *testing.T) {
		want := newestFirst(byConv["a"])
		got, more, err := h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"a"}}, Window: driver.Window{Limit: 2}})
		require.NoError(t, err)
		assert.Equal(t, want[:2], messageIDs(got))
		assert.True(t, more)
		got, more, err = h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"a"}}, Window: driver.Window{Limit: 2, After: itemOf(byConv["a"], want[1]).cursor()}})
		require.NoError(t, err)
		assert.Equal(t, want[2:], messageIDs(got))
		assert.False(t, more)
	})
}

func testListItemsFull(t *testing.T, h *harness) {
	alice, bob := h.contact("alice"), h.contact("bob")
	a1 := h.attachment("c", alice, at(0))
	a2 := h.attachment("", alice, at(1))
	m1 := h.message("c", alice, at(2), a2.ID, a1.ID)
	m2 := h.message("c", bob, at(3))
	read := true
	h.update(m1.ID, driver.MessageChange{Reactions: h.adds("bob", "👍")})
	h.update(m1.ID, driver.MessageChange{
		Reactions: h.adds("alice", "👍"),
		Read:      &read, ReadAt: at(4), UpdatedAt: at(5),
	})
	got, more, err := h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 10}})
	require.NoError(t, err)
	assert.False(t, more)
	require.Equal(t, []string{m2.ID, m1.ID}, messageIDs(got))
	assertMessage(t, h.get(m2.ID), got[0])
	want := h.get(m1.ID)
	assertMessage(t, want, got[1], "a list item is the message as GetMessage returns it")
	assert.Equal(t, []string{a1.ID, a2.ID}, attachmentIDs(got[1].Attachments), "attachments oldest first")
	assert.Equal(t, bob, got[0].Contact)
}

func testMessageCursors(t *testing.T, h *harness) {
	alice := h.contact("alice")
	items := tiedItems(ids.Message, at(0), 25, 3)
	for i, it := range shuffled(items, 4) {
		m := newMessage("c", alice, it.at)
		m.ID = it.id
		require.NoError(t, h.s.CreateMessage(h.ctx, m, nil, nil))
		if i%2 == 0 { // noise in another conversation, at the same times
			h.message("noise", alice, it.at)
		}
	}
	testCursors(t, items, func(t *testing.T, limit int, after, before *driver.Cursor) ([]string, bool) {
		t.Helper()
		got, more, err := h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: limit, After: after, Before: before}})
		require.NoError(t, err)
		for _, m := range got {
			assert.Equal(t, "c", m.ConversationID)
		}
		return messageIDs(got), more
	})
}

// testMessageCursorsByID: the pages of testMessageCursors, with cursors
// given by id (AfterID, BeforeID); a message of another conversation, or
// none, is ErrNotFound, and a page beyond the oldest is empty, not an error.
func testMessageCursorsByID(t *testing.T, h *harness) {
	alice := h.contact("alice")
	items := tiedItems(ids.Message, at(0), 25, 3)
	var noise []string
	for i, it := range shuffled(items, 4) {
		m := newMessage("c", alice, it.at)
		m.ID = it.id
		require.NoError(t, h.s.CreateMessage(h.ctx, m, nil, nil))
		if i%2 == 0 { // noise in another conversation, at the same times
			noise = append(noise, h.message("noise", alice, it.at).ID)
		}
	}
	// byID is c as a cursor by id (Time zero).
	byID := func(c *driver.Cursor) *driver.Cursor {
		if c == nil {
			return nil
		}
		return &driver.Cursor{ID: c.ID}
	}
	testCursors(t, items, func(t *testing.T, limit int, after, before *driver.Cursor) ([]string, bool) {
		t.Helper()
		got, more, err := h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: limit, After: byID(after), Before: byID(before)}})
		require.NoError(t, err)
		for _, m := range got {
			assert.Equal(t, "c", m.ConversationID)
		}
		return messageIDs(got), more
	})
	for name, id := range map[string]string{"another_conversation": noise[0], "missing": ids.New(ids.Message)} {
		t.Run(name, func(t *testing.T) {
			for _, q := range []driver.MessageQuery{
				{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 5, After: &driver.Cursor{ID: id}}},
				{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 5, Before: &driver.Cursor{ID: id}}},
			} {
				_, _, err := h.s.ListMessages(h.ctx, q)
				assert.ErrorIs(t, err, messaging.ErrNotFound, "After %v, Before %v", q.After, q.Before)
			}
		})
	}
}

func testAttachmentCursors(t *testing.T, h *harness) {
	alice, bob := h.contact("alice"), h.contact("bob")
	items := tiedItems(ids.Attachment, at(0), 25, 5)
	for i, it := range shuffled(items, 6) {
		a := newAttachment("c", alice.ID, it.at)
		a.ID, a.Key = it.id, attachments.KeyPrefix+it.id
		require.NoError(t, h.s.CreateAttachment(h.ctx, a, nil))
		if i%2 == 0 { // noise: another conversation, and another's unfiled upload
			h.attachment("noise", alice, it.at)
			h.attachment("", bob, it.at)
		}
	}
	testCursors(t, items, func(t *testing.T, limit int, after, before *driver.Cursor) ([]string, bool) {
		t.Helper()
		got, more, err := h.s.ListAttachments(h.ctx, driver.AttachmentQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: limit, After: after, Before: before}})
		require.NoError(t, err)
		for _, a := range got {
			assert.Equal(t, "c", a.ConversationID)
		}
		return attachmentIDs(got), more
	})
}
