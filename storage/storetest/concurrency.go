package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

var concurrencyTests = []test{
	{"reactors_added_at_once_are_all_kept", testConcurrentReactions},
	{"creates_at_once_are_all_listed_once_in_order", testConcurrentCreates},
	{"one_attachment_linked_to_two_messages_at_once", testConcurrentLinks},
	{"one_attachment_in_two_creates_at_once", testConcurrentCreateLinks},
	{"max_reaction_names_under_contention", testConcurrentReactionLimit},
	{"max_attachments_under_contention", testConcurrentAttachmentLimit},
	{"one_new_contact_put_at_once", testConcurrentContactPuts},
}

// parallel runs f(0..n-1) in n goroutines released together, and returns
// their errors by index.
func parallel(n int, f func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = f(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

func testConcurrentReactions(t *testing.T, h *harness) {
	const n = 100
	alice := h.contact("alice")
	var want []string
	for i := range n {
		name := "user" + itoa(i)
		h.contact(name)
		want = append(want, name)
	}
	m := h.message("c", alice, at(1))
	errs := parallel(n, func(i int) error {
		_, err := h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{Reactions: h.adds(want[i], "👍"), Check: Limits(50, 0)})
		return err
	})
	for i, err := range errs {
		assert.NoError(t, err, "reactor %d", i)
	}
	got := h.get(m.ID)
	require.Len(t, got.Reactions, 1)
	assert.Equal(t, "👍", got.Reactions[0].Name)
	assert.Len(t, got.Reactions[0].Reactors, n, "no reactor is lost and none is doubled")
	assert.ElementsMatch(t, want, got.Reactions[0].Reactors)
}

func testConcurrentCreates(t *testing.T, h *harness) {
	const n = 100
	alice := h.contact("alice")
	items := make([]item, n)
	errs := parallel(n, func(i int) error {
		m := newMessage("c", alice, at(i/10)) // ties of ten
		items[i] = item{m.ID, m.CreatedAt}
		return h.s.CreateMessage(h.ctx, m, nil, nil)
	})
	for i, err := range errs {
		require.NoError(t, err, "create %d", i)
	}
	want := newestFirst(items)

	got, more, err := h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: n}})
	require.NoError(t, err)
	assert.Equal(t, want, messageIDs(got), "every message once, newest first")
	assert.False(t, more)

	var walked []string
	var after *driver.Cursor
	for range n {
		page, more, err := h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 30, After: after}})
		require.NoError(t, err)
		walked = append(walked, messageIDs(page)...)
		if !more || len(page) == 0 {
			break
		}
		last := page[len(page)-1]
		after = &driver.Cursor{Time: last.CreatedAt, ID: last.ID}
	}
	assert.Equal(t, want, walked, "pages of 30 walk every message once, in order")
}

func testConcurrentLinks(t *testing.T, h *harness) {
	alice := h.contact("alice")
	for round := range 10 {
		a := h.attachment("c", alice, at(round))
		m1 := h.message("c", alice, at(round))
		m2 := h.message("c", alice, at(round))
		ms := []messaging.Message{m1, m2}
		errs := parallel(2, func(i int) error {
			_, err := h.s.UpdateMessage(h.ctx, ms[i].ID, driver.MessageChange{LinkAttachments: []string{a.ID}, Check: Limits(0, 10)})
			return err
		})
		winner, loser := oneWins(t, errs, round)
		if winner < 0 {
			continue
		}
		assert.Equal(t, linked(a, ms[winner]), h.getAttachment(a.ID), "round %d: linked to the winner", round)
		assert.Equal(t, []string{a.ID}, attachmentIDs(h.get(ms[winner].ID).Attachments), "round %d", round)
		assert.Empty(t, h.get(ms[loser].ID).Attachments, "round %d: the loser has no attachment", round)
	}
}

// oneWins checks that exactly one of two calls succeeded and the other
// failed with ErrConflict, and returns their indexes (-1, -1 otherwise).
func oneWins(t *testing.T, errs []error, round int) (winner, loser int) {
	t.Helper()
	switch {
	case errs[0] == nil && errors.Is(errs[1], messaging.ErrConflict):
		return 0, 1
	case errs[1] == nil && errors.Is(errs[0], messaging.ErrConflict):
		return 1, 0
	}
	t.Errorf("round %d: want exactly one success and one ErrConflict, got %v and %v", round, errs[0], errs[1])
	return -1, -1
}

func testConcurrentCreateLinks(t *testing.T, h *harness) {
	alice := h.contact("alice")
	for round := range 10 {
		a := h.attachment("", alice, at(round))
		ms := []messaging.Message{newMessage("c", alice, at(round)), newMessage("c", alice, at(round))}
		errs := parallel(2, func(i int) error { return h.s.CreateMessage(h.ctx, ms[i], []string{a.ID}, nil) })
		winner, loser := oneWins(t, errs, round)
		if winner < 0 {
			continue
		}
		ms[winner].Contact = alice
		assert.Equal(t, linked(a, ms[winner]), h.getAttachment(a.ID), "round %d", round)
		h.assertNoMessage(ms[loser].ID)
	}
}

func testConcurrentReactionLimit(t *testing.T, h *harness) {
	const n, limit = 12, 5
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	errs := parallel(n, func(i int) error {
		_, err := h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{Reactions: h.adds("alice", "name"+itoa(i)), Check: Limits(limit, 0)})
		return err
	})
	ok := 0
	for i, err := range errs {
		if err == nil {
			ok++
		} else {
			assert.ErrorIs(t, err, messaging.ErrInvalid, "call %d", i)
		}
	}
	assert.Equal(t, limit, ok, "exactly the limit of calls succeed")
	assert.Len(t, h.get(m.ID).Reactions, limit)
}

func testConcurrentAttachmentLimit(t *testing.T, h *harness) {
	const n, limit = 8, 3
	alice := h.contact("alice")
	m := h.message("c", alice, at(100))
	var as []messaging.Attachment
	for i := range n {
		as = append(as, h.attachment("c", alice, at(i)))
	}
	errs := parallel(n, func(i int) error {
		_, err := h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{LinkAttachments: []string{as[i].ID}, Check: Limits(0, limit)})
		return err
	})
	var won []string
	for i, err := range errs {
		if err == nil {
			won = append(won, as[i].ID)
		} else {
			assert.ErrorIs(t, err, messaging.ErrInvalid, "call %d", i)
		}
	}
	assert.Len(t, won, limit, "exactly the limit of calls succeed")
	assert.ElementsMatch(t, won, attachmentIDs(h.get(m.ID).Attachments))
	for i, a := range as {
		got := h.getAttachment(a.ID)
		if got.MessageID != "" {
			assert.Contains(t, won, a.ID, "attachment %d is linked only if its call succeeded", i)
		}
	}
}

func testConcurrentContactPuts(t *testing.T, h *harness) {
	for round := range 10 {
		c := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice" + itoa(round), CreatedAt: base}
		for i, err := range parallel(8, func(int) error { return h.s.PutContact(h.ctx, c) }) {
			require.NoError(t, err, "round %d, put %d: the same contact put at once is no conflict", round, i)
		}
		got, err := h.s.ContactByUsername(h.ctx, c.Username)
		require.NoError(t, err)
		assert.Equal(t, c, got)

		rivals := []messaging.Contact{
			{ID: ids.New(ids.Contact), Username: "bob" + itoa(round), CreatedAt: base},
			{ID: ids.New(ids.Contact), Username: "bob" + itoa(round), CreatedAt: base},
		}
		errs := parallel(2, func(i int) error { return h.s.PutContact(h.ctx, rivals[i]) })
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
			} else {
				assert.ErrorIs(t, err, messaging.ErrConflict, "round %d: the other contact's username is taken", round)
			}
		}
		assert.Equal(t, 1, won, "round %d: one of two new contacts of one username is stored", round)
	}
}
