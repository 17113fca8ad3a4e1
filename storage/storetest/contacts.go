package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
)

var contactTests = []test{
	{"put_get_and_by_username", testContactRoundTrip},
	{"put_replaces_every_field", testContactReplace},
	{"duplicate_username_is_conflict", testContactDuplicateUsername},
	{"renaming_frees_the_old_username", testContactRenameFreesUsername},
	{"touch_moves_last_active_at_forward", testContactTouch},
	{"not_found", testContactNotFound},
}

func testContactRoundTrip(t *testing.T, h *harness) {
	never := messaging.Contact{
		ID:          ids.New(ids.Contact),
		Username:    "alice",
		PhoneNumber: "+44 20 7946 0018",
		AvatarURL:   "https://example.com/a.png",
		CreatedAt:   base,
	}
	require.NoError(t, h.s.PutContact(h.ctx, never))
	active := messaging.Contact{
		ID:           ids.New(ids.Contact),
		Username:     "bob-ü",
		LastActiveAt: at(90).Add(time.Microsecond).In(time.FixedZone("UTC+5", 5*3600)),
		CreatedAt:    at(1).In(time.FixedZone("UTC-7", -7*3600)),
	}
	require.NoError(t, h.s.PutContact(h.ctx, active))

	got, err := h.s.GetContact(h.ctx, never.ID)
	require.NoError(t, err)
	assert.Equal(t, never, got)
	assert.True(t, got.LastActiveAt.IsZero(), "LastActiveAt stays zero while never set")
	assertUTC(t, got.CreatedAt, "CreatedAt")

	got, err = h.s.ContactByUsername(h.ctx, "alice")
	require.NoError(t, err)
	assert.Equal(t, never, got)

	got, err = h.s.GetContact(h.ctx, active.ID)
	require.NoError(t, err)
	want := active
	want.LastActiveAt, want.CreatedAt = active.LastActiveAt.UTC(), active.CreatedAt.UTC()
	assert.Equal(t, want, got, "times given in other zones come back as the same instants in UTC, to the microsecond")
	assertUTC(t, got.LastActiveAt, "LastActiveAt")

	got, err = h.s.ContactByUsername(h.ctx, "bob-ü")
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func testContactReplace(t *testing.T, h *harness) {
	c := h.contact("alice")
	c2 := messaging.Contact{
		ID:           c.ID,
		Username:     "alice2",
		PhoneNumber:  "+1 555 0199",
		AvatarURL:    "https://example.com/new.png",
		LastActiveAt: at(60),
		CreatedAt:    at(-60),
	}
	require.NoError(t, h.s.PutContact(h.ctx, c2))
	got, err := h.s.GetContact(h.ctx, c.ID)
	require.NoError(t, err)
	assert.Equal(t, c2, got)

	_, err = h.s.ContactByUsername(h.ctx, "alice")
	assert.ErrorIs(t, err, messaging.ErrNotFound, "the old username names no one")
	got, err = h.s.ContactByUsername(h.ctx, "alice2")
	require.NoError(t, err)
	assert.Equal(t, c2, got)

	require.NoError(t, h.s.PutContact(h.ctx, c2), "putting the same contact again is no conflict")
}

func testContactDuplicateUsername(t *testing.T, h *harness) {
	alice := h.contact("alice")
	bob := h.contact("bob")

	dup := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: base}
	err := h.s.PutContact(h.ctx, dup)
	assert.ErrorIs(t, err, messaging.ErrConflict, "a new contact with a taken username")
	_, err = h.s.GetContact(h.ctx, dup.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "the conflicting contact is not stored")

	renamed := bob
	renamed.Username = "alice"
	renamed.PhoneNumber = "+1 555 0111"
	err = h.s.PutContact(h.ctx, renamed)
	assert.ErrorIs(t, err, messaging.ErrConflict, "renaming a contact to a taken username")

	got, err := h.s.GetContact(h.ctx, bob.ID)
	require.NoError(t, err)
	assert.Equal(t, bob, got, "the contact is unchanged after a conflict")
	got, err = h.s.ContactByUsername(h.ctx, "alice")
	require.NoError(t, err)
	assert.Equal(t, alice, got)
}

func testContactRenameFreesUsername(t *testing.T, h *harness) {
	c := h.contact("alice")
	c.Username = "alicia"
	require.NoError(t, h.s.PutContact(h.ctx, c))
	other := h.contact("alice")
	got, err := h.s.ContactByUsername(h.ctx, "alice")
	require.NoError(t, err)
	assert.Equal(t, other, got)
}

func testContactTouch(t *testing.T, h *harness) {
	c := h.contact("alice")
	require.NoError(t, h.s.TouchContact(h.ctx, c.ID, at(10)))
	got, err := h.s.GetContact(h.ctx, c.ID)
	require.NoError(t, err)
	want := c
	want.LastActiveAt = at(10)
	assert.Equal(t, want, got)

	later := at(20).Add(7 * time.Microsecond)
	require.NoError(t, h.s.TouchContact(h.ctx, c.ID, later))
	got, err = h.s.GetContact(h.ctx, c.ID)
	require.NoError(t, err)
	want.LastActiveAt = later
	assert.Equal(t, want, got)
	assertUTC(t, got.LastActiveAt, "LastActiveAt")

	// A touch that commits after a later one moves nothing back.
	require.NoError(t, h.s.TouchContact(h.ctx, c.ID, at(15)))
	got, err = h.s.GetContact(h.ctx, c.ID)
	require.NoError(t, err)
	assert.Equal(t, want, got, "an earlier touch keeps the later time")
}

func testContactNotFound(t *testing.T, h *harness) {
	h.contact("alice")
	_, err := h.s.GetContact(h.ctx, ids.New(ids.Contact))
	assert.ErrorIs(t, err, messaging.ErrNotFound, "GetContact")
	_, err = h.s.ContactByUsername(h.ctx, "nobody")
	assert.ErrorIs(t, err, messaging.ErrNotFound, "ContactByUsername")
	err = h.s.TouchContact(h.ctx, ids.New(ids.Contact), at(1))
	assert.ErrorIs(t, err, messaging.ErrNotFound, "TouchContact")
}
