package storetest

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// eventTests check the outbox: the Recorder of every write (messaging.
// Repository, driver.AttachmentStore) and the reads of driver.EventStore.
var eventTests = []test{
	{"message_writes_report_what_changed", testRecordMessages},
	{"read_and_attachment_writes_report_what_changed", testRecordReadsAndFiles},
	{"events_round_trip_in_seq_order", testEventsRoundTrip},
	{"failed_writes_store_no_events", testFailedWritesRecordNothing},
	{"query_scope_audience_and_paging", testEventQueries},
	{"prune_oldest_first_never_reuse_seq", testPruneEvents},
	{"handler_cursors_and_claims", testHandlerCursors},
	{"reader_during_concurrent_writes_misses_nothing", testReaderMissesNothing},
	{"changes_of_one_message_in_commit_order", testCommitOrder},
	{"deleted_is_redacted_on_read", testDeletedIsRedacted},
	{"event_ids_are_opaque", testEventIDsAreOpaque},
}

// recorder is a Recorder for tests: it remembers the Changes it was given
// and makes one event of type typ per call, carrying what changed.
type recorder struct {
	mu       sync.Mutex
	typ      messaging.EventType
	created  time.Time
	audience string // the AudienceID of a conversation event
	changes  []driver.Change
	calls    atomic.Int64
}

func newRecorder(typ messaging.EventType, created time.Time) *recorder {
	return &recorder{typ: typ, created: created}
}

func (r *recorder) record(c driver.Change) []messaging.Event {
	r.calls.Add(1)
	r.mu.Lock()
	r.changes = append(r.changes, c)
	r.mu.Unlock()
	e := messaging.Event{ID: ids.NewAt(ids.Event, r.created), Type: r.typ, Created: r.created}
	switch {
	case c.Conversation != nil:
		e.ConversationID, e.Conversation, e.AudienceID = c.Conversation.ID, c.Conversation, r.audience
	case len(c.Removed) > 0:
		e.ConversationID, e.DeletedID = c.Removed[0].ConversationID, c.Removed[0].ID
		if e.ConversationID == "" {
			e.AudienceID = c.Removed[0].UploaderID
		}
	case len(c.Attachments) > 0:
		a := c.Attachments[0]
		e.ConversationID, e.Attachment = a.ConversationID, &a
		if e.ConversationID == "" {
			e.AudienceID = a.UploaderID
		}
	case c.Message != nil:
		e.ConversationID, e.Message = c.Message.ConversationID, c.Message
	}
	return []messaging.Event{e}
}

// last returns the Change of the last call, which must have been made.
func (r *recorder) last(t *testing.T) driver.Change {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NotEmpty(t, r.changes, "the write must call its Recorder")
	return r.changes[len(r.changes)-1]
}

// allEvents returns every stored event, oldest first.
func (h *harness) allEvents() []messaging.Event {
	h.t.Helper()
	evs, err := h.s.ReadEvents(h.ctx, driver.EventQuery{Scope: driver.Scope{All: true}, Unfiled: true, Limit: 10_000})
	require.NoError(h.t, err, "ReadEvents")
	return evs
}

// eventTypes returns the types of evs.
func eventTypes(evs []messaging.Event) []messaging.EventType {
	out := make([]messaging.EventType, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func eventIDs(evs []messaging.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func testRecordMessages(t *testing.T, h *harness) {
	alice := h.contact("alice")
	h.reactors("bob")
	atts := []messaging.Attachment{h.attachment("c", alice, at(1)), h.attachment("", alice, at(2))}

	// CreateMessage: the message as stored, with its attachments linked.
	m := newMessage("c", alice, at(3))
	m.Contact = alice // the Service passes the sender as it knows it
	rec := newRecorder(messaging.EventMessageCreated, at(3))
	require.NoError(t, h.s.CreateMessage(h.ctx, m, []string{atts[0].ID, atts[1].ID}, rec.record))
	c := rec.last(t)
	require.NotNil(t, c.Message, "CreateMessage reports the message")
	assertMessage(t, h.get(m.ID), *c.Message, "the message as GetMessage returns it after the commit")

	// UpdateMessage: the message after the change, as it returns it.
	rec = newRecorder(messaging.EventMessageUpdated, at(4))
	got, err := h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{Reactions: h.adds("bob", "👍"), UpdatedAt: at(4), Record: rec.record})
	require.NoError(t, err)
	require.NotNil(t, rec.last(t).Message)
	assertMessage(t, got, *rec.last(t).Message)
	assertMessage(t, h.get(m.ID), *rec.last(t).Message)

	// DeleteAttachment of a linked attachment: the row, and its message
	// without it.
	rec = newRecorder(messaging.EventAttachmentDeleted, at(5))
	_, err = h.s.DeleteAttachment(h.ctx, atts[0].ID, rec.record)
	require.NoError(t, err)
	c = rec.last(t)
	assert.Equal(t, []messaging.Attachment{linked(atts[0], m)}, c.Removed)
	require.NotNil(t, c.Message, "DeleteAttachment of a linked attachment reports its message")
	assertMessage(t, h.get(m.ID), *c.Message)
	assert.Len(t, c.Message.Attachments, 1)

	// DeleteMessage: the message's ids and its removed attachments.
	rec = newRecorder(messaging.EventMessageDeleted, at(6))
	_, err = h.s.DeleteMessage(h.ctx, m.ID, rec.record)
	require.NoError(t, err)
	c = rec.last(t)
	require.NotNil(t, c.Message)
	assert.Equal(t, m.ID, c.Message.ID)
	assert.Equal(t, "c", c.Message.ConversationID)
	assert.Equal(t, alice.ID, c.Message.Contact.ID)
	assert.Equal(t, []messaging.Attachment{linked(atts[1], m)}, c.Removed)

	assert.Equal(t, []messaging.EventType{
		messaging.EventMessageCreated, messaging.EventMessageUpdated, messaging.EventAttachmentDeleted, messaging.EventMessageDeleted,
	}, eventTypes(h.allEvents()), "every write stored its Recorder's events, in order")
}

func testRecordReadsAndFiles(t *testing.T, h *harness) {
	alice, bob := h.contact("alice"), h.contact("bob")
	m1 := h.message("c", alice, at(1))
	m2 := h.message("c", alice, at(2))

	// MarkRead: the conversation as the reader sees it after the move;
	// no call when the position does not move.
	rec := newRecorder(messaging.EventConversationRead, at(3))
	require.NoError(t, h.s.MarkRead(h.ctx, "c", bob.ID, m2.ID, rec.record))
	c := rec.last(t)
	require.NotNil(t, c.Conversation, "MarkRead reports the conversation")
	assert.Equal(t, h.conv("c", bob), *c.Conversation)
	assert.Equal(t, m2.ID, c.Conversation.LastReadMessageID)
	assert.Zero(t, c.Conversation.UnreadCount)
	rec = newRecorder(messaging.EventConversationRead, at(4))
	require.NoError(t, h.s.MarkRead(h.ctx, "c", bob.ID, m1.ID, rec.record))
	assert.Zero(t, rec.calls.Load(), "a position that does not move records nothing")

	// CreateAttachment and RenameAttachment: the row as stored.
	for _, conv := range []string{"", "c"} {
		a := newAttachment(conv, alice.ID, at(5))
		rec = newRecorder(messaging.EventAttachmentCreated, at(5))
		require.NoError(t, h.s.CreateAttachment(h.ctx, a, rec.record))
		assert.Equal(t, []messaging.Attachment{h.getAttachment(a.ID)}, rec.last(t).Attachments, "conversation %q", conv)

		rec = newRecorder(messaging.EventAttachmentUpdated, at(6))
		renamed, err := h.s.RenameAttachment(h.ctx, a.ID, "renamed.txt", rec.record)
		require.NoError(t, err)
		assert.Equal(t, []messaging.Attachment{renamed}, rec.last(t).Attachments)
		assert.Equal(t, "renamed.txt", rec.last(t).Attachments[0].Filename)

		// An unlinked attachment's delete reports no message.
		rec = newRecorder(messaging.EventAttachmentDeleted, at(7))
		_, err = h.s.DeleteAttachment(h.ctx, a.ID, rec.record)
		require.NoError(t, err)
		assert.Equal(t, []messaging.Attachment{renamed}, rec.last(t).Removed)
		assert.Nil(t, rec.last(t).Message)
	}
	assert.Len(t, h.allEvents(), 7)
}

func testEventsRoundTrip(t *testing.T, h *harness) {
	alice := h.contact("alice")
	a := h.attachment("c", alice, at(1))
	m := newMessage("c", alice, at(2))
	m.Contact = alice
	m.Text = "ünïcödé 👍 \"quoted\" <b>\n"
	rec := newRecorder(messaging.EventMessageCreated, at(2))
	require.NoError(t, h.s.CreateMessage(h.ctx, m, []string{a.ID}, rec.record))
	// An event of each kind of object, and one with an audience.
	read := newRecorder(messaging.EventConversationRead, at(3))
	require.NoError(t, h.s.MarkRead(h.ctx, "c", alice.ID, m.ID, read.record))
	file := newRecorder(messaging.EventAttachmentCreated, at(4))
	u := newAttachment("", alice.ID, at(4))
	require.NoError(t, h.s.CreateAttachment(h.ctx, u, file.record))
	gone := newRecorder(messaging.EventAttachmentDeleted, at(5))
	_, err := h.s.DeleteAttachment(h.ctx, u.ID, gone.record)
	require.NoError(t, err)

	got := h.allEvents()
	require.Len(t, got, 4)
	for i := 1; i < len(got); i++ {
		assert.Greater(t, got[i].Seq, got[i-1].Seq, "Seq grows with each event")
	}
	assert.Positive(t, got[0].Seq)
	for _, e := range got {
		assertUTC(t, e.Created, "Created")
	}
	want := func(r *recorder) messaging.Event { return r.record(r.last(t))[0] }
	wm := want(rec)
	assert.Equal(t, messaging.EventMessageCreated, got[0].Type)
	assert.Equal(t, "c", got[0].ConversationID)
	assert.Equal(t, at(2), got[0].Created)
	require.NotNil(t, got[0].Message)
	assertMessage(t, *wm.Message, *got[0].Message, "the message round-trips")
	assert.Nil(t, got[0].Attachment)
	assert.Nil(t, got[0].Conversation)

	require.NotNil(t, got[1].Conversation)
	assert.Equal(t, *want(read).Conversation, *got[1].Conversation)
	require.NotNil(t, got[1].Conversation.LastMessage)

	assert.Equal(t, alice.ID, got[2].AudienceID)
	assert.Equal(t, "", got[2].ConversationID)
	require.NotNil(t, got[2].Attachment)
	assert.Equal(t, u, *got[2].Attachment)
	assert.Equal(t, u.ID, got[3].DeletedID)

	// GetEvent and LastEvent return the stored event with its Seq.
	for _, e := range got {
		g, err := h.s.GetEvent(h.ctx, e.ID)
		require.NoError(t, err)
		assert.Equal(t, e, g)
	}
	last, err := h.s.LastEvent(h.ctx)
	require.NoError(t, err)
	assert.Equal(t, got[3], last)
	_, err = h.s.GetEvent(h.ctx, ids.NewAt(ids.Event, at(0)))
	assert.ErrorIs(t, err, messaging.ErrNotFound)
}

func testFailedWritesRecordNothing(t *testing.T, h *harness) {
	alice := h.contact("alice")
	_, err := h.s.LastEvent(h.ctx)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "an empty outbox has no last event")

	a := h.attachment("c", alice, at(1))
	m := h.message("c", alice, at(2), a.ID)
	rec := newRecorder(messaging.EventMessageCreated, at(3))

	// A link that conflicts.
	err = h.s.CreateMessage(h.ctx, newMessage("c", alice, at(3)), []string{a.ID}, rec.record)
	assert.ErrorIs(t, err, messaging.ErrConflict)
	// A Check that refuses.
	_, err = h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{
		Reactions: h.adds("alice", "x"),
		Check:     func(before, after driver.MessageCounts) error { return messaging.ErrInvalid },
		Record:    rec.record,
	})
	assert.ErrorIs(t, err, messaging.ErrInvalid)
	// Writes of what does not exist.
	missing := ids.NewAt(ids.Message, at(0))
	_, err = h.s.UpdateMessage(h.ctx, missing, driver.MessageChange{Text: new(string), Record: rec.record})
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	_, err = h.s.DeleteMessage(h.ctx, missing, rec.record)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	assert.ErrorIs(t, h.s.MarkRead(h.ctx, "c", alice.ID, missing, rec.record), messaging.ErrNotFound)
	noAtt := ids.NewAt(ids.Attachment, at(0))
	_, err = h.s.RenameAttachment(h.ctx, noAtt, "x.txt", rec.record)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	_, err = h.s.DeleteAttachment(h.ctx, noAtt, rec.record)
	assert.ErrorIs(t, err, messaging.ErrNotFound)

	assert.Empty(t, h.allEvents(), "a write that fails stores no event")
	_, err = h.s.LastEvent(h.ctx)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
}

func testEventQueries(t *testing.T, h *harness) {
	alice, bob := h.contact("alice"), h.contact("bob")
	require.NoError(t, h.s.AddMember(h.ctx, "b", bob.ID, at(0)))
	var all []messaging.Event
	send := func(conv string, sec int) {
		t.Helper()
		rec := newRecorder(messaging.EventMessageCreated, at(sec))
		require.NoError(t, h.s.CreateMessage(h.ctx, newMessage(conv, alice, at(sec)), nil, rec.record))
	}
	send("a", 1)
	send("b", 2)
	ma := h.message("a", alice, at(3))
	read := newRecorder(messaging.EventConversationRead, at(4))
	read.audience = bob.ID
	require.NoError(t, h.s.MarkRead(h.ctx, "a", bob.ID, ma.ID, read.record))
	file := newRecorder(messaging.EventAttachmentCreated, at(5))
	require.NoError(t, h.s.CreateAttachment(h.ctx, newAttachment("", alice.ID, at(5)), file.record)) // no conversation, audience alice
	send("c", 6)
	all = h.allEvents()
	require.Len(t, all, 5)
	aEv, bEv, readEv, fileEv, cEv := all[0], all[1], all[2], all[3], all[4]

	for _, tc := range []struct {
		name string
		q    driver.EventQuery
		want []messaging.Event
	}{
		{"everything", driver.EventQuery{Scope: driver.Scope{All: true}, Unfiled: true}, all},
		{"every_conversation", driver.EventQuery{Scope: driver.Scope{All: true}}, []messaging.Event{aEv, bEv, readEv, cEv}},
		{"one_conversation", driver.EventQuery{Scope: driver.Scope{ConversationIDs: []string{"a"}}}, []messaging.Event{aEv, readEv}},
		{"conversations", driver.EventQuery{Scope: driver.Scope{ConversationIDs: []string{"c", "a"}}}, []messaging.Event{aEv, readEv, cEv}},
		{"memberships", driver.EventQuery{Scope: driver.Scope{MemberID: bob.ID}}, []messaging.Event{bEv}},
		{"memberships_and_ids", driver.EventQuery{Scope: driver.Scope{MemberID: bob.ID, ConversationIDs: []string{"c"}}}, []messaging.Event{bEv, cEv}},
		{"unfiled_only", driver.EventQuery{Unfiled: true}, []messaging.Event{fileEv}},
		{"viewer_alice", driver.EventQuery{Scope: driver.Scope{All: true}, Unfiled: true, ViewerID: alice.ID}, []messaging.Event{aEv, bEv, fileEv, cEv}},
		{"viewer_bob", driver.EventQuery{Scope: driver.Scope{All: true}, Unfiled: true, ViewerID: bob.ID}, []messaging.Event{aEv, bEv, readEv, cEv}},
		{"viewer_bob_one_conversation", driver.EventQuery{Scope: driver.Scope{ConversationIDs: []string{"a"}}, ViewerID: bob.ID}, []messaging.Event{aEv, readEv}},
		{"nothing_selected", driver.EventQuery{ViewerID: bob.ID}, nil},
		{"after", driver.EventQuery{Scope: driver.Scope{All: true}, Unfiled: true, After: bEv.Seq}, []messaging.Event{readEv, fileEv, cEv}},
		{"before", driver.EventQuery{Scope: driver.Scope{All: true}, Unfiled: true, Before: readEv.Seq}, []messaging.Event{aEv, bEv}},
		{"between", driver.EventQuery{Scope: driver.Scope{All: true}, Unfiled: true, After: aEv.Seq, Before: cEv.Seq}, []messaging.Event{bEv, readEv, fileEv}},
		{"limit", driver.EventQuery{Scope: driver.Scope{All: true}, Unfiled: true, Limit: 2}, []messaging.Event{aEv, bEv}},
		{"newest", driver.EventQuery{Scope: driver.Scope{All: true}, Unfiled: true, Newest: true, Limit: 2}, []messaging.Event{cEv, fileEv}},
		{"newest_before", driver.EventQuery{Scope: driver.Scope{All: true}, Unfiled: true, Newest: true, Before: fileEv.Seq, Limit: 2}, []messaging.Event{readEv, bEv}},
		{"newest_filtered", driver.EventQuery{Scope: driver.Scope{ConversationIDs: []string{"a"}}, Newest: true}, []messaging.Event{readEv, aEv}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.q.Limit == 0 {
				tc.q.Limit = 100
			}
			got, err := h.s.ReadEvents(h.ctx, tc.q)
			require.NoError(t, err)
			assert.Equal(t, eventIDs(tc.want), eventIDs(got))
		})
	}
	_, err := h.s.ReadEvents(h.ctx, driver.EventQuery{Scope: driver.Scope{All: true}})
	assert.ErrorIs(t, err, messaging.ErrInvalid, "a Limit below 1")
}

func testPruneEvents(t *testing.T, h *harness) {
	alice := h.contact("alice")
	for i := range 5 {
		rec := newRecorder(messaging.EventMessageCreated, at(10*i))
		require.NoError(t, h.s.CreateMessage(h.ctx, newMessage("c", alice, at(i)), nil, rec.record))
	}
	before := h.allEvents()
	require.Len(t, before, 5)

	n, err := h.s.PruneEvents(h.ctx, at(0))
	require.NoError(t, err)
	assert.Zero(t, n, "nothing is older than the first")
	n, err = h.s.PruneEvents(h.ctx, at(25))
	require.NoError(t, err)
	assert.Equal(t, 3, n, "the events created before the time, oldest first")
	assert.Equal(t, eventIDs(before[3:]), eventIDs(h.allEvents()))
	_, err = h.s.GetEvent(h.ctx, before[0].ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "a pruned event is gone")

	n, err = h.s.PruneEvents(h.ctx, at(100))
	require.NoError(t, err)
	left := h.allEvents()
	if len(left) == 1 {
		// A store may keep its newest event.
		assert.Equal(t, 1, n)
		assert.Equal(t, before[4].ID, left[0].ID, "only the newest may be kept")
	} else {
		assert.Equal(t, 2, n)
		assert.Empty(t, left)
		_, err = h.s.LastEvent(h.ctx)
		assert.ErrorIs(t, err, messaging.ErrNotFound)
	}

	// Seqs are never given again, also once every event is gone.
	rec := newRecorder(messaging.EventMessageCreated, at(200))
	require.NoError(t, h.s.CreateMessage(h.ctx, newMessage("c", alice, at(200)), nil, rec.record))
	after := h.allEvents()[len(left):]
	require.Len(t, after, 1)
	assert.Greater(t, after[0].Seq, before[4].Seq)
	got, err := h.s.ReadEvents(h.ctx, driver.EventQuery{Scope: driver.Scope{All: true}, After: before[4].Seq, Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, eventIDs(after), eventIDs(got), "a reader that read up to the last Seq before the prune finds the new event")
}

func testHandlerCursors(t *testing.T, h *harness) {
	now := at(0)
	seq, ok, err := h.s.ClaimCursor(h.ctx, "index", "one", 7, now, now.Add(time.Minute))
	require.NoError(t, err)
	assert.True(t, ok, "a new position is claimed")
	assert.EqualValues(t, 7, seq, "a new position starts at start")

	seq, ok, err = h.s.ClaimCursor(h.ctx, "index", "two", 99, now.Add(time.Second), now.Add(time.Minute))
	require.NoError(t, err)
	assert.False(t, ok, "another owner cannot claim it before the claim expires")
	assert.EqualValues(t, 7, seq)

	require.NoError(t, h.s.SaveCursor(h.ctx, "index", "one", 12, now.Add(2*time.Minute)))
	assert.ErrorIs(t, h.s.SaveCursor(h.ctx, "index", "two", 13, now.Add(2*time.Minute)), messaging.ErrConflict,
		"an owner without the claim cannot save")

	seq, ok, err = h.s.ClaimCursor(h.ctx, "index", "one", 0, now.Add(time.Minute), now.Add(3*time.Minute))
	require.NoError(t, err)
	assert.True(t, ok, "the owner claims it again")
	assert.EqualValues(t, 12, seq, "the saved position")

	seq, ok, err = h.s.ClaimCursor(h.ctx, "index", "two", 0, now.Add(4*time.Minute), now.Add(5*time.Minute))
	require.NoError(t, err)
	assert.True(t, ok, "an expired claim is taken over")
	assert.EqualValues(t, 12, seq)
	assert.ErrorIs(t, h.s.SaveCursor(h.ctx, "index", "one", 20, now.Add(6*time.Minute)), messaging.ErrConflict,
		"the former owner has lost the claim")

	seq, ok, err = h.s.ClaimCursor(h.ctx, "notify", "one", 3, now, now.Add(time.Minute))
	require.NoError(t, err)
	assert.True(t, ok, "positions are by name")
	assert.EqualValues(t, 3, seq)
}

// testReaderMissesNothing reads the outbox after the last Seq it has seen
// while writers commit concurrently: it must see every event exactly once
// and in Seq order, which fails when Seqs are given in insert order but
// transactions commit in another order.
func testReaderMissesNothing(t *testing.T, h *harness) {
	const writers, each = 8, 25
	alice := h.contact("alice")
	users := make([]string, writers)
	for i := range users {
		users[i] = "user" + itoa(i)
		h.contact(users[i])
	}
	target := h.message("hot", alice, at(0))
	var done atomic.Bool
	var seen []messaging.Event
	var readErr error
	reader := make(chan struct{})
	go func() {
		defer close(reader)
		var last int64
		for {
			finished := done.Load()
			evs, err := h.s.ReadEvents(h.ctx, driver.EventQuery{Scope: driver.Scope{All: true}, Unfiled: true, After: last, Limit: 7})
			if err != nil {
				readErr = err
				return
			}
			for _, e := range evs {
				seen = append(seen, e)
				last = e.Seq
			}
			if finished && len(evs) == 0 {
				return
			}
		}
	}()
	errs := parallel(writers, func(w int) error {
		for i := range each {
			rec := newRecorder(messaging.EventMessageCreated, at(i))
			var err error
			switch i % 3 {
			case 0:
				err = h.s.CreateMessage(h.ctx, newMessage("conv"+itoa(w%3), alice, at(i)), nil, rec.record)
			case 1:
				_, err = h.s.UpdateMessage(h.ctx, target.ID, driver.MessageChange{
					Reactions: h.adds(users[w], "r"+itoa(i)), Record: rec.record})
			default:
				err = h.s.CreateAttachment(h.ctx, newAttachment("files", alice.ID, at(i)), rec.record)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, errors.Join(errs...))
	done.Store(true)
	<-reader
	require.NoError(t, readErr)
	stored := h.allEvents()
	assert.Len(t, stored, writers*each)
	assert.Equal(t, eventIDs(stored), eventIDs(seen), "the reader saw every event once, in Seq order")
	assert.True(t, slices.IsSortedFunc(seen, func(a, b messaging.Event) int { return int(a.Seq - b.Seq) }))
}

// testCommitOrder makes concurrent changes of one message: each event
// carries the message after its change, so in commit order each has one
// reactor more than the one before.
func testCommitOrder(t *testing.T, h *harness) {
	const n = 40
	alice := h.contact("alice")
	names := make([]string, n)
	for i := range names {
		names[i] = "user" + itoa(i)
		h.contact(names[i])
	}
	rec := newRecorder(messaging.EventMessageCreated, at(0))
	m := newMessage("c", alice, at(0))
	require.NoError(t, h.s.CreateMessage(h.ctx, m, nil, rec.record))
	errs := parallel(n, func(i int) error {
		rec := newRecorder(messaging.EventMessageUpdated, at(1))
		_, err := h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{Reactions: h.adds(names[i], "👍"), Record: rec.record})
		return err
	})
	require.NoError(t, errors.Join(errs...))
	evs := h.allEvents()
	require.Len(t, evs, n+1)
	assert.Equal(t, messaging.EventMessageCreated, evs[0].Type, "the creation comes first")
	for i, e := range evs[1:] {
		require.NotNil(t, e.Message)
		require.Len(t, e.Message.Reactions, 1)
		assert.Len(t, e.Message.Reactions[0].Reactors, i+1, "event %d carries the message after the %d-th change", i+1, i+1)
	}
}
