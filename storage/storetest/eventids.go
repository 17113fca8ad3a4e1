package storetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// testEventIDsAreOpaque: an event has one id for every read, and its ids
// tell nothing of the events of other conversations: they do not follow
// the store's order (so a gap between two ids of a conversation is not
// the number of events between them), and two stores that hold the same
// events give them different ids. An id changed by hand, or another
// store's, is no event (ErrNotFound).
func testEventIDsAreOpaque(t *testing.T, h *harness) {
	alice := h.contact("alice")
	record := func(s Store, conv string, sec int) {
		t.Helper()
		rec := newRecorder(messaging.EventMessageCreated, at(sec))
		require.NoError(t, s.CreateMessage(h.ctx, newMessage(conv, alice, at(sec)), nil, rec.record))
	}
	const n = 24
	for i := range n {
		record(h.s, []string{"a", "b", "b"}[i%3], i)
	}
	all := h.allEvents()
	require.Len(t, all, n)
	seen := map[string]bool{}
	for _, e := range all {
		assert.True(t, ids.Valid(ids.Event, e.ID), "%q is an event id", e.ID)
		assert.False(t, seen[e.ID], "ids are unique")
		seen[e.ID] = true
		got, err := h.s.GetEvent(h.ctx, e.ID)
		require.NoError(t, err)
		assert.Equal(t, e, got)
	}
	assert.False(t, slices.IsSorted(eventIDs(all)), "ids do not follow the store's order")

	// One id per event, whatever the read.
	onlyA, err := h.s.ReadEvents(h.ctx, driver.EventQuery{Scope: driver.Scope{ConversationIDs: []string{"a"}}, Limit: n})
	require.NoError(t, err)
	require.Len(t, onlyA, n/3)
	newest, err := h.s.ReadEvents(h.ctx, driver.EventQuery{Scope: driver.Scope{All: true}, Limit: n, Newest: true})
	require.NoError(t, err)
	for _, e := range onlyA {
		assert.Contains(t, eventIDs(all), e.ID)
		assert.Contains(t, eventIDs(newest), e.ID)
	}
	last, err := h.s.LastEvent(h.ctx)
	require.NoError(t, err)
	assert.Equal(t, all[n-1].ID, last.ID)

	// An id changed by hand is none.
	id := all[0].ID
	for _, i := range []int{len(ids.Event), len(id) / 2, len(id) - 1} {
		c := "0"
		if id[i:i+1] == "0" {
			c = "1"
		}
		_, err := h.s.GetEvent(h.ctx, id[:i]+c+id[i+1:])
		assert.ErrorIs(t, err, messaging.ErrNotFound, "changed at %d", i)
	}

	// Another store with the same events: other ids, and ours are none of
	// its events.
	if h.another == nil {
		return
	}
	other := h.another()
	require.NoError(t, other.PutContact(h.ctx, alice))
	for i := range n {
		record(other, []string{"a", "b", "b"}[i%3], i)
	}
	theirs, err := other.ReadEvents(h.ctx, driver.EventQuery{Scope: driver.Scope{All: true}, Limit: n})
	require.NoError(t, err)
	require.Len(t, theirs, n)
	for i := range theirs {
		assert.NotEqual(t, all[i].ID, theirs[i].ID, "event %d: the same place, another id", i)
		_, err := other.GetEvent(h.ctx, all[i].ID)
		assert.ErrorIs(t, err, messaging.ErrNotFound, "another store's id")
	}
	assert.False(t, strings.HasPrefix(theirs[0].ID, all[0].ID[:10]), "not even alike")
}
