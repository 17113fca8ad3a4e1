package storetest

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// recordDeletes records the events of a delete as the Service does: a
// message.deleted for the message DeleteMessage deleted, an
// attachment.deleted for each attachment removed.
func recordDeletes(sec int, message bool) driver.Recorder {
	return func(c driver.Change) []messaging.Event {
		var evs []messaging.Event
		if message && c.Message != nil {
			evs = append(evs, messaging.Event{ID: ids.NewAt(ids.Event, at(sec)), Type: messaging.EventMessageDeleted, Created: at(sec),
				ConversationID: c.Message.ConversationID, DeletedID: c.Message.ID})
		}
		for _, a := range c.Removed {
			e := messaging.Event{ID: ids.NewAt(ids.Event, at(sec)), Type: messaging.EventAttachmentDeleted, Created: at(sec),
				ConversationID: a.ConversationID, DeletedID: a.ID}
			if a.ConversationID == "" {
				e.AudienceID = a.UploaderID
			}
			evs = append(evs, e)
		}
		return evs
	}
}

// testDeletedIsRedacted: once a delete commits, a read with Redact shows
// nothing of what it deleted, in the events about it and in those that
// embed it; a read without Redact gives the events as recorded.
func testDeletedIsRedacted(t *testing.T, h *harness) {
	alice := h.contact("alice")
	const secret = "the secret text"
	a1, a2, kept := h.attachment("c", alice, at(1)), h.attachment("c", alice, at(1)), h.attachment("c", alice, at(1))
	m := newMessage("c", alice, at(2))
	m.Text = secret
	require.NoError(t, h.s.CreateMessage(h.ctx, m, []string{a1.ID, a2.ID}, newRecorder(messaging.EventMessageCreated, at(2)).record))
	read := newRecorder(messaging.EventConversationRead, at(3))
	read.audience = alice.ID
	require.NoError(t, h.s.MarkRead(h.ctx, "c", alice.ID, m.ID, read.record)) // embeds m as last_message
	u := newAttachment("", alice.ID, at(4))
	require.NoError(t, h.s.CreateAttachment(h.ctx, u, newRecorder(messaging.EventAttachmentCreated, at(4)).record))
	other := newMessage("c", alice, at(5))
	require.NoError(t, h.s.CreateMessage(h.ctx, other, []string{kept.ID}, newRecorder(messaging.EventMessageCreated, at(5)).record))
	recorded := h.allEvents()
	require.Len(t, recorded, 4)

	// Before any delete, Redact changes nothing.
	redacted := func() []messaging.Event {
		t.Helper()
		evs, err := h.s.ReadEvents(h.ctx, driver.EventQuery{Scope: driver.Scope{All: true}, Unfiled: true, Limit: 100, Redact: true})
		require.NoError(t, err)
		return evs
	}
	assert.Equal(t, recorded, redacted(), "nothing deleted: as recorded")

	// A linked attachment alone, then the message with its other one, and
	// the unfiled file.
	_, err := h.s.DeleteAttachment(h.ctx, a1.ID, recordDeletes(6, false))
	require.NoError(t, err)
	got := redacted()
	require.NotNil(t, got[0].Message)
	assert.Equal(t, []string{a2.ID}, attachmentIDs(got[0].Message.Attachments), "a deleted attachment is left out of its message")
	assert.Positive(t, got[0].Redacted)
	// Redacted is part of a cache key of what a read shows (httpadapter
	// keeps the JSON of an event by id and Redacted): each later delete
	// that changes what the event shows must change it, so it grows.
	createdBefore, convBefore := got[0].Redacted, got[1].Redacted
	_, err = h.s.DeleteMessage(h.ctx, m.ID, recordDeletes(7, true))
	require.NoError(t, err)
	_, err = h.s.DeleteAttachment(h.ctx, u.ID, recordDeletes(8, false))
	require.NoError(t, err)

	got = redacted()
	require.Len(t, got, 4+4, "the deletes made their own events")
	created, conv, file, kept2 := got[0], got[1], got[2], got[3]
	assert.Nil(t, created.Message, "the event about the deleted message shows it no more")
	assert.Equal(t, m.ID, created.DeletedID, "only its id")
	assert.Equal(t, messaging.EventMessageCreated, created.Type, "the event keeps its type")
	assert.Equal(t, recorded[0].ID, created.ID, "and its id")
	assert.Greater(t, created.Redacted, createdBefore, "the message's delete counts, after its file's")

	require.NotNil(t, conv.Conversation)
	last := conv.Conversation.LastMessage
	require.NotNil(t, last, "an embedded message stays, as a tombstone")
	assert.True(t, last.Deleted)
	assert.Equal(t, m.ID, last.ID)
	assert.Empty(t, last.Text)
	assert.Empty(t, last.Attachments)
	assert.Empty(t, last.Reactions)
	assert.Greater(t, conv.Redacted, convBefore, "the message's delete counts, after its file's")

	assert.Nil(t, file.Attachment, "the event about the deleted file shows it no more")
	assert.Equal(t, u.ID, file.DeletedID)
	assert.Equal(t, alice.ID, file.AudienceID, "its audience stays")

	assert.Equal(t, recorded[3], kept2, "an event of nothing deleted is as recorded")

	b, err := json.Marshal(got)
	require.NoError(t, err)
	assert.NotContains(t, string(b), secret)
	for _, gone := range []messaging.Attachment{a1, a2, u} {
		assert.NotContains(t, string(b), gone.Filename)
		assert.NotContains(t, string(b), gone.SHA256)
	}

	// Newest first and narrowed alike; without Redact, as recorded.
	newest, err := h.s.ReadEvents(h.ctx, driver.EventQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, ViewerID: alice.ID, Limit: 100, Newest: true, Redact: true})
	require.NoError(t, err)
	b, err = json.Marshal(newest)
	require.NoError(t, err)
	assert.NotContains(t, string(b), secret)
	raw, err := h.s.ReadEvents(h.ctx, driver.EventQuery{Scope: driver.Scope{All: true}, Unfiled: true, Limit: 4})
	require.NoError(t, err)
	assert.Equal(t, recorded, raw, "without Redact: as recorded")
}
