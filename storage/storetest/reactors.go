package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

var reactorTests = []test{
	{"a_message_embeds_the_first_reactors", testEmbeddedReactors},
	{"list_reactors", testListReactors},
	{"reactor_names_are_counted", testReactorNames},
	{"lookup_message", testLookupMessage},
	{"concurrent_adds_and_removes_keep_the_counts", testConcurrentReactorChurn},
}

// contacts stores n contacts named prefix000, prefix001, … and returns
// their ids and usernames, in that order.
func (h *harness) contacts(prefix string, n int) (cids, names []string) {
	h.t.Helper()
	for i := range n {
		c := messaging.Contact{ID: ids.New(ids.Contact), Username: fmt.Sprintf("%s%03d", prefix, i), CreatedAt: base}
		require.NoError(h.t, h.s.PutContact(h.ctx, c))
		cids, names = append(cids, c.ID), append(names, c.Username)
	}
	return cids, names
}

// reactAll adds each of cids to the reaction name of the message, one
// change each, reacted at at(i).
func (h *harness) reactAll(msgID, name string, cids []string) {
	h.t.Helper()
	for i, id := range cids {
		_, err := h.s.UpdateMessage(h.ctx, msgID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: id, Add: []string{name}, At: at(i)}})
		require.NoError(h.t, err)
	}
}

// allReactors lists every reactor of the reaction, page by page.
func (h *harness) allReactors(msgID, name string) []messaging.Reactor {
	h.t.Helper()
	var out []messaging.Reactor
	q := driver.ReactorQuery{Window: driver.Window{Limit: 7}, MessageID: msgID, Name: name}
	for {
		page, more, err := h.s.ListReactors(h.ctx, q)
		require.NoError(h.t, err)
		out = append(out, page...)
		if !more {
			return out
		}
		require.NotEmpty(h.t, page)
		q.After = &driver.Cursor{ID: page[len(page)-1].ContactID}
	}
}

// usernames returns the usernames of rs.
func usernames(rs []messaging.Reactor) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Username
	}
	return out
}

// testEmbeddedReactors: a message carries the first MaxEmbeddedReactors
// reactors of each reaction and the count of all, in GetMessage,
// ListMessages and UpdateMessage's answer alike, as reactors come and go
// before, inside and beyond the embedded ones.
func testEmbeddedReactors(t *testing.T, h *harness) {
	const max = messaging.MaxEmbeddedReactors
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	cids, names := h.contacts("u", max+30)
	h.reactAll(m.ID, "a", cids)
	h.update(m.ID, driver.MessageChange{Reactions: h.adds("alice", "b")})

	check := func(want []string, count int, msgAndArgs ...any) {
		t.Helper()
		want = want[:min(len(want), max)]
		got := h.get(m.ID)
		require.Len(t, got.Reactions, 2, msgAndArgs...)
		assert.Equal(t, messaging.Reaction{Name: "a", Reactors: want, Count: count}, got.Reactions[0], msgAndArgs...)
		assert.Equal(t, r("b", "alice"), got.Reactions[1])
		items, _, err := h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 10}})
		require.NoError(t, err)
		require.Len(t, items, 1)
		assertMessage(t, got, items[0], "a list shows the message as GetMessage does")
	}
	check(names, max+30, "the first 100 of 130")

	remove := func(i int) {
		t.Helper()
		h.update(m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: cids[i], Remove: []string{"a"}}})
	}
	left := slices.Clone(names)
	drop := func(i int) {
		left = slices.DeleteFunc(left, func(n string) bool { return n == names[i] })
		remove(i)
	}
	drop(10)
	check(left, max+29, "a reactor removed from the first 100 lets the 101st in")
	drop(120)
	check(left, max+28, "one removed beyond the first 100 changes none of them")
	drop(0)
	drop(99)
	check(left, max+26)
	for i := 30; i < 60; i++ {
		drop(i)
	}
	check(left, max-4, "fewer than 100: every reactor")
	h.update(m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: cids[10], Add: []string{"a"}}})
	h.update(m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: cids[0], Add: []string{"a"}}})
	left = append(left, names[10], names[0])
	check(left, max-2, "reactors who come back come last")
	h.reactAll(m.ID, "a", cids[30:40])
	left = append(left, names[30:40]...)
	check(left, max+8, "past 100 again")
	assert.Equal(t, left, usernames(h.allReactors(m.ID, "a")), "the list holds them all, in order")
}

func testListReactors(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	cids, names := h.contacts("v", 12)
	h.reactAll(m.ID, "👍", cids)

	page, more, err := h.s.ListReactors(h.ctx, driver.ReactorQuery{Window: driver.Window{Limit: 5}, MessageID: m.ID, Name: "👍"})
	require.NoError(t, err)
	assert.True(t, more)
	assert.Equal(t, names[:5], usernames(page))
	for i, r := range page {
		assert.Equal(t, cids[i], r.ContactID)
		assert.Equal(t, at(i), r.ReactedAt, "reacted at the change's ReactedAt")
		assertUTC(t, r.ReactedAt, "ReactedAt")
	}
	page, more, err = h.s.ListReactors(h.ctx, driver.ReactorQuery{Window: driver.Window{Limit: 5, After: &driver.Cursor{ID: cids[9]}}, MessageID: m.ID, Name: "👍"})
	require.NoError(t, err)
	assert.False(t, more)
	assert.Equal(t, names[10:], usernames(page))
	page, more, err = h.s.ListReactors(h.ctx, driver.ReactorQuery{Window: driver.Window{Limit: 3, Before: &driver.Cursor{ID: cids[5]}}, MessageID: m.ID, Name: "👍"})
	require.NoError(t, err)
	assert.True(t, more)
	assert.Equal(t, names[2:5], usernames(page), "Before: those just before, still in order")
	page, more, err = h.s.ListReactors(h.ctx, driver.ReactorQuery{Window: driver.Window{Limit: 3, Before: &driver.Cursor{ID: cids[3]}}, MessageID: m.ID, Name: "👍"})
	require.NoError(t, err)
	assert.False(t, more)
	assert.Equal(t, names[:3], usernames(page))
	page, more, err = h.s.ListReactors(h.ctx, driver.ReactorQuery{Window: driver.Window{Limit: 3, After: &driver.Cursor{ID: cids[11]}}, MessageID: m.ID, Name: "👍"})
	require.NoError(t, err)
	assert.False(t, more)
	assert.Empty(t, page)

	_, _, err = h.s.ListReactors(h.ctx, driver.ReactorQuery{Window: driver.Window{Limit: 3, After: &driver.Cursor{ID: alice.ID}}, MessageID: m.ID, Name: "👍"})
	assert.ErrorIs(t, err, messaging.ErrNotFound, "a cursor that is not a reactor")
	_, _, err = h.s.ListReactors(h.ctx, driver.ReactorQuery{Window: driver.Window{Limit: 3, Before: &driver.Cursor{ID: cids[0]}}, MessageID: m.ID, Name: "other"})
	assert.ErrorIs(t, err, messaging.ErrNotFound, "a cursor that is a reactor of another name")
	page, more, err = h.s.ListReactors(h.ctx, driver.ReactorQuery{Window: driver.Window{Limit: 3}, MessageID: m.ID, Name: "other"})
	require.NoError(t, err)
	assert.False(t, more)
	assert.Empty(t, page, "a name nobody used")
	page, _, err = h.s.ListReactors(h.ctx, driver.ReactorQuery{Window: driver.Window{Limit: 3}, MessageID: ids.NewAt(ids.Message, base), Name: "👍"})
	require.NoError(t, err)
	assert.Empty(t, page, "a message that does not exist")

	renamed := messaging.Contact{ID: cids[1], Username: "renamed", CreatedAt: base}
	require.NoError(t, h.s.PutContact(h.ctx, renamed))
	page, _, err = h.s.ListReactors(h.ctx, driver.ReactorQuery{Window: driver.Window{Limit: 3}, MessageID: m.ID, Name: "👍"})
	require.NoError(t, err)
	assert.Equal(t, []string{names[0], "renamed", names[2]}, usernames(page), "usernames as stored now")
	assert.Equal(t, []string{names[0], "renamed", names[2]}, h.get(m.ID).Reactions[0].Reactors[:3])
}

// testReactorNames: Check is told how many names a reactor of the change
// has on the message before and after it.
func testReactorNames(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	var before, after driver.MessageCounts
	spy := func(b, a driver.MessageCounts) error {
		before, after = b, a
		return nil
	}
	h.update(m.ID, driver.MessageChange{Reactions: h.adds("alice", "a", "b"), Check: spy})
	assert.Equal(t, 0, before.ReactorNames)
	assert.Equal(t, 2, after.ReactorNames, "alice has a and b")
	assert.Equal(t, 2, after.ReactionNames)

	h.update(m.ID, driver.MessageChange{Reactions: h.adds("bob", "b")})
	h.update(m.ID, driver.MessageChange{Reactions: h.adds("bob", "b", "c"), Check: spy})
	assert.Equal(t, 1, before.ReactorNames, "bob had b")
	assert.Equal(t, 2, after.ReactorNames, "bob has b and c")
	assert.Equal(t, 2, before.ReactionNames)
	assert.Equal(t, 3, after.ReactionNames)

	h.update(m.ID, driver.MessageChange{Reactions: h.adds("alice", "a"), Check: spy})
	assert.Equal(t, 2, before.ReactorNames)
	assert.Equal(t, 2, after.ReactorNames, "a reaction already there adds no name")

	refuse := func(b, a driver.MessageCounts) error {
		if a.ReactorNames > 2 && a.ReactorNames > b.ReactorNames {
			return messaging.ErrInvalid
		}
		return nil
	}
	was := h.get(m.ID)
	_, err := h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{Reactions: h.adds("alice", "d"), Check: refuse})
	assert.ErrorIs(t, err, messaging.ErrInvalid)
	assertMessage(t, was, h.get(m.ID), "a refused change changes nothing")
	h.update(m.ID, driver.MessageChange{Reactions: h.removes("alice", "a")})
	h.update(m.ID, driver.MessageChange{Reactions: h.adds("alice", "d"), Check: refuse})
	assert.Equal(t, []messaging.Reaction{r("b", "alice", "bob"), r("c", "bob"), r("d", "alice")}, h.get(m.ID).Reactions)
}

func testLookupMessage(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("conv", alice, at(3))
	h.update(m.ID, driver.MessageChange{Reactions: h.adds("bob", "a")})
	got, err := h.s.LookupMessage(h.ctx, m.ID)
	require.NoError(t, err)
	assert.Equal(t, driver.MessageRef{ID: m.ID, ConversationID: "conv", SenderID: alice.ID, CreatedAt: at(3)}, got)
	assertUTC(t, got.CreatedAt, "CreatedAt")
	_, err = h.s.LookupMessage(h.ctx, ids.NewAt(ids.Message, base))
	assert.ErrorIs(t, err, messaging.ErrNotFound)
}

// testConcurrentReactorChurn removes reactors from the first 100 of a
// reaction while others are added, all at once: afterwards the count is
// the number of reactors and the message embeds the first 100 of them.
func testConcurrentReactorChurn(t *testing.T, h *harness) {
	const start, churn = messaging.MaxEmbeddedReactors + 10, 20
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	cids, _ := h.contacts("w", start+churn)
	h.reactAll(m.ID, "a", cids[:start])
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for i := range churn {
		wg.Go(func() {
			_, err := h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: cids[i*5], Remove: []string{"a"}}})
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
		wg.Go(func() {
			_, err := h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: cids[start+i], Add: []string{"a"}}})
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	all := usernames(h.allReactors(m.ID, "a"))
	assert.Len(t, all, start)
	got := h.get(m.ID)
	require.Len(t, got.Reactions, 1)
	assert.Equal(t, start, got.Reactions[0].Count, "the count is the number of reactors")
	assert.Equal(t, all[:messaging.MaxEmbeddedReactors], got.Reactions[0].Reactors, "the message embeds the first 100")
}
