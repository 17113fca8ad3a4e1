package storetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

var conversationTests = []test{
	{"exists_from_first_message_or_file", testConversationExists},
	{"ordered_by_activity_with_ties", testConversationOrder},
	{"cursors_both_ways", testConversationCursors},
	{"cursors_within_and_across_seconds", testConversationSeconds},
	{"unread_counts", testUnreadCounts},
	{"counts_across_deletes", testCountsAcrossDeletes},
	{"positions_never_move_back", testPositionsNeverMoveBack},
	{"late_messages_take_their_place", testLateMessages},
	{"mark_read_other_conversation", testMarkReadOtherConversation},
	{"concurrent_sends_reads_deletes", testConcurrentConversation},
	{"concurrent_fresh_and_late_messages", testConcurrentFreshMessages},
	{"members", testMembers},
	{"member_scope", testMemberScope},
}

// conv returns the conversation as viewer sees it.
func (h *harness) conv(id string, viewer messaging.Contact) messaging.Conversation {
	h.t.Helper()
	c, err := h.s.GetConversation(h.ctx, id, viewer.ID)
	require.NoError(h.t, err, "GetConversation %s", id)
	return c
}

func (h *harness) markRead(conv string, who messaging.Contact, msgID string) {
	h.t.Helper()
	require.NoError(h.t, h.s.MarkRead(h.ctx, conv, who.ID, msgID, nil), "MarkRead")
}

func testConversationExists(t *testing.T, h *harness) {
	alice := h.contact("alice")
	_, err := h.s.GetConversation(h.ctx, "c", alice.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound)

	// An unfiled upload makes no conversation; a filed one does.
	h.attachment("", alice, at(1))
	h.attachment("files", alice, at(2))
	c := h.conv("files", alice)
	assert.Equal(t, messaging.Conversation{ID: "files", CreatedAt: at(2), UpdatedAt: at(2)}, c)

	m := h.message("c", alice, at(3))
	c = h.conv("c", alice)
	assertUTC(t, c.CreatedAt, "CreatedAt")
	assertUTC(t, c.UpdatedAt, "UpdatedAt")
	assert.Equal(t, at(3), c.CreatedAt)
	assert.Equal(t, at(3), c.UpdatedAt)
	assert.EqualValues(t, 1, c.MessageCount)
	require.NotNil(t, c.LastMessage)
	assertMessage(t, m, *c.LastMessage, "LastMessage is the message as GetMessage returns it")
	assert.Zero(t, c.UnreadCount, "one's own message is not unread")

	// A file filed in a conversation with messages changes nothing of it.
	h.attachment("c", alice, at(4))
	assert.Equal(t, c, h.conv("c", alice))
}

// conversationIDs returns the ids of cs.
func conversationIDs(cs []messaging.Conversation) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func testConversationOrder(t *testing.T, h *harness) {
	alice := h.contact("alice")
	h.message("old", alice, at(1))
	h.message("tie-a", alice, at(5))
	h.message("tie-b", alice, at(5))
	h.message("new", alice, at(2))
	h.message("new", alice, at(9)) // "new" is active last
	h.attachment("quiet", alice, at(3))

	got, more, err := h.s.ListConversations(h.ctx, driver.ConversationQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 10}, ViewerID: alice.ID})
	require.NoError(t, err)
	assert.False(t, more)
	assert.Equal(t, []string{"new", "tie-b", "tie-a", "quiet", "old"}, conversationIDs(got), "UpdatedAt, then ID, descending")
	for _, c := range got {
		assert.Equal(t, h.conv(c.ID, alice), c, "a listed conversation is as GetConversation returns it")
	}

	got, _, err = h.s.ListConversations(h.ctx, driver.ConversationQuery{Scope: driver.Scope{ConversationIDs: []string{"old", "quiet", "nope"}}, Window: driver.Window{Limit: 10}, ViewerID: alice.ID})
	require.NoError(t, err)
	assert.Equal(t, []string{"quiet", "old"}, conversationIDs(got))

	_, _, err = h.s.ListConversations(h.ctx, driver.ConversationQuery{Scope: driver.Scope{All: true}, ViewerID: alice.ID})
	assert.ErrorIs(t, err, messaging.ErrInvalid, "a Limit below 1")
}

func testConversationCursors(t *testing.T, h *harness) {
	alice := h.contact("alice")
	var items []item
	for i := range 12 {
		id := fmt.Sprintf("c%02d", i)
		h.message(id, alice, at(i/2)) // pairs share a time
		items = append(items, item{id: id, at: at(i / 2)})
	}
	all := newestFirst(items)
	page := func(after, before *driver.Cursor, limit int) ([]string, bool) {
		t.Helper()
		got, more, err := h.s.ListConversations(h.ctx, driver.ConversationQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: limit, After: after, Before: before}, ViewerID: alice.ID})
		require.NoError(t, err)
		return conversationIDs(got), more
	}
	pos := func(id string) *driver.Cursor {
		i := slices.IndexFunc(items, func(it item) bool { return it.id == id })
		return items[i].cursor()
	}
	got, more := page(nil, nil, 5)
	assert.Equal(t, all[:5], got)
	assert.True(t, more)
	got, more = page(pos(all[4]), nil, 5)
	assert.Equal(t, all[5:10], got)
	assert.True(t, more)
	got, more = page(pos(all[9]), nil, 5)
	assert.Equal(t, all[10:], got)
	assert.False(t, more)
	got, more = page(nil, pos(all[10]), 5)
	assert.Equal(t, all[5:10], got, "Before: the items just newer, still newest first")
	assert.True(t, more)
	got, more = page(nil, pos(all[3]), 5)
	assert.Equal(t, all[:3], got)
	assert.False(t, more)

	// Cursors by id alone: the same pages.
	byID := func(id string) *driver.Cursor { return &driver.Cursor{ID: id} }
	got, more = page(byID(all[4]), nil, 5)
	assert.Equal(t, all[5:10], got, "a cursor by id")
	assert.True(t, more)
	got, more = page(byID(all[11]), nil, 5)
	assert.Empty(t, got, "after the last")
	assert.False(t, more)
	got, more = page(nil, byID(all[10]), 5)
	assert.Equal(t, all[5:10], got, "Before by id")
	assert.True(t, more)
	got, more = page(nil, byID(all[0]), 5)
	assert.Empty(t, got, "before the first")
	assert.False(t, more)
	for _, c := range []struct{ after, before *driver.Cursor }{{byID("nope"), nil}, {nil, byID("nope")}} {
		_, _, err := h.s.ListConversations(h.ctx, driver.ConversationQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 5, After: c.after, Before: c.before}, ViewerID: alice.ID})
		assert.ErrorIs(t, err, messaging.ErrNotFound, "a cursor by id that is no conversation")
	}
	// Of the store, but not of the list's scope.
	in := driver.Scope{ConversationIDs: []string{all[2], all[3], all[4]}}
	got2, _, err := h.s.ListConversations(h.ctx, driver.ConversationQuery{Scope: in, Window: driver.Window{Limit: 5, After: byID(all[2])}, ViewerID: alice.ID})
	require.NoError(t, err)
	assert.Equal(t, all[3:5], conversationIDs(got2))
	_, _, err = h.s.ListConversations(h.ctx, driver.ConversationQuery{Scope: in, Window: driver.Window{Limit: 5, After: byID(all[0])}, ViewerID: alice.ID})
	assert.ErrorIs(t, err, messaging.ErrNotFound, "a cursor by id out of the scope")
	require.NoError(t, h.s.AddMember(h.ctx, all[6], alice.ID, at(0)))
	require.NoError(t, h.s.AddMember(h.ctx, all[8], alice.ID, at(0)))
	mine := driver.Scope{MemberID: alice.ID}
	got2, _, err = h.s.ListConversations(h.ctx, driver.ConversationQuery{Scope: mine, Window: driver.Window{Limit: 5, After: byID(all[6])}, ViewerID: alice.ID})
	require.NoError(t, err)
	assert.Equal(t, []string{all[8]}, conversationIDs(got2), "a member's list")
	_, _, err = h.s.ListConversations(h.ctx, driver.ConversationQuery{Scope: mine, Window: driver.Window{Limit: 5, Before: byID(all[7])}, ViewerID: alice.ID})
	assert.ErrorIs(t, err, messaging.ErrNotFound, "a cursor by id of no membership")
}

// testConversationSeconds pages through conversations active within one
// second and in the seconds around it, with ties, ids out of their times'
// order and a conversation that moves, by every limit and both kinds of
// cursor, both ways: a backend may order by the second first (sqlstore on
// PostgreSQL does), and the pages must not show it.
func testConversationSeconds(t *testing.T, h *harness) {
	alice := h.contact("alice")
	s0 := base.Truncate(time.Second).Add(time.Hour)
	offs := []time.Duration{
		-time.Microsecond, 0, 0, time.Microsecond, 250 * time.Millisecond, 250 * time.Millisecond,
		500 * time.Millisecond, time.Second - time.Microsecond, time.Second - time.Microsecond,
		time.Second, time.Second, time.Second + time.Microsecond, 2*time.Second - time.Microsecond,
		2*time.Second + 500*time.Millisecond, 3 * time.Second,
	}
	items := make([]item, len(offs))
	for i, off := range offs {
		// Ids in another order than times, within a second too.
		items[i] = item{id: fmt.Sprintf("s%02d", (i*7)%len(offs)), at: s0.Add(off)}
		h.message(items[i].id, alice, items[i].at)
		require.NoError(t, h.s.AddMember(h.ctx, items[i].id, alice.ID, s0))
	}
	// The first moves into the middle of the next second but one.
	items[0].at = s0.Add(2*time.Second + 500*time.Millisecond)
	h.message(items[0].id, alice, items[0].at)
	all := newestFirst(items)

	for _, scope := range []driver.Scope{{All: true}, {MemberID: alice.ID}} {
		list := func(limit int, after, before *driver.Cursor) ([]string, bool) {
			t.Helper()
			got, more, err := h.s.ListConversations(h.ctx, driver.ConversationQuery{Scope: scope,
				Window: driver.Window{Limit: limit, After: after, Before: before}, ViewerID: alice.ID})
			require.NoError(t, err)
			return conversationIDs(got), more
		}
		got, more := list(len(all)+1, nil, nil)
		require.Equal(t, all, got, "one page of all, UpdatedAt then ID descending (scope %+v)", scope)
		require.False(t, more)
		for _, byID := range []bool{true, false} {
			cursor := func(id string) *driver.Cursor {
				if byID {
					return &driver.Cursor{ID: id}
				}
				return itemOf(items, id).cursor()
			}
			for limit := 1; limit <= 4; limit++ {
				var fwd []string
				var after *driver.Cursor
				for range len(all) + 1 {
					got, more := list(limit, after, nil)
					fwd = append(fwd, got...)
					if !more {
						break
					}
					after = cursor(got[len(got)-1])
				}
				assert.Equal(t, all, fwd, "forward by %d, by id %v, scope %+v", limit, byID, scope)
				var back []string
				before := cursor(all[len(all)-1])
				for range len(all) + 1 {
					got, more := list(limit, nil, before)
					back = append(slices.Clone(got), back...)
					if !more {
						break
					}
					before = cursor(got[0])
				}
				assert.Equal(t, all[:len(all)-1], back, "backward by %d, by id %v, scope %+v", limit, byID, scope)
			}
		}
	}
}

func testUnreadCounts(t *testing.T, h *harness) {
	alice, bob, carol := h.contact("alice"), h.contact("bob"), h.contact("carol")
	var ms []messaging.Message
	for i, who := range []messaging.Contact{alice, bob, alice, alice, bob} {
		ms = append(ms, h.message("c", who, at(i)))
	}
	unread := func(who messaging.Contact) int64 { t.Helper(); return h.conv("c", who).UnreadCount }
	assert.EqualValues(t, 2, unread(alice), "bob's two")
	assert.EqualValues(t, 3, unread(bob), "alice's three")
	assert.EqualValues(t, 5, unread(carol), "a reader who never read nor wrote")
	assert.Empty(t, h.conv("c", carol).LastReadMessageID)

	h.markRead("c", carol, ms[2].ID)
	c := h.conv("c", carol)
	assert.EqualValues(t, 2, c.UnreadCount)
	assert.Equal(t, ms[2].ID, c.LastReadMessageID)
	assert.EqualValues(t, 3, unread(bob), "one reader's position is not another's")

	h.markRead("c", bob, ms[3].ID) // alice's 1st, 3rd, 4th read
	assert.EqualValues(t, 0, unread(bob))
	h.message("c", bob, at(10))
	assert.EqualValues(t, 0, unread(bob), "one's own new message is not unread")
	h.message("c", alice, at(11))
	assert.EqualValues(t, 1, unread(bob))
	assert.EqualValues(t, 3, unread(alice))
	assert.EqualValues(t, 7, h.conv("c", alice).MessageCount)
}

func testCountsAcrossDeletes(t *testing.T, h *harness) {
	alice, bob := h.contact("alice"), h.contact("bob")
	var ms []messaging.Message
	for i := range 6 {
		who := alice
		if i%2 == 1 {
			who = bob
		}
		ms = append(ms, h.message("c", who, at(i)))
	}
	h.markRead("c", bob, ms[2].ID) // bob read alice's 0 and 2; alice's 4 unread
	h.markRead("c", alice, ms[3].ID)
	del := func(i int) {
		t.Helper()
		_, err := h.s.DeleteMessage(h.ctx, ms[i].ID, nil)
		require.NoError(t, err)
	}
	del(0) // read by both
	assert.EqualValues(t, 1, h.conv("c", bob).UnreadCount)
	assert.EqualValues(t, 1, h.conv("c", alice).UnreadCount, "bob's 5")
	del(4) // alice's, unread by bob
	assert.EqualValues(t, 0, h.conv("c", bob).UnreadCount)
	del(3) // bob's, read by alice, and her position
	c := h.conv("c", alice)
	assert.EqualValues(t, 1, c.UnreadCount)
	assert.Equal(t, ms[3].ID, c.LastReadMessageID, "the position stays where it was")
	assert.EqualValues(t, 3, c.MessageCount)

	// The newest goes: the one before it is the last message.
	require.NotNil(t, c.LastMessage)
	assert.Equal(t, ms[5].ID, c.LastMessage.ID)
	del(5)
	c = h.conv("c", alice)
	require.NotNil(t, c.LastMessage)
	assert.Equal(t, ms[2].ID, c.LastMessage.ID)
	assert.Equal(t, at(2), c.UpdatedAt)
	assert.EqualValues(t, 0, c.UnreadCount)
	del(1)
	del(2)
	c = h.conv("c", alice)
	assert.Nil(t, c.LastMessage)
	assert.Zero(t, c.MessageCount)
	assert.Equal(t, c.CreatedAt, c.UpdatedAt, "with no message, UpdatedAt is CreatedAt")
	assert.Zero(t, h.conv("c", bob).UnreadCount)

	// Counting goes on exactly after the conversation emptied.
	h.message("c", alice, at(20))
	assert.EqualValues(t, 1, h.conv("c", bob).UnreadCount)
}

func testPositionsNeverMoveBack(t *testing.T, h *harness) {
	alice, bob := h.contact("alice"), h.contact("bob")
	var ms []messaging.Message
	for i := range 4 {
		ms = append(ms, h.message("c", alice, at(i)))
	}
	h.markRead("c", bob, ms[2].ID)
	h.markRead("c", bob, ms[0].ID)
	h.markRead("c", bob, ms[2].ID)
	c := h.conv("c", bob)
	assert.Equal(t, ms[2].ID, c.LastReadMessageID)
	assert.EqualValues(t, 1, c.UnreadCount)
}

func testMarkReadOtherConversation(t *testing.T, h *harness) {
	alice, bob := h.contact("alice"), h.contact("bob")
	h.message("c", alice, at(1))
	other := h.message("d", alice, at(2))
	err := h.s.MarkRead(h.ctx, "c", bob.ID, other.ID, nil)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	err = h.s.MarkRead(h.ctx, "c", bob.ID, ids.NewAt(ids.Message, at(3)), nil)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	assert.EqualValues(t, 1, h.conv("c", bob).UnreadCount, "nothing changed")
}

// testConcurrentConversation runs a hundred senders, readers and deleters
// at once, then checks that the counters are exact: each reader who reads
// through the last message has nothing unread, and the message count is
// the number of messages.
func testConcurrentConversation(t *testing.T, h *harness) {
	const n = 100
	people := make([]messaging.Contact, 10)
	for i := range people {
		people[i] = h.contact(fmt.Sprint("p", i))
	}
	var seed []messaging.Message
	for i := range 40 {
		seed = append(seed, h.message("c", people[i%len(people)], at(i)))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	roles := make([]int, n)
	targets := make([]int, n)
	for i := range roles {
		roles[i], targets[i] = i%3, rng.IntN(len(seed))
	}
	errs := parallel(n, func(i int) error {
		who := people[i%len(people)]
		switch roles[i] {
		case 0: // send
			return h.s.CreateMessage(h.ctx, newMessage("c", who, at(100+i)), nil, nil)
		case 1: // read through a seeded message (maybe deleted meanwhile)
			err := h.s.MarkRead(h.ctx, "c", who.ID, seed[targets[i]].ID, nil)
			if errorsIsNotFound(err) {
				return nil
			}
			return err
		default: // delete a seeded message (maybe deleted meanwhile)
			_, err := h.s.DeleteMessage(h.ctx, seed[targets[i]].ID, nil)
			if errorsIsNotFound(err) {
				return nil
			}
			return err
		}
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	msgs, _, err := h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 1000}})
	require.NoError(t, err)
	c := h.conv("c", people[0])
	assert.EqualValues(t, len(msgs), c.MessageCount)
	require.NotNil(t, c.LastMessage)
	assert.Equal(t, msgs[0].ID, c.LastMessage.ID, "the newest of the list")
	created := map[string]time.Time{}
	for _, m := range seed {
		created[m.ID] = m.CreatedAt
	}
	for _, p := range people {
		// Exact counts: the others' messages after the position, in the
		// list's order (the position's message may be deleted).
		got := h.conv("c", p)
		want := 0
		for _, m := range msgs {
			if m.Contact.ID == p.ID {
				continue
			}
			if got.LastReadMessageID == "" || compareItems(item{m.ID, m.CreatedAt}, item{got.LastReadMessageID, created[got.LastReadMessageID]}) > 0 {
				want++
			}
		}
		assert.EqualValues(t, want, got.UnreadCount, "%s, read through %q", p.Username, got.LastReadMessageID)
		h.markRead("c", p, c.LastMessage.ID)
		assert.Zero(t, h.conv("c", p).UnreadCount, "%s read everything", p.Username)
	}
	h.message("c", people[0], at(1000))
	for _, p := range people[1:] {
		assert.EqualValues(t, 1, h.conv("c", p).UnreadCount)
	}
}

// testConcurrentFreshMessages runs senders, readers, deleters and
// viewers at once on messages that were just sent: readers read through,
// and deleters delete, a message sent a moment before by another
// goroutine, and a third of the sends come with a time before the newest
// (another instance's clock), so that they land before some readers'
// positions. Afterwards every count is exact.
func testConcurrentFreshMessages(t *testing.T, h *harness) {
	const n = 120
	people := make([]messaging.Contact, 6)
	for i := range people {
		people[i] = h.contact(fmt.Sprint("p", i))
	}
	first := h.message("c", people[0], at(0))
	var mu sync.Mutex
	sent := []messaging.Message{first} // every message sent, deleted or not
	pick := func(i int) messaging.Message {
		mu.Lock()
		defer mu.Unlock()
		return sent[len(sent)-1-i%min(len(sent), 4)] // one of the newest
	}
	errs := parallel(n, func(i int) error {
		who := people[i%len(people)]
		switch i % 4 {
		case 0, 1: // send; every third a late one
			created := at(1000 + i)
			if i%3 == 0 {
				created = at(500 + i)
			}
			m := newMessage("c", who, created)
			err := h.s.CreateMessage(h.ctx, m, nil, nil)
			if err == nil {
				mu.Lock()
				sent = append(sent, m)
				mu.Unlock()
			}
			return err
		case 2: // read through a fresh message, or delete one
			m := pick(i)
			var err error
			if i%8 == 2 {
				_, err = h.s.DeleteMessage(h.ctx, m.ID, nil)
			} else {
				err = h.s.MarkRead(h.ctx, "c", who.ID, m.ID, nil)
			}
			if errorsIsNotFound(err) {
				return nil
			}
			return err
		default: // view
			_, err := h.s.GetConversation(h.ctx, "c", who.ID)
			return err
		}
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	msgs, _, err := h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 1000}})
	require.NoError(t, err)
	created := map[string]time.Time{}
	for _, m := range sent {
		created[m.ID] = m.CreatedAt
	}
	c := h.conv("c", people[0])
	assert.EqualValues(t, len(msgs), c.MessageCount)
	require.NotNil(t, c.LastMessage)
	assert.Equal(t, msgs[0].ID, c.LastMessage.ID, "the newest of the list")
	for _, p := range people {
		got := h.conv("c", p)
		want := 0
		for _, m := range msgs {
			if m.Contact.ID != p.ID && (got.LastReadMessageID == "" ||
				compareItems(item{m.ID, m.CreatedAt}, item{got.LastReadMessageID, created[got.LastReadMessageID]}) > 0) {
				want++
			}
		}
		assert.EqualValues(t, want, got.UnreadCount, "%s, read through %q", p.Username, got.LastReadMessageID)
	}
	// And the counters go on from there: a late message, and a new one
	// deleted before anything reads the conversation.
	h.markRead("c", people[1], c.LastMessage.ID)
	h.message("c", people[0], at(1))
	gone := h.message("c", people[2], at(5000))
	_, err = h.s.DeleteMessage(h.ctx, gone.ID, nil)
	require.NoError(t, err)
	got := h.conv("c", people[1])
	assert.EqualValues(t, len(msgs)+1, got.MessageCount)
	require.NotNil(t, got.LastMessage)
	assert.Equal(t, c.LastMessage.ID, got.LastMessage.ID, "the deleted message is not the last")
	assert.Zero(t, got.UnreadCount, "a late message before the position is read")
}

// compareItems orders list items by (at, id).
func compareItems(a, b item) int {
	if c := a.at.Compare(b.at); c != 0 {
		return c
	}
	return compareStrings(a.id, b.id)
}

// testLateMessages stores a message with a time before the newest's
// (another instance's clock): it takes its place in the list by its time,
// the last message stays the newest, and it is unread exactly for the
// readers whose position is before it.
func testLateMessages(t *testing.T, h *harness) {
	alice, bob, carol := h.contact("alice"), h.contact("bob"), h.contact("carol")
	m1 := h.message("c", alice, at(1))
	m3 := h.message("c", alice, at(3))
	h.markRead("c", bob, m3.ID)   // bob is past the late message's place
	h.markRead("c", carol, m1.ID) // carol is before it
	late := h.message("c", alice, at(2))

	c := h.conv("c", bob)
	assert.EqualValues(t, 3, c.MessageCount)
	require.NotNil(t, c.LastMessage)
	assert.Equal(t, m3.ID, c.LastMessage.ID, "the newest stays the last message")
	assert.Equal(t, at(3), c.UpdatedAt)
	assert.Zero(t, c.UnreadCount, "before bob's position: read")
	assert.EqualValues(t, 2, h.conv("c", carol).UnreadCount, "after carol's position: unread")

	list, _, err := h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 10}})
	require.NoError(t, err)
	assert.Equal(t, []string{m3.ID, late.ID, m1.ID}, messageIDs(list))

	// Deleting it undoes exactly what storing it did.
	_, err = h.s.DeleteMessage(h.ctx, late.ID, nil)
	require.NoError(t, err)
	assert.Zero(t, h.conv("c", bob).UnreadCount)
	assert.EqualValues(t, 1, h.conv("c", carol).UnreadCount)
	h.markRead("c", carol, m3.ID)
	assert.Zero(t, h.conv("c", carol).UnreadCount)
}

func errorsIsNotFound(err error) bool { return messaging.KindOf(err) == messaging.ErrNotFound }

func testMembers(t *testing.T, h *harness) {
	alice, bob, carol := h.contact("alice"), h.contact("bob"), h.contact("carol")
	for _, c := range []string{"b", "a", "c"} {
		require.NoError(t, h.s.AddMember(h.ctx, c, alice.ID, at(1)))
	}
	require.NoError(t, h.s.AddMember(h.ctx, "a", carol.ID, at(2)))
	require.NoError(t, h.s.AddMember(h.ctx, "a", bob.ID, at(3)))
	require.NoError(t, h.s.AddMember(h.ctx, "a", bob.ID, at(4)), "adding again changes nothing")
	err := h.s.AddMember(h.ctx, "a", "ctc_nobody", at(5))
	assert.ErrorIs(t, err, messaging.ErrNotFound)

	ok, err := h.s.IsMember(h.ctx, "a", bob.ID)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = h.s.IsMember(h.ctx, "b", bob.ID)
	require.NoError(t, err)
	assert.False(t, ok)

	members, more, err := h.s.ListMembers(h.ctx, driver.MemberQuery{Window: driver.Window{Limit: 10}, ConversationID: "a"})
	require.NoError(t, err)
	assert.False(t, more)
	want := []messaging.Member{{ConversationID: "a", ContactID: alice.ID, JoinedAt: at(1)}, {ConversationID: "a", ContactID: bob.ID, JoinedAt: at(3)}, {ConversationID: "a", ContactID: carol.ID, JoinedAt: at(2)}}
	slices.SortFunc(want, func(x, y messaging.Member) int { return compareStrings(x.ContactID, y.ContactID) })
	assert.Equal(t, want, members)
	page, more, err := h.s.ListMembers(h.ctx, driver.MemberQuery{Window: driver.Window{Limit: 2}, ConversationID: "a"})
	require.NoError(t, err)
	assert.True(t, more)
	assert.Equal(t, want[:2], page)
	page, more, err = h.s.ListMembers(h.ctx, driver.MemberQuery{Window: driver.Window{After: &driver.Cursor{ID: want[1].ContactID}, Limit: 2}, ConversationID: "a"})
	require.NoError(t, err)
	assert.False(t, more)
	assert.Equal(t, want[2:], page)

	of, _, err := h.s.ListMembers(h.ctx, driver.MemberQuery{Window: driver.Window{Limit: 10}, ContactID: alice.ID})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, []string{of[0].ConversationID, of[1].ConversationID, of[2].ConversationID})

	require.NoError(t, h.s.RemoveMember(h.ctx, "a", bob.ID))
	require.NoError(t, h.s.RemoveMember(h.ctx, "a", bob.ID), "removing again is no error")
	ok, err = h.s.IsMember(h.ctx, "a", bob.ID)
	require.NoError(t, err)
	assert.False(t, ok)
	members, _, err = h.s.ListMembers(h.ctx, driver.MemberQuery{Window: driver.Window{Limit: 10}, ConversationID: "a"})
	require.NoError(t, err)
	assert.Len(t, members, 2)
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func testMemberScope(t *testing.T, h *harness) {
	alice, bob := h.contact("alice"), h.contact("bob")
	require.NoError(t, h.s.AddMember(h.ctx, "mine", bob.ID, at(0)))
	require.NoError(t, h.s.AddMember(h.ctx, "left", bob.ID, at(0)))
	require.NoError(t, h.s.RemoveMember(h.ctx, "left", bob.ID))
	mine := h.message("mine", alice, at(1))
	h.message("other", alice, at(2))
	h.message("left", alice, at(3))
	extra := h.message("extra", alice, at(4))
	fileMine := h.attachment("mine", alice, at(5))
	h.attachment("other", alice, at(6))

	convs, _, err := h.s.ListConversations(h.ctx, driver.ConversationQuery{Scope: driver.Scope{MemberID: bob.ID}, Window: driver.Window{Limit: 10}, ViewerID: bob.ID})
	require.NoError(t, err)
	assert.Equal(t, []string{"mine"}, conversationIDs(convs))
	convs, _, err = h.s.ListConversations(h.ctx, driver.ConversationQuery{Scope: driver.Scope{MemberID: bob.ID, ConversationIDs: []string{"extra"}}, Window: driver.Window{Limit: 10}, ViewerID: bob.ID})
	require.NoError(t, err)
	assert.Equal(t, []string{"extra", "mine"}, conversationIDs(convs), "members and ids together")

	msgs, _, err := h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{MemberID: bob.ID}, Window: driver.Window{Limit: 10}})
	require.NoError(t, err)
	assert.Equal(t, []string{mine.ID}, messageIDs(msgs))
	msgs, _, err = h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{MemberID: bob.ID, ConversationIDs: []string{"extra"}}, Window: driver.Window{Limit: 10}})
	require.NoError(t, err)
	assert.Equal(t, []string{extra.ID, mine.ID}, messageIDs(msgs))

	files, _, err := h.s.ListAttachments(h.ctx, attachmentQuery(bob.ID))
	require.NoError(t, err)
	assert.Equal(t, []string{fileMine.ID}, attachmentIDs(files))
}

// attachmentQuery selects the attachments of the conversations member is
// a member of.
func attachmentQuery(member string) driver.AttachmentQuery {
	return driver.AttachmentQuery{Scope: driver.Scope{MemberID: member}, Window: driver.Window{Limit: 10}}
}
