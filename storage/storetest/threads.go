package storetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// threadTests check driver.ThreadStore, an optional capability: a store
// without it skips them (the Service refuses replies on it).
var threadTests = []test{
	{"replies_counted_outside_the_conversation", testReplyBasics},
	{"parent_must_take_replies", testReplyParent},
	{"concurrent_replies_counted", testConcurrentReplies},
	{"refused_replies_among_sends_store_nothing", testRefusedRepliesAmongSends},
	{"keyed_replies", testKeyedReply},
	{"unread_replies", testThreadUnread},
	{"unread_under_concurrent_replies_reads_deletes", testConcurrentThread},
	{"replies_paged_both_ways", testReplyPaging},
	{"tombstone", testTombstone},
	{"tombstone_takes_no_write_from_another_instance", testTombstoneRemembered},
	{"threads_of_a_caller", testThreadList},
	{"threads_paged_with_ties", testThreadPagingTies},
	{"threads_paged_while_they_move", testThreadPagingMoves},
	{"replies_paged_with_ties", testReplyPagingTies},
	{"threads_scoped_by_access", testThreadScope},
	{"threads_follow_deleted_replies", testThreadListDeletes},
	{"thread_events", testThreadEvents},
	{"search_narrowed_finds_replies", testThreadSearch},
	{"attachments_of_a_reply_are_its_conversations", testReplyAttachments},
}

// testReplyAttachments: attachments linked to a reply when it is sent, by
// a change, or uploaded to it, belong to the reply's conversation.
func testReplyAttachments(t *testing.T, h *harness) {
	h.threads()
	alice := h.contact("alice")
	root := h.message("c", alice, at(1))
	sent := h.attachment("c", alice, at(2))
	later := h.attachment("c", alice, at(3))
	m := newMessage("c", alice, at(4))
	m.ParentID = root.ID
	require.NoError(t, h.s.CreateMessage(h.ctx, m, []string{sent.ID}, nil))

	got := h.update(m.ID, driver.MessageChange{LinkAttachments: []string{later.ID}, UpdatedAt: at(5)})
	assert.Equal(t, []messaging.Attachment{linked(sent, m), linked(later, m)}, got.Attachments)
	up := newAttachment("c", alice.ID, at(6))
	got = h.update(m.ID, driver.MessageChange{NewAttachment: &up, UpdatedAt: at(6)})
	require.Len(t, got.Attachments, 3)
	assert.Equal(t, linked(up, m), got.Attachments[2])

	for _, a := range []messaging.Attachment{sent, later, up} {
		assert.Equal(t, "c", h.getAttachment(a.ID).ConversationID, "attachment %s", a.ID)
	}
	listed, _, err := h.s.ListAttachments(h.ctx, driver.AttachmentQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 10}})
	require.NoError(t, err)
	assert.Len(t, listed, 3, "the conversation lists its replies' attachments")
}

// testThreadSearch: a search narrowed to a conversation finds its replies,
// and not those of a conversation whose id differs by a wildcard of LIKE.
func testThreadSearch(t *testing.T, h *harness) {
	h.threads()
	alice := h.contact("alice")
	root := h.message("a_b", alice, at(1))
	r := newMessage("a_b", alice, at(2))
	r.Text, r.ParentID = "harbour at noon", root.ID
	require.NoError(t, h.s.CreateMessage(h.ctx, r, nil, nil))
	other := h.message("axb", alice, at(3))
	o := newMessage("axb", alice, at(4))
	o.Text, o.ParentID = "harbour later", other.ID
	require.NoError(t, h.s.CreateMessage(h.ctx, o, nil, nil))
	assert.Equal(t, []string{r.ID}, h.searchIDs("harbour", driver.Scope{ConversationIDs: []string{"a_b"}}))
	assert.Equal(t, []string{o.ID, r.ID}, h.searchIDs("harbour", driver.Scope{ConversationIDs: []string{"a_b", "axb"}}))
}

// threads returns the store's ThreadStore, or skips the test.
func (h *harness) threads() driver.ThreadStore {
	h.t.Helper()
	ts, ok := h.s.(driver.ThreadStore)
	if !ok {
		h.t.Skip("the store keeps no threads (driver.ThreadStore)")
	}
	return ts
}

// reply stores a reply from sender to root, created at created.
func (h *harness) reply(root messaging.Message, sender messaging.Contact, created time.Time) messaging.Message {
	h.t.Helper()
	m := newMessage(root.ConversationID, sender, created)
	m.ParentID = root.ID
	require.NoError(h.t, h.s.CreateMessage(h.ctx, m, nil, nil), "CreateMessage of a reply")
	m.Contact = sender
	return m
}

// thread returns the thread of root as viewer sees it.
func (h *harness) thread(rootID string, viewer messaging.Contact) messaging.Thread {
	h.t.Helper()
	th, err := h.threads().GetThread(h.ctx, rootID, viewer.ID)
	require.NoError(h.t, err, "GetThread %s", rootID)
	return th
}

// replies returns the ids of every reply of root, newest first.
func (h *harness) replies(rootID string) []string {
	h.t.Helper()
	ms, more, err := h.threads().ListReplies(h.ctx, driver.ReplyQuery{RootID: rootID, Window: driver.Window{Limit: 1000}})
	require.NoError(h.t, err, "ListReplies")
	require.False(h.t, more)
	return messageIDs(ms)
}

func convMessages(h *harness, conv string) []messaging.Message {
	h.t.Helper()
	ms, _, err := h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{conv}}, Window: driver.Window{Limit: 1000}})
	require.NoError(h.t, err)
	return ms
}

func testReplyBasics(t *testing.T, h *harness) {
	h.threads()
	alice, bob := h.contact("alice"), h.contact("bob")
	root := h.message("c", alice, at(1))
	plain := h.message("c", alice, at(2))
	before := h.conv("c", bob)

	r1 := h.reply(root, bob, at(3))
	r2 := h.reply(root, alice, at(4))

	got := h.get(r1.ID)
	assert.Equal(t, root.ID, got.ParentID, "a reply carries its parent")
	assert.Zero(t, got.ReplyCount)
	ref, err := h.s.LookupMessage(h.ctx, r1.ID)
	require.NoError(t, err)
	assert.Equal(t, root.ID, ref.ParentID, "LookupMessage carries the parent")

	g := h.get(root.ID)
	assert.Empty(t, g.ParentID)
	assert.EqualValues(t, 2, g.ReplyCount)
	assert.Equal(t, at(4), g.LastReplyAt)
	assertUTC(t, g.LastReplyAt, "LastReplyAt")
	assert.Zero(t, h.get(plain.ID).ReplyCount)
	assert.True(t, h.get(plain.ID).LastReplyAt.IsZero())

	assert.Equal(t, []string{plain.ID, root.ID}, messageIDs(convMessages(h, "c")), "replies are not in the conversation's list")
	all, _, err := h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 100}})
	require.NoError(t, err)
	assert.Equal(t, []string{plain.ID, root.ID}, messageIDs(all), "nor in the list of every conversation")
	listed := convMessages(h, "c")[1]
	assert.EqualValues(t, 2, listed.ReplyCount, "a listed root carries its counts")
	assert.Equal(t, at(4), listed.LastReplyAt)

	after := h.conv("c", bob)
	assert.Equal(t, before, after, "replies change nothing of the conversation")
	assert.Equal(t, []string{r2.ID, r1.ID}, h.replies(root.ID))

	th := h.thread(root.ID, bob)
	assert.Equal(t, root.ID, th.Root.ID)
	assert.EqualValues(t, 2, th.ReplyCount)
	assert.Equal(t, at(4), th.LastReplyAt)
	assert.EqualValues(t, 1, th.UnreadCount, "alice's reply is bob's to read; his own is not")
	assert.Empty(t, th.LastReadMessageID)

	// A root without replies is a thread of none; a reply is no root.
	assert.Zero(t, h.thread(plain.ID, bob).ReplyCount)
	_, err = h.threads().GetThread(h.ctx, r1.ID, bob.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	_, err = h.threads().GetThread(h.ctx, "msg_missing", bob.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound)

	// A reply is not a read position of the conversation.
	assert.ErrorIs(t, h.s.MarkRead(h.ctx, "c", bob.ID, r2.ID, nil), messaging.ErrNotFound)
}

func testReplyParent(t *testing.T, h *harness) {
	h.threads()
	alice := h.contact("alice")
	root := h.message("c", alice, at(1))
	other := h.message("d", alice, at(2))
	r := h.reply(root, alice, at(3))
	att := h.attachment("", alice, at(4))
	for name, parent := range map[string]string{
		"a reply":                  r.ID,
		"another conversation's":   other.ID,
		"a message that is absent": newMessage("c", alice, at(5)).ID,
	} {
		m := newMessage("c", alice, at(6))
		m.ParentID = parent
		err := h.s.CreateMessage(h.ctx, m, []string{att.ID}, nil)
		assert.ErrorIs(t, err, driver.ErrNoParent, name)
		assert.ErrorIs(t, err, messaging.ErrInvalid, name)
		_, err = h.s.GetMessage(h.ctx, m.ID)
		assert.ErrorIs(t, err, messaging.ErrNotFound, "%s: nothing stored", name)
		assert.Empty(t, h.getAttachment(att.ID).MessageID, "%s: nothing linked", name)
	}
	assert.EqualValues(t, 1, h.get(root.ID).ReplyCount)
}

func testConcurrentReplies(t *testing.T, h *harness) {
	h.threads()
	const n = 100
	people := make([]messaging.Contact, 10)
	for i := range people {
		people[i] = h.contact(fmt.Sprint("p", i))
	}
	root := h.message("c", people[0], at(1))
	conv := h.conv("c", people[1])
	errs := parallel(n, func(i int) error {
		m := newMessage("c", people[i%len(people)], at(10+i))
		m.ParentID = root.ID
		return h.s.CreateMessage(h.ctx, m, nil, nil)
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	assert.EqualValues(t, n, h.get(root.ID).ReplyCount, "no reply's count lost")
	assert.Equal(t, at(10+n-1), h.get(root.ID).LastReplyAt)
	assert.Len(t, h.replies(root.ID), n)
	th := h.thread(root.ID, people[1])
	assert.EqualValues(t, n, th.ReplyCount)
	assert.EqualValues(t, n-n/len(people), th.UnreadCount, "the others' replies are unread")
	after := h.conv("c", people[1])
	require.NotNil(t, after.LastMessage)
	assert.EqualValues(t, n, after.LastMessage.ReplyCount, "its last message is the root, with its counts")
	after.LastMessage.ReplyCount, after.LastMessage.LastReplyAt = 0, time.Time{}
	assert.Equal(t, conv, after, "the conversation is otherwise unchanged")
}

// testRefusedRepliesAmongSends: replies that their roots refuse, sent at
// once with sends and replies that are taken (a store may make them in
// one transaction, or check a root after storing its reply), store
// nothing and count nothing, and the others are all stored and counted.
func testRefusedRepliesAmongSends(t *testing.T, h *harness) {
	h.threads()
	alice, bob := h.contact("alice"), h.contact("bob")
	root := h.message("c", alice, at(1))
	reply := h.reply(root, bob, at(2))
	const n = 90
	ms := make([]messaging.Message, n)
	for i := range ms {
		ms[i] = newMessage("c", []messaging.Contact{alice, bob}[i%2], at(10+i))
		switch i % 3 {
		case 1:
			ms[i].ParentID = root.ID
		case 2:
			ms[i].ParentID = []string{reply.ID, newMessage("c", alice, at(5)).ID}[i%2] // a reply, an absent message
		}
	}
	errs := parallel(n, func(i int) error { return h.s.CreateMessage(h.ctx, ms[i], nil, nil) })
	for i, m := range ms {
		_, err := h.s.GetMessage(h.ctx, m.ID)
		if i%3 == 2 {
			assert.ErrorIs(t, errs[i], driver.ErrNoParent, "%d", i)
			assert.ErrorIs(t, err, messaging.ErrNotFound, "%d: nothing stored", i)
		} else {
			assert.NoError(t, errs[i], "%d", i)
			assert.NoError(t, err, "%d: stored", i)
		}
	}
	assert.EqualValues(t, 1+n/3, h.get(root.ID).ReplyCount)
	assert.Len(t, h.replies(root.ID), 1+n/3)
	assert.EqualValues(t, 1+n/3, h.conv("c", alice).MessageCount, "the root and the sends")
	assert.EqualValues(t, 1+n/3, h.thread(root.ID, alice).ReplyCount)
}

func testThreadUnread(t *testing.T, h *harness) {
	ts := h.threads()
	alice, bob, carol := h.contact("alice"), h.contact("bob"), h.contact("carol")
	root := h.message("c", alice, at(1))
	r1 := h.reply(root, bob, at(2))
	r2 := h.reply(root, alice, at(3))
	r3 := h.reply(root, bob, at(4))

	assert.EqualValues(t, 1, h.thread(root.ID, bob).UnreadCount)
	assert.EqualValues(t, 2, h.thread(root.ID, alice).UnreadCount)
	assert.EqualValues(t, 3, h.thread(root.ID, carol).UnreadCount, "one who never read it has every reply unread")

	require.NoError(t, ts.MarkThreadRead(h.ctx, root.ID, alice.ID, r1.ID, nil))
	th := h.thread(root.ID, alice)
	assert.EqualValues(t, 1, th.UnreadCount)
	assert.Equal(t, r1.ID, th.LastReadMessageID)
	require.NoError(t, ts.MarkThreadRead(h.ctx, root.ID, alice.ID, r3.ID, nil))
	assert.Zero(t, h.thread(root.ID, alice).UnreadCount)
	require.NoError(t, ts.MarkThreadRead(h.ctx, root.ID, alice.ID, r2.ID, nil))
	assert.Equal(t, r3.ID, h.thread(root.ID, alice).LastReadMessageID, "positions never move back")
	assert.EqualValues(t, 1, h.thread(root.ID, bob).UnreadCount, "alice's reads are her own")

	// Not a reply of the thread.
	other := h.message("c", alice, at(5))
	assert.ErrorIs(t, ts.MarkThreadRead(h.ctx, root.ID, alice.ID, other.ID, nil), messaging.ErrNotFound)
	assert.ErrorIs(t, ts.MarkThreadRead(h.ctx, root.ID, alice.ID, root.ID, nil), messaging.ErrNotFound)

	// A new reply, and a deleted one, keep the counts.
	r4 := h.reply(root, bob, at(6))
	assert.EqualValues(t, 1, h.thread(root.ID, alice).UnreadCount)
	_, err := h.s.DeleteMessage(h.ctx, r4.ID, nil)
	require.NoError(t, err)
	assert.Zero(t, h.thread(root.ID, alice).UnreadCount)
	_, err = h.s.DeleteMessage(h.ctx, r1.ID, nil)
	require.NoError(t, err)
	assert.Zero(t, h.thread(root.ID, alice).UnreadCount, "deleting a read reply changes nothing unread")
	assert.EqualValues(t, 2, h.thread(root.ID, carol).UnreadCount)
	assert.EqualValues(t, 2, h.get(root.ID).ReplyCount)
	assert.Equal(t, at(4), h.get(root.ID).LastReplyAt, "the newest reply left")
}

func testConcurrentThread(t *testing.T, h *harness) {
	ts := h.threads()
	const n = 100
	people := make([]messaging.Contact, 10)
	for i := range people {
		people[i] = h.contact(fmt.Sprint("p", i))
	}
	root := h.message("c", people[0], at(0))
	var seed []messaging.Message
	for i := range 40 {
		seed = append(seed, h.reply(root, people[i%len(people)], at(1+i)))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	targets := make([]int, n)
	for i := range targets {
		targets[i] = rng.IntN(len(seed))
	}
	errs := parallel(n, func(i int) error {
		who := people[i%len(people)]
		var err error
		switch i % 3 {
		case 0:
			m := newMessage("c", who, at(100+i))
			m.ParentID = root.ID
			return h.s.CreateMessage(h.ctx, m, nil, nil)
		case 1:
			err = ts.MarkThreadRead(h.ctx, root.ID, who.ID, seed[targets[i]].ID, nil)
		default:
			_, err = h.s.DeleteMessage(h.ctx, seed[targets[i]].ID, nil)
		}
		if errorsIsNotFound(err) {
			return nil
		}
		return err
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	ms, _, err := ts.ListReplies(h.ctx, driver.ReplyQuery{RootID: root.ID, Window: driver.Window{Limit: 1000}})
	require.NoError(t, err)
	assert.EqualValues(t, len(ms), h.get(root.ID).ReplyCount)
	created := map[string]time.Time{}
	for _, m := range seed {
		created[m.ID] = m.CreatedAt
	}
	for _, p := range people {
		got := h.thread(root.ID, p)
		want := 0
		for _, m := range ms {
			if m.Contact.ID != p.ID && (got.LastReadMessageID == "" || compareItems(item{m.ID, m.CreatedAt}, item{got.LastReadMessageID, created[got.LastReadMessageID]}) > 0) {
				want++
			}
		}
		assert.EqualValues(t, want, got.UnreadCount, "%s, read through %q", p.Username, got.LastReadMessageID)
		require.NoError(t, ts.MarkThreadRead(h.ctx, root.ID, p.ID, ms[0].ID, nil))
		assert.Zero(t, h.thread(root.ID, p).UnreadCount, "%s read everything", p.Username)
	}
	h.reply(root, people[0], at(1000))
	for _, p := range people[1:] {
		assert.EqualValues(t, 1, h.thread(root.ID, p).UnreadCount)
	}
}

func testReplyPaging(t *testing.T, h *harness) {
	ts := h.threads()
	alice := h.contact("alice")
	root := h.message("c", alice, at(0))
	items := tiedItems("msg_", at(1), 25, 7)
	for _, it := range shuffled(items, 8) {
		m := newMessage("c", alice, it.at)
		m.ID, m.ParentID = it.id, root.ID
		require.NoError(t, h.s.CreateMessage(h.ctx, m, nil, nil))
	}
	h.message("c", alice, at(5)) // a message of the conversation is no reply
	want := newestFirst(items)
	page := func(after, before *driver.Cursor) ([]string, bool) {
		t.Helper()
		ms, more, err := ts.ListReplies(h.ctx, driver.ReplyQuery{RootID: root.ID, Window: driver.Window{Limit: 5, After: after, Before: before}})
		require.NoError(t, err)
		return messageIDs(ms), more
	}
	// Forward, by cursors by id alone and with their times.
	var got []string
	var after *driver.Cursor
	for {
		ids, more := page(after, nil)
		got = append(got, ids...)
		if !more {
			break
		}
		after = &driver.Cursor{ID: ids[len(ids)-1]}
		if len(got)%10 == 0 {
			after = itemOf(items, ids[len(ids)-1]).cursor()
		}
	}
	assert.Equal(t, want, got)
	// Backward: ending before the 11th oldest gives the 16th to 12th.
	oldest := slices.Clone(want)
	slices.Reverse(oldest)
	ids, more := page(nil, &driver.Cursor{ID: oldest[10]})
	assert.Equal(t, want[25-16:25-11], ids)
	assert.True(t, more)
	ids, more = page(nil, &driver.Cursor{ID: want[3]})
	assert.Equal(t, want[:3], ids)
	assert.False(t, more)
	// A cursor that is no reply of the thread.
	_, _, err := ts.ListReplies(h.ctx, driver.ReplyQuery{RootID: root.ID, Window: driver.Window{Limit: 5, After: &driver.Cursor{ID: root.ID}}})
	assert.ErrorIs(t, err, messaging.ErrNotFound)
}

func testTombstone(t *testing.T, h *harness) {
	ts := h.threads()
	alice, bob := h.contact("alice"), h.contact("bob")
	att := h.attachment("c", alice, at(0))
	root := h.message("c", alice, at(1), att.ID)
	h.update(root.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: bob.ID, Add: []string{"ok"}, At: at(2)}})
	r1 := h.reply(root, bob, at(3))
	r2 := h.reply(root, bob, at(4))
	later := h.message("c", bob, at(5))
	conv := h.conv("c", bob)

	removed, err := h.s.DeleteMessage(h.ctx, root.ID, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{att.ID}, attachmentIDs(removed), "the root's attachments go")
	_, err = h.s.GetAttachment(h.ctx, att.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound)

	g := h.get(root.ID)
	assert.True(t, g.Deleted, "a root with replies keeps its place")
	assert.Equal(t, "c", g.ConversationID)
	assert.Empty(t, g.Text)
	assert.Empty(t, g.Reactions)
	assert.Empty(t, g.Attachments)
	assert.EqualValues(t, 2, g.ReplyCount)
	assert.Equal(t, at(4), g.LastReplyAt)
	assert.Equal(t, []string{later.ID, root.ID}, messageIDs(convMessages(h, "c")), "in its place in the list")
	assert.True(t, convMessages(h, "c")[1].Deleted)
	after := h.conv("c", bob)
	assert.Equal(t, conv.MessageCount, after.MessageCount, "the tombstone keeps its place in the counts")
	assert.Equal(t, conv.UnreadCount, after.UnreadCount)
	assert.Equal(t, []string{r2.ID, r1.ID}, h.replies(root.ID), "the thread stays readable")
	assert.EqualValues(t, 2, h.thread(root.ID, bob).ReplyCount)

	// It takes no new reply, no change, and no second delete.
	m := newMessage("c", bob, at(6))
	m.ParentID = root.ID
	assert.ErrorIs(t, h.s.CreateMessage(h.ctx, m, nil, nil), driver.ErrNoParent)
	_, err = h.s.UpdateMessage(h.ctx, root.ID, driver.MessageChange{Text: ptr("again")})
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	_, err = h.s.DeleteMessage(h.ctx, root.ID, nil)
	assert.ErrorIs(t, err, messaging.ErrNotFound)

	// It goes with its last reply.
	_, err = h.s.DeleteMessage(h.ctx, r1.ID, nil)
	require.NoError(t, err)
	assert.True(t, h.get(root.ID).Deleted)
	var ch driver.Change
	_, err = h.s.DeleteMessage(h.ctx, r2.ID, func(c driver.Change) []messaging.Event { ch = c; return nil })
	require.NoError(t, err)
	assert.Equal(t, root.ID, ch.RemovedRoot, "the change names the root that went")
	assert.Equal(t, root.ID, ch.Message.ParentID, "and the reply's parent")
	_, err = h.s.GetMessage(h.ctx, root.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	_, err = ts.GetThread(h.ctx, root.ID, bob.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	assert.Equal(t, []string{later.ID}, messageIDs(convMessages(h, "c")))
	gone := h.conv("c", bob)
	assert.Equal(t, after.MessageCount-1, gone.MessageCount, "the tombstone's going takes it out of the counts")
	assert.Equal(t, after.UnreadCount-1, gone.UnreadCount, "nor is alice's root bob's to read")

	// A root without replies goes at once; so does one whose replies went.
	plain := h.message("c", alice, at(7))
	_, err = h.s.DeleteMessage(h.ctx, plain.ID, nil)
	require.NoError(t, err)
	_, err = h.s.GetMessage(h.ctx, plain.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	root2 := h.message("c", alice, at(8))
	r := h.reply(root2, bob, at(9))
	_, err = h.s.DeleteMessage(h.ctx, r.ID, nil)
	require.NoError(t, err)
	_, err = h.s.DeleteMessage(h.ctx, root2.ID, nil)
	require.NoError(t, err)
	_, err = h.s.GetMessage(h.ctx, root2.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
}

// threadIDs returns the root ids of ths.
func threadIDs(ths []messaging.Thread) []string {
	out := make([]string, len(ths))
	for i, th := range ths {
		out[i] = th.Root.ID
	}
	return out
}

func testThreadList(t *testing.T, h *harness) {
	ts := h.threads()
	alice, bob, carol := h.contact("alice"), h.contact("bob"), h.contact("carol")
	list := func(viewer messaging.Contact, w driver.Window) ([]messaging.Thread, bool) {
		t.Helper()
		ths, more, err := ts.ListThreads(h.ctx, driver.ThreadQuery{Scope: driver.Scope{All: true}, Window: w, ViewerID: viewer.ID})
		require.NoError(t, err)
		return ths, more
	}
	// alice starts 12 threads; bob replies in each, carol in the even ones.
	var roots []messaging.Message
	for i := range 12 {
		roots = append(roots, h.message("c", alice, at(i)))
	}
	h.message("c", alice, at(50)) // no replies: no thread
	var items []item
	for i, r := range roots {
		// The order of last replies is not the order of the roots.
		last := at(100 + (i*7)%12)
		h.reply(r, bob, last.Add(-time.Millisecond))
		if i%2 == 0 {
			h.reply(r, carol, last)
		} else {
			h.reply(r, bob, last)
		}
		items = append(items, item{r.ID, last})
	}
	want := newestFirst(items)
	ths, more := list(alice, driver.Window{Limit: 100})
	assert.False(t, more)
	assert.Equal(t, want, threadIDs(ths), "the root's sender takes part")
	ths, _ = list(bob, driver.Window{Limit: 100})
	assert.Equal(t, want, threadIDs(ths), "so does each who replied")
	ths, _ = list(carol, driver.Window{Limit: 100})
	var even []string
	for _, id := range want {
		if i := slices.IndexFunc(roots, func(m messaging.Message) bool { return m.ID == id }); i%2 == 0 {
			even = append(even, id)
		}
	}
	assert.Equal(t, even, threadIDs(ths))
	for _, th := range ths {
		assert.Equal(t, h.thread(th.Root.ID, carol), th, "each thread as GetThread returns it")
		assert.EqualValues(t, 1, th.UnreadCount, "bob's reply is carol's to read")
	}
	ths, _ = list(h.contact("dave"), driver.Window{Limit: 100})
	assert.Empty(t, ths, "one who took no part has no threads")

	// Keyset both ways, with cursors by root id alone.
	var got []string
	var after *driver.Cursor
	for {
		ths, more := list(bob, driver.Window{Limit: 5, After: after})
		got = append(got, threadIDs(ths)...)
		if !more {
			break
		}
		after = &driver.Cursor{ID: got[len(got)-1]}
	}
	assert.Equal(t, want, got)
	ths, more = list(bob, driver.Window{Limit: 5, Before: &driver.Cursor{ID: want[7]}})
	assert.Equal(t, want[2:7], threadIDs(ths))
	assert.True(t, more)
	_, _, err := ts.ListThreads(h.ctx, driver.ThreadQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 5, After: &driver.Cursor{ID: roots[1].ID}}, ViewerID: carol.ID})
	assert.ErrorIs(t, err, messaging.ErrNotFound, "a cursor that is not in the caller's list")

	// A new reply moves its thread first.
	h.reply(roots[3], carol, at(500))
	ths, _ = list(carol, driver.Window{Limit: 2})
	assert.Equal(t, roots[3].ID, ths[0].Root.ID, "carol takes part from her reply on")
	ths, _ = list(alice, driver.Window{Limit: 1})
	assert.Equal(t, roots[3].ID, ths[0].Root.ID)
}

// testKeyedReply: a keyed reply stores the reply and the record of its
// key together, claimed first (as the Service writes) or not; one whose
// parent takes no replies stores neither, and changes no count.
func testKeyedReply(t *testing.T, h *harness) {
	h.threads()
	alice, bob := h.contact("alice"), h.contact("bob")
	root := h.message("c", alice, at(0))
	reply := func(key string, created time.Time, parent string, claimed bool) (messaging.Message, error) {
		m := newMessage("c", bob, created)
		m.ParentID = parent
		d := unclaimed(bob.ID, key, created, m.ID)
		if claimed {
			d = done(h.mustClaim(claim(bob.ID, key, created)), m.ID)
		}
		return m, h.s.CreateMessageKeyed(h.ctx, m, nil, nil, d)
	}
	first, err := reply("claimed", at(1), root.ID, true)
	require.NoError(t, err)
	second, err := reply("unclaimed", at(2), root.ID, false)
	require.NoError(t, err)
	for key, m := range map[string]messaging.Message{"claimed": first, "unclaimed": second} {
		rec, ok := h.record(bob.ID, key)
		require.True(t, ok, "the record of %s", key)
		assert.Empty(t, rec.Lock, "done")
		assert.Equal(t, []byte(m.ID), rec.Result)
	}
	assert.Equal(t, []string{second.ID, first.ID}, h.replies(root.ID))

	for _, claimed := range []bool{true, false} {
		key := fmt.Sprintf("refused-%v", claimed)
		m, err := reply(key, at(3), first.ID, claimed) // a reply takes no replies
		assert.ErrorIs(t, err, driver.ErrNoParent)
		h.assertNoMessage(m.ID)
		rec, ok := h.record(bob.ID, key)
		if claimed {
			assert.NotEmpty(t, rec.Lock, "the claim stays a claim")
		} else {
			assert.False(t, ok, "no record")
		}
	}
	th := h.thread(root.ID, alice)
	assert.EqualValues(t, 2, th.ReplyCount)
	assert.EqualValues(t, 2, th.UnreadCount)
}

// testThreadListDeletes: a caller's list follows deletes of replies: a
// thread whose newest reply goes takes the place of the one before, one
// whose every reply goes leaves the list (its place too, as a cursor),
// and a page is full all the same.
func testThreadListDeletes(t *testing.T, h *harness) {
	ts := h.threads()
	alice, bob := h.contact("alice"), h.contact("bob")
	list := func(limit int) ([]messaging.Thread, bool) {
		t.Helper()
		ths, more, err := ts.ListThreads(h.ctx, driver.ThreadQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: limit}, ViewerID: bob.ID})
		require.NoError(t, err)
		for i, th := range ths {
			assert.Equal(t, h.thread(th.Root.ID, bob), th, "each thread as GetThread returns it")
			if i > 0 {
				assert.False(t, th.LastReplyAt.After(ths[i-1].LastReplyAt), "most recently replied first")
			}
		}
		return ths, more
	}
	r0, r1, r2 := h.message("c", alice, at(0)), h.message("c", alice, at(1)), h.message("c", alice, at(2))
	h.reply(r0, bob, at(10))
	h.reply(r1, bob, at(20))
	newest := h.reply(r1, bob, at(35))
	only := h.reply(r2, bob, at(30))
	ths, _ := list(10)
	assert.Equal(t, []string{r1.ID, r2.ID, r0.ID}, threadIDs(ths))

	_, err := h.s.DeleteMessage(h.ctx, newest.ID, nil)
	require.NoError(t, err)
	ths, _ = list(10)
	assert.Equal(t, []string{r2.ID, r1.ID, r0.ID}, threadIDs(ths), "r1's last reply is the one before")
	assert.True(t, ths[1].LastReplyAt.Equal(at(20)))

	_, err = h.s.DeleteMessage(h.ctx, only.ID, nil)
	require.NoError(t, err)
	ths, more := list(2)
	assert.Equal(t, []string{r1.ID, r0.ID}, threadIDs(ths), "a thread of no replies is no thread")
	assert.False(t, more)
	_, _, err = ts.ListThreads(h.ctx, driver.ThreadQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 5, After: &driver.Cursor{ID: r2.ID}}, ViewerID: bob.ID})
	assert.ErrorIs(t, err, messaging.ErrNotFound, "nor a cursor")

	h.reply(r2, alice, at(40))
	ths, _ = list(10)
	assert.Equal(t, []string{r2.ID, r1.ID, r0.ID}, threadIDs(ths), "a new reply brings it back")
}

func testThreadScope(t *testing.T, h *harness) {
	ts := h.threads()
	alice, bob := h.contact("alice"), h.contact("bob")
	var want []string
	for i, conv := range []string{"a", "b", "c", "d"} {
		root := h.message(conv, alice, at(i))
		h.reply(root, bob, at(10+i))
		want = append([]string{root.ID}, want...)
	}
	list := func(sc driver.Scope) []string {
		t.Helper()
		ths, _, err := ts.ListThreads(h.ctx, driver.ThreadQuery{Scope: sc, Window: driver.Window{Limit: 10}, ViewerID: bob.ID})
		require.NoError(t, err)
		return threadIDs(ths)
	}
	assert.Equal(t, want, list(driver.Scope{All: true}))
	assert.Equal(t, []string{want[1], want[3]}, list(driver.Scope{ConversationIDs: []string{"a", "c"}}))
	require.NoError(t, h.s.AddMember(h.ctx, "b", bob.ID, at(0)))
	require.NoError(t, h.s.AddMember(h.ctx, "d", bob.ID, at(0)))
	assert.Equal(t, []string{want[0], want[2], want[3]}, list(driver.Scope{ConversationIDs: []string{"a"}, MemberID: bob.ID}))
	assert.Empty(t, list(driver.Scope{ConversationIDs: []string{"x"}}))
}

func testThreadEvents(t *testing.T, h *harness) {
	ts := h.threads()
	alice, bob := h.contact("alice"), h.contact("bob")
	root := h.message("c", alice, at(1))
	var created driver.Change
	m := newMessage("c", bob, at(2))
	m.ParentID = root.ID
	require.NoError(t, h.s.CreateMessage(h.ctx, m, nil, func(c driver.Change) []messaging.Event { created = c; return nil }))
	require.NotNil(t, created.Message)
	assert.Equal(t, root.ID, created.Message.ParentID, "the created reply carries its parent")

	var read []driver.Change
	rec := func(c driver.Change) []messaging.Event {
		read = append(read, c)
		return []messaging.Event{{ID: fmt.Sprint("evt_", len(read)), Type: messaging.EventThreadRead, ConversationID: "c", AudienceID: alice.ID, Created: at(3), Thread: c.Thread}}
	}
	require.NoError(t, ts.MarkThreadRead(h.ctx, root.ID, alice.ID, m.ID, rec))
	require.Len(t, read, 1)
	require.NotNil(t, read[0].Thread)
	assert.Equal(t, h.thread(root.ID, alice), *read[0].Thread, "the thread as the reader sees it after the move")
	require.NoError(t, ts.MarkThreadRead(h.ctx, root.ID, alice.ID, m.ID, rec))
	assert.Len(t, read, 1, "no move, no event")

	evs := h.allEvents()
	require.NotEmpty(t, evs)
	last := evs[len(evs)-1]
	assert.Equal(t, messaging.EventThreadRead, last.Type)
	require.NotNil(t, last.Thread, "the outbox keeps the thread")
	assert.Equal(t, root.ID, last.Thread.Root.ID)
	assert.Equal(t, alice.ID, last.AudienceID)
	assert.Zero(t, last.Thread.UnreadCount)

	var deleted driver.Change
	_, err := h.s.DeleteMessage(h.ctx, m.ID, func(c driver.Change) []messaging.Event { deleted = c; return nil })
	require.NoError(t, err)
	assert.Equal(t, root.ID, deleted.Message.ParentID, "the deleted reply carries its parent")
	assert.Empty(t, deleted.RemovedRoot)
}

// testThreadPagingTies pages the threads of a caller whose last replies
// share their times, three by three: the list's order (last reply time,
// then root id, descending) with ties broken alike by every page, so that
// walking it either way neither repeats nor skips a thread.
func testThreadPagingTies(t *testing.T, h *harness) {
	ts := h.threads()
	alice, bob := h.contact("alice"), h.contact("bob")
	items := tiedItems("msg_", at(0), 25, 11) // root ids, last reply times
	for _, it := range shuffled(items, 12) {
		root := newMessage("c", alice, at(0))
		root.ID = it.id
		require.NoError(t, h.s.CreateMessage(h.ctx, root, nil, nil))
		h.reply(root, bob, it.at.Add(time.Hour))
	}
	for i := range items {
		items[i].at = items[i].at.Add(time.Hour)
	}
	testCursors(t, items, func(t *testing.T, limit int, after, before *driver.Cursor) ([]string, bool) {
		t.Helper()
		w := driver.Window{Limit: limit}
		// The Service's cursors name a root only.
		if after != nil {
			w.After = &driver.Cursor{ID: after.ID}
		}
		if before != nil {
			w.Before = &driver.Cursor{ID: before.ID}
		}
		ths, more, err := ts.ListThreads(h.ctx, driver.ThreadQuery{Scope: driver.Scope{All: true}, Window: w, ViewerID: alice.ID})
		require.NoError(t, err)
		return threadIDs(ths), more
	})
}

// testReplyPagingTies pages the replies of a thread whose replies share
// their times, three by three, as every list is paged.
func testReplyPagingTies(t *testing.T, h *harness) {
	ts := h.threads()
	alice := h.contact("alice")
	root := h.message("c", alice, at(0))
	items := tiedItems("msg_", at(1), 25, 13)
	for _, it := range shuffled(items, 14) {
		m := newMessage("c", alice, it.at)
		m.ID, m.ParentID = it.id, root.ID
		require.NoError(t, h.s.CreateMessage(h.ctx, m, nil, nil))
	}
	testCursors(t, items, func(t *testing.T, limit int, after, before *driver.Cursor) ([]string, bool) {
		t.Helper()
		ms, more, err := ts.ListReplies(h.ctx, driver.ReplyQuery{RootID: root.ID, Window: driver.Window{Limit: limit, After: after, Before: before}})
		require.NoError(t, err)
		return messageIDs(ms), more
	})
}

// testThreadPagingMoves walks the threads of a caller while a thread of a
// later page gets a reply: that thread moves before the cursor, and the
// walk goes on from the cursor's place without repeating or skipping any
// other thread (API.md, Lists: starting_after gives the items just older
// than the cursor's item).
func testThreadPagingMoves(t *testing.T, h *harness) {
	ts := h.threads()
	alice, bob := h.contact("alice"), h.contact("bob")
	var roots []messaging.Message
	for i := range 12 {
		r := h.message("c", alice, at(i))
		h.reply(r, bob, at(100)) // every last reply at one time
		roots = append(roots, r)
	}
	list := func(after string) ([]string, bool) {
		t.Helper()
		w := driver.Window{Limit: 4}
		if after != "" {
			w.After = &driver.Cursor{ID: after}
		}
		ths, more, err := ts.ListThreads(h.ctx, driver.ThreadQuery{Scope: driver.Scope{All: true}, Window: w, ViewerID: alice.ID})
		require.NoError(t, err)
		return threadIDs(ths), more
	}
	first, _ := list("")
	full := func() []string {
		ths, _, err := ts.ListThreads(h.ctx, driver.ThreadQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 100}, ViewerID: alice.ID})
		require.NoError(t, err)
		return threadIDs(ths)
	}
	before := full()
	require.Len(t, before, 12)
	// The thread last in the list (on the last page) and one of the
	// second page get replies: both move first.
	moved := []string{before[11], before[5]}
	for i, id := range moved {
		r := roots[slices.IndexFunc(roots, func(m messaging.Message) bool { return m.ID == id })]
		h.reply(r, bob, at(200+i))
	}
	var rest []string
	after := first[len(first)-1]
	for {
		ids, more := list(after)
		rest = append(rest, ids...)
		if !more {
			break
		}
		after = ids[len(ids)-1]
	}
	want := slices.DeleteFunc(slices.Clone(before[4:]), func(id string) bool { return slices.Contains(moved, id) })
	assert.Equal(t, want, rest, "the threads after the cursor, less the two that moved before it, each once")
	others := slices.DeleteFunc(slices.Clone(before), func(id string) bool { return slices.Contains(moved, id) })
	assert.Equal(t, append([]string{moved[1], moved[0]}, others...), full(), "the moved threads lead, the others keep their order")
}

// testTombstoneRemembered: a root deleted through one Service (one
// instance) while another remembers it (the ref it keeps for writes) takes
// no write through the other either: each is ErrNotFound, as for a
// message that is not there (not ErrPermission, nor ErrInvalid for an
// attachment), and changes nothing.
func testTombstoneRemembered(t *testing.T, h *harness) {
	h.threads()
	one := svctest.New(h.t, storage{h.s}, nil, nil)
	two := svctest.New(h.t, storage{h.s}, nil, nil)
	alice, err := one.SaveContact(h.ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	bob, err := one.SaveContact(h.ctx, messaging.Contact{Username: "bob"})
	require.NoError(t, err)
	root, err := one.Create(h.ctx, alice, messaging.NewMessage{ConversationID: "general", Text: "lunch"})
	require.NoError(t, err)
	_, err = one.Create(h.ctx, bob, messaging.NewMessage{ConversationID: "general", Text: "yes", ParentID: root.ID})
	require.NoError(t, err)
	att := h.attachment("general", alice, at(0))
	for _, c := range []messaging.Contact{alice, bob} { // two remembers the root
		_, err = two.React(h.ctx, c, root.ID, "ok")
		require.NoError(t, err)
	}
	require.NoError(t, one.Delete(h.ctx, alice, root.ID))
	before, err := two.Get(h.ctx, bob, root.ID)
	require.NoError(t, err)
	require.True(t, before.Deleted, "the tombstone")

	for name, write := range map[string]func() error{
		"edit by its sender": func() error {
			_, err := two.Update(h.ctx, alice, root.ID, messaging.Update{Text: ptr("again")})
			return err
		},
		"edit by another": func() error {
			_, err := two.Update(h.ctx, bob, root.ID, messaging.Update{Text: ptr("again")})
			return err
		},
		"link a file": func() error {
			_, err := two.Update(h.ctx, alice, root.ID, messaging.Update{Attachments: []string{att.ID}})
			return err
		},
		"react":                func() error { _, err := two.React(h.ctx, bob, root.ID, "more"); return err },
		"read":                 func() error { _, err := two.Update(h.ctx, bob, root.ID, messaging.Update{Read: ptr(true)}); return err },
		"unreact":              func() error { _, err := two.Unreact(h.ctx, bob, root.ID, "ok"); return err },
		"delete by another":    func() error { return two.Delete(h.ctx, bob, root.ID) },
		"delete by its sender": func() error { return two.Delete(h.ctx, alice, root.ID) },
	} {
		err := write()
		assert.Equal(t, messaging.ErrNotFound, messaging.KindOf(err), "%s: %v", name, err)
	}
	after, err := two.Get(h.ctx, bob, root.ID)
	require.NoError(t, err)
	assert.Equal(t, before, after, "nothing changed")
	assert.Empty(t, h.getAttachment(att.ID).MessageID, "nothing linked")
}
