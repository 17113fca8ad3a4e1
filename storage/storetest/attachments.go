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

var attachmentTests = []test{
	{"create_and_get_round_trip", testAttachmentRoundTrip},
	{"not_found", testAttachmentNotFound},
	{"rename", testRename},
	{"list_filters", testAttachmentListFilters},
	{"list_follows_links_into_conversations", testAttachmentListLinked},
	{"uploaded_bytes", testUploadedBytes},
	{"reservations", testReservations},
	{"reservation_completes_with_its_row", testCompleteReservation},
}

// testCompleteReservation: the row of a completed upload, filed
// (CompleteReservation) or linked to a message (MessageChange.Reservation),
// is stored only with its reservation, which goes in the same write: once
// the reservation is gone (completed already, or swept), the write stores
// nothing, not even its idempotency record, and answers ErrNotFound.
func testCompleteReservation(t *testing.T, h *harness) {
	rs, ok := h.s.(driver.ReservationStore)
	if !ok {
		t.Skip("the store is not a driver.ReservationStore")
	}
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	for _, msg := range []string{"", m.ID} {
		a := newAttachment("c", alice.ID, at(2))
		r := driver.Reservation{ID: ids.New(ids.Upload), AttachmentID: a.ID, UploaderID: alice.ID, ConversationID: "c", MessageID: msg,
			Filename: a.Filename, FileType: a.FileType, FileSize: a.FileSize, SHA256: a.SHA256, Key: a.Key,
			CreatedAt: at(1), ExpiresAt: at(9)}
		require.NoError(t, rs.CreateReservation(h.ctx, r))
		complete := func(a messaging.Attachment, key string) error {
			d := done(claim(alice.ID, key, at(2)), a.ID)
			if msg == "" {
				return rs.CompleteReservation(h.ctx, r.ID, a, nil, &d)
			}
			_, err := h.s.UpdateMessage(h.ctx, msg, driver.MessageChange{NewAttachment: &a, Reservation: r.ID, Done: &d})
			return err
		}
		require.NoError(t, complete(a, "first-"+msg))
		_, err := rs.GetReservation(h.ctx, r.ID)
		assert.ErrorIs(t, err, messaging.ErrNotFound, "the reservation goes with its row")
		_, ok := h.record(alice.ID, "first-"+msg)
		assert.True(t, ok, "the record is stored")
		if msg == "" {
			assert.Equal(t, a, h.getAttachment(a.ID))
		} else {
			assert.Equal(t, linked(a, m), h.getAttachment(a.ID))
		}

		// Completed again, or after a delete: nothing comes back.
		err = complete(a, "again-"+msg)
		assert.ErrorIs(t, err, messaging.ErrNotFound, "completed already")
		assert.NotErrorIs(t, err, messaging.ErrConflict)
		_, err = h.s.DeleteAttachment(h.ctx, a.ID, nil)
		require.NoError(t, err)
		err = complete(a, "deleted-"+msg)
		assert.ErrorIs(t, err, messaging.ErrNotFound, "the reservation is gone")
		_, err = h.s.GetAttachment(h.ctx, a.ID)
		assert.ErrorIs(t, err, messaging.ErrNotFound, "no row comes back")
		for _, key := range []string{"again-" + msg, "deleted-" + msg} {
			_, ok := h.record(alice.ID, key)
			assert.False(t, ok, "no record is stored")
		}
	}
	assert.Empty(t, h.get(m.ID).Attachments)
}

// testReservations: upload reservations (driver.ReservationStore) come back
// whole, are listed once expired, oldest expiry first, hold their keys in
// use, and go when deleted.
func testReservations(t *testing.T, h *harness) {
	rs, ok := h.s.(driver.ReservationStore)
	if !ok {
		t.Skip("the store is not a driver.ReservationStore")
	}
	alice := h.contact("alice")
	mk := func(exp time.Time) driver.Reservation {
		att := ids.New(ids.Attachment)
		return driver.Reservation{ID: ids.New(ids.Upload), AttachmentID: att, UploaderID: alice.ID, ConversationID: "team:general",
			Filename: "Résumé 📄.pdf", FileType: "application/pdf", FileSize: 5 << 40,
			SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
			Key:    attachments.KeyPrefix + att, Checked: true, CreatedAt: at(1).Add(123456 * time.Microsecond), ExpiresAt: exp}
	}
	late, early, live := mk(at(30)), mk(at(20)), mk(at(100))
	live.Checked, live.ConversationID, live.MessageID = false, "", ids.New(ids.Message)
	for _, r := range []driver.Reservation{late, early, live} {
		require.NoError(t, rs.CreateReservation(h.ctx, r))
	}
	err := rs.CreateReservation(h.ctx, late)
	assert.ErrorIs(t, err, messaging.ErrConflict, "an id twice")
	got, err := rs.GetReservation(h.ctx, live.ID)
	require.NoError(t, err)
	assert.Equal(t, live, got, "every field comes back")
	_, err = rs.GetReservation(h.ctx, ids.New(ids.Upload))
	assert.ErrorIs(t, err, messaging.ErrNotFound)

	expired, err := rs.ExpiredReservations(h.ctx, at(30), 10)
	require.NoError(t, err)
	require.Len(t, expired, 2, "expired at their expiry")
	assert.Equal(t, []string{early.ID, late.ID}, []string{expired[0].ID, expired[1].ID})
	expired, err = rs.ExpiredReservations(h.ctx, at(30), 1)
	require.NoError(t, err)
	assert.Len(t, expired, 1)

	used, err := h.s.KeysInUse(h.ctx, []string{late.Key, attachments.KeyPrefix + "att_nope"})
	require.NoError(t, err)
	assert.True(t, used[late.Key], "a reservation's key is in use")
	assert.False(t, used[attachments.KeyPrefix+"att_nope"])

	require.NoError(t, rs.DeleteReservation(h.ctx, late.ID))
	require.NoError(t, rs.DeleteReservation(h.ctx, late.ID), "twice is no error")
	_, err = rs.GetReservation(h.ctx, late.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	used, err = h.s.KeysInUse(h.ctx, []string{late.Key})
	require.NoError(t, err)
	assert.False(t, used[late.Key])
}

// testUploadedBytes: UploadedBytes sums the sizes of one uploader's
// attachments that exist, filed, unfiled, linked at upload or afterwards,
// and of its upload reservations, and follows deletes, of an attachment,
// of the message it is linked to and of a reservation.
func testUploadedBytes(t *testing.T, h *harness) {
	alice, bob := h.contact("alice"), h.contact("bob")
	uploaded := func(c messaging.Contact) int64 {
		t.Helper()
		n, err := h.s.UploadedBytes(h.ctx, c.ID)
		require.NoError(t, err, "UploadedBytes")
		return n
	}
	assert.Zero(t, uploaded(alice), "no attachments")
	n, err := h.s.UploadedBytes(h.ctx, ids.New(ids.Contact))
	require.NoError(t, err)
	assert.Zero(t, n, "an unknown uploader")

	sized := func(conv string, c messaging.Contact, tm time.Time, size int64) messaging.Attachment {
		a := newAttachment(conv, c.ID, tm)
		a.FileSize = size
		require.NoError(t, h.s.CreateAttachment(h.ctx, a, nil))
		return a
	}
	filed := sized("c", alice, at(1), 1000)
	sized("", alice, at(2), 5<<40) // beyond 32 bits
	linkedFirst := sized("c", alice, at(3), 20)
	sized("c", bob, at(4), 7)
	assert.Equal(t, int64(1000+5<<40+20), uploaded(alice))
	assert.Equal(t, int64(7), uploaded(bob))

	m := h.message("c", bob, at(5), linkedFirst.ID) // alice's file in bob's message
	withFile := newAttachment("", alice.ID, at(6))
	withFile.FileSize = 300
	h.update(m.ID, driver.MessageChange{NewAttachment: &withFile, UpdatedAt: at(6)})
	assert.Equal(t, int64(1000+5<<40+20+300), uploaded(alice), "linked ones count for their uploader")
	assert.Equal(t, int64(7), uploaded(bob), "not for the message's sender")

	_, err = h.s.DeleteAttachment(h.ctx, filed.ID, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(5<<40+20+300), uploaded(alice), "a deleted attachment frees its bytes")
	_, err = h.s.DeleteMessage(h.ctx, m.ID, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(5<<40), uploaded(alice), "and so do the attachments of a deleted message")

	rs, ok := h.s.(driver.ReservationStore)
	if !ok {
		return
	}
	att := ids.New(ids.Attachment)
	r := driver.Reservation{ID: ids.New(ids.Upload), AttachmentID: att, UploaderID: alice.ID, ConversationID: "c",
		Filename: "f.bin", FileType: "application/octet-stream", FileSize: 4000,
		SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		Key:    attachments.KeyPrefix + att, CreatedAt: at(7), ExpiresAt: at(8)}
	require.NoError(t, rs.CreateReservation(h.ctx, r))
	assert.Equal(t, int64(5<<40+4000), uploaded(alice), "a reservation holds its bytes")
	assert.Equal(t, int64(7), uploaded(bob), "for its uploader only")
	require.NoError(t, rs.DeleteReservation(h.ctx, r.ID))
	assert.Equal(t, int64(5<<40), uploaded(alice), "until it goes")
}

func testAttachmentRoundTrip(t *testing.T, h *harness) {
	alice := h.contact("alice")
	created := at(1).Add(654321 * time.Microsecond)
	filed := messaging.Attachment{
		ID:             ids.NewAt(ids.Attachment, created),
		ConversationID: "team:general",
		UploaderID:     alice.ID,
		Filename:       "Résumé (final) 📄.pdf",
		FileType:       "application/pdf",
		FileSize:       5 << 40, // beyond 32 bits
		SHA256:         "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		ImageWidth:     4032,
		ImageHeight:    3024,
		CreatedAt:      created,
	}
	filed.Key = attachments.KeyPrefix + filed.ID
	require.NoError(t, h.s.CreateAttachment(h.ctx, filed, nil))
	got := h.getAttachment(filed.ID)
	assert.Equal(t, filed, got, "every field comes back")
	assertUTC(t, got.CreatedAt, "CreatedAt")

	unfiled := newAttachment("", alice.ID, at(2).In(time.FixedZone("UTC+1", 3600)))
	unfiled.Filename = strings.Repeat("é", 127) + "a" // 255 bytes
	unfiled.FileSize = 0
	require.NoError(t, h.s.CreateAttachment(h.ctx, unfiled, nil))
	got = h.getAttachment(unfiled.ID)
	want := unfiled
	want.CreatedAt = unfiled.CreatedAt.UTC()
	assert.Equal(t, want, got, "an unfiled attachment with a 255-byte name and no bytes; times in UTC")
}

func testAttachmentNotFound(t *testing.T, h *harness) {
	alice := h.contact("alice")
	h.attachment("c", alice, at(1))
	missing := ids.New(ids.Attachment)
	_, err := h.s.GetAttachment(h.ctx, missing)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "GetAttachment")
	_, err = h.s.RenameAttachment(h.ctx, missing, "x.txt", nil)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "RenameAttachment")
	_, err = h.s.DeleteAttachment(h.ctx, missing, nil)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "DeleteAttachment")
	pending, err := h.s.PendingDeletions(h.ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, pending, "a failed delete records nothing")
}

func testRename(t *testing.T, h *harness) {
	alice := h.contact("alice")
	a := h.attachment("c", alice, at(1))
	other := h.attachment("c", alice, at(2))
	m := h.message("c", alice, at(3), a.ID)

	got, err := h.s.RenameAttachment(h.ctx, a.ID, "renamed ✓.txt", nil)
	require.NoError(t, err)
	want := linked(a, m)
	want.Filename = "renamed ✓.txt"
	assert.Equal(t, want, got, "RenameAttachment returns the updated row")
	assert.Equal(t, want, h.getAttachment(a.ID))
	assert.Equal(t, []messaging.Attachment{want}, h.get(m.ID).Attachments, "the message shows the new name")
	assert.Equal(t, other, h.getAttachment(other.ID), "other attachments are untouched")
}

func testAttachmentListFilters(t *testing.T, h *harness) {
	u1, u2, u3 := h.contact("u1"), h.contact("u2"), h.contact("u3")
	var inA, inB, unfiled1, unfiled2 []item
	add := func(dst *[]item, conv string, who string, sec int) {
		a := newAttachment(conv, who, at(sec/2))
		require.NoError(t, h.s.CreateAttachment(h.ctx, a, nil))
		*dst = append(*dst, item{a.ID, a.CreatedAt})
	}
	for i := range 12 {
		switch i % 4 {
		case 0:
			add(&inA, "a", u1.ID, i)
		case 1:
			add(&inB, "b", u2.ID, i)
		case 2:
			add(&unfiled1, "", u1.ID, i)
		case 3:
			add(&unfiled2, "", u2.ID, i)
		}
	}
	cat := func(lists ...[]item) []item {
		var out []item
		for _, l := range lists {
			out = append(out, l...)
		}
		return out
	}
	cases := []struct {
		name string
		q    driver.AttachmentQuery
		want []item
	}{
		{"one_conversation", driver.AttachmentQuery{Scope: driver.Scope{ConversationIDs: []string{"a"}}}, inA},
		{"two_conversations", driver.AttachmentQuery{Scope: driver.Scope{ConversationIDs: []string{"a", "b"}}}, cat(inA, inB)},
		{"all_conversations_but_no_unfiled", driver.AttachmentQuery{Scope: driver.Scope{All: true}}, cat(inA, inB)},
		{"all_and_the_uploaders_unfiled", driver.AttachmentQuery{Scope: driver.Scope{All: true}, UploaderID: u1.ID}, cat(inA, inB, unfiled1)},
		{"all_ignores_conversation_ids", driver.AttachmentQuery{Scope: driver.Scope{All: true, ConversationIDs: []string{"a"}}, UploaderID: u2.ID}, cat(inA, inB, unfiled2)},
		{"a_conversation_and_the_uploaders_unfiled", driver.AttachmentQuery{Scope: driver.Scope{ConversationIDs: []string{"b"}}, UploaderID: u1.ID}, cat(inB, unfiled1)},
		{"only_the_uploaders_unfiled", driver.AttachmentQuery{UploaderID: u2.ID}, unfiled2},
		{"uploader_with_no_uploads", driver.AttachmentQuery{Scope: driver.Scope{All: true}, UploaderID: u3.ID}, cat(inA, inB)},
		{"unknown_conversation", driver.AttachmentQuery{Scope: driver.Scope{ConversationIDs: []string{"zzz"}}}, nil},
		{"nothing_selected", driver.AttachmentQuery{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.q.Limit = 100
			got, more, err := h.s.ListAttachments(h.ctx, c.q)
			require.NoError(t, err)
			assert.Equal(t, nonNil(newestFirst(c.want)), nonNil(attachmentIDs(got)))
			assert.False(t, more)
		})
	}
	t.Run("items_are_full_rows", func(t *testing.T) {
		got, _, err := h.s.ListAttachments(h.ctx, driver.AttachmentQuery{Window: driver.Window{Limit: 1}, UploaderID: u1.ID})
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.Equal(t, h.getAttachment(got[0].ID), got[0])
	})
}

func testAttachmentListLinked(t *testing.T, h *harness) {
	alice := h.contact("alice")
	unfiled := h.attachment("", alice, at(1))
	m := h.message("c", alice, at(2), unfiled.ID)
	got, _, err := h.s.ListAttachments(h.ctx, driver.AttachmentQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 10}})
	require.NoError(t, err)
	assert.Equal(t, []messaging.Attachment{linked(unfiled, m)}, got, "an unfiled upload linked to a message is listed in its conversation")
	got, _, err = h.s.ListAttachments(h.ctx, driver.AttachmentQuery{Window: driver.Window{Limit: 10}, UploaderID: alice.ID})
	require.NoError(t, err)
	assert.Empty(t, got, "and no longer among the unfiled")
}
