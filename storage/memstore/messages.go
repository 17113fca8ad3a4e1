package memstore

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// CreateMessage stores m and links the attachments attachmentIDs to it, all
// or nothing. Errors: messaging.ErrNotFound for a missing attachment,
// messaging.ErrConflict for an attachment linked to another message or of
// another conversation, or for an existing message ID.
func (s *store) CreateMessage(ctx context.Context, m messaging.Message, attachmentIDs []string, rec driver.Recorder) error {
	return s.createMessage(ctx, m, attachmentIDs, rec, nil)
}

// createMessage is CreateMessage, storing done (the record of an
// idempotency key) when not nil.
func (s *store) createMessage(ctx context.Context, m messaging.Message, attachmentIDs []string, rec driver.Recorder, done *driver.IdempotencyRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.holds(done); err != nil {
		return err
	}
	if _, ok := s.messages[m.ID]; ok {
		return conflict("a message with the id " + strconv.Quote(m.ID) + " already exists")
	}
	if err := s.checkParent(m); err != nil {
		return err
	}
	links, err := s.checkLinks(m.ID, m.ConversationID, attachmentIDs)
	if err != nil {
		return err
	}
	stored := messaging.Message{
		ParentID:       m.ParentID,
		ID:             m.ID,
		ConversationID: m.ConversationID,
		Contact:        messaging.Contact{ID: m.Contact.ID},
		Text:           m.Text,
		ReadAt:         norm(m.ReadAt),
		CreatedAt:      norm(m.CreatedAt),
		UpdatedAt:      norm(m.UpdatedAt),
	}
	s.messages[m.ID] = &stored
	s.link(&stored, links)
	c := s.conversation(m.ConversationID, stored.CreatedAt)
	if m.ParentID != "" {
		// A reply is its thread's, not its conversation's.
		t := s.threadOf(s.messages[m.ParentID])
		t.replies = append(t.replies, m.ID)
		t.takers[m.Contact.ID] = true
	} else {
		c.msgs = append(c.msgs, m.ID)
	}
	v := s.view(&stored)
	s.record(rec, driver.Change{Message: &v})
	s.keep(done)
	return nil
}

// checkLinks returns the ids of attachmentIDs, once each, that are not yet
// linked to message msgID of conversation conv, or the error that forbids
// linking one of them.
func (s *store) checkLinks(msgID, conv string, attachmentIDs []string) ([]string, error) {
	var links []string
	for _, id := range attachmentIDs {
		a, ok := s.atts[id]
		switch {
		case !ok:
			return nil, notFound("attachment", id)
		case a.MessageID != "" && a.MessageID != msgID:
			return nil, conflict("the attachment " + strconv.Quote(id) + " is linked to another message")
		case a.ConversationID != "" && a.ConversationID != conv:
			return nil, conflict("the attachment " + strconv.Quote(id) + " belongs to another conversation")
		case a.MessageID == msgID || slices.Contains(links, id):
			// already linked, or listed twice
		default:
			links = append(links, id)
		}
	}
	return links, nil
}

// link links the attachments ids (checked by checkLinks) to m.
func (s *store) link(m *messaging.Message, ids []string) {
	for _, id := range ids {
		a := s.atts[id]
		a.MessageID, a.ConversationID = m.ID, m.ConversationID
		s.atts[id] = a
		s.linked[m.ID] = append(s.linked[m.ID], id)
	}
}

// view returns a deep copy of m as GetMessage returns it.
func (s *store) view(m *messaging.Message) messaging.Message {
	v := *m
	if c, ok := s.contacts[m.Contact.ID]; ok {
		v.Contact = c
	}
	v.Reactions = s.viewReactions(s.reacts[m.ID])
	v.Attachments = s.attachmentsOf(m.ID)
	if m.ParentID == "" {
		v.ReplyCount, v.LastReplyAt = s.replyCounts(m.ID)
	}
	return v
}

// attachmentsOf returns copies of the message's attachments, oldest first.
func (s *store) attachmentsOf(msgID string) []messaging.Attachment {
	ids := s.linked[msgID]
	out := make([]messaging.Attachment, 0, len(ids))
	for _, id := range ids {
		out = append(out, s.atts[id])
	}
	slices.SortFunc(out, func(a, b messaging.Attachment) int { return compareCursor(attPos(a), attPos(b)) })
	return out
}

// GetMessage returns the message with its contact, reactions and
// attachments, or an error matching messaging.ErrNotFound.
func (s *store) GetMessage(ctx context.Context, id string) (messaging.Message, error) {
	if err := ctx.Err(); err != nil {
		return messaging.Message{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[id]
	if !ok {
		return messaging.Message{}, notFound("message", id)
	}
	return s.view(m), nil
}

func msgPos(m *messaging.Message) driver.Cursor {
	return driver.Cursor{Time: m.CreatedAt, ID: m.ID}
}

// ListMessages returns a page of the messages q selects, newest first, and
// whether more exist in the direction of travel. A Limit below 1 is an
// error matching messaging.ErrInvalid.
func (s *store) ListMessages(ctx context.Context, q driver.MessageQuery) ([]messaging.Message, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// A cursor by id (Time zero) is a message of the one conversation.
	for _, pos := range []**driver.Cursor{&q.After, &q.Before} {
		if *pos == nil || !(*pos).Time.IsZero() {
			continue
		}
		id := (*pos).ID
		m, ok := s.messages[id]
		if !ok || len(q.ConversationIDs) != 1 || m.ConversationID != q.ConversationIDs[0] || m.ParentID != "" {
			return nil, false, notFound("message", id)
		}
		p := msgPos(m)
		*pos = &p
	}
	var all []*messaging.Message
	for _, m := range s.messages {
		if m.ParentID == "" && (q.All || slices.Contains(q.ConversationIDs, m.ConversationID) || s.isMember(m.ConversationID, q.MemberID)) {
			all = append(all, m)
		}
	}
	sortNewestFirst(all, msgPos)
	sel, more, err := page(all, msgPos, q.Limit, q.After, q.Before)
	if err != nil {
		return nil, false, err
	}
	out := make([]messaging.Message, len(sel))
	for i, m := range sel {
		out[i] = s.view(m)
	}
	return out, more, nil
}

// UpdateMessage applies ch atomically and returns the message as
// GetMessage would after it. Errors: messaging.ErrNotFound for a missing
// message or attachment, messaging.ErrConflict for an attachment linked to
// another message or of another conversation, ch.Check's error; on error
// nothing changes.
func (s *store) UpdateMessage(ctx context.Context, id string, ch driver.MessageChange) (messaging.Message, error) {
	if err := ctx.Err(); err != nil {
		return messaging.Message{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.messages[id]
	if !ok || cur.Deleted {
		return messaging.Message{}, notFound("message", id)
	}
	m := *cur
	if ch.Text != nil {
		m.Text = *ch.Text
	}
	rs := s.reactionsOf(id)
	before := driver.MessageCounts{ReactionNames: len(rs), Attachments: len(s.linked[id])}
	reactorAfter := 0
	if r := ch.Reactions; r != nil {
		if len(r.Add) > 0 {
			before.ReactorNames = ownNames(rs, r.ContactID)
			rs = addReactions(rs, r.ContactID, r.Add, norm(cmp.Or(r.At, time.Now())))
		}
		rs = removeReactor(rs, r.ContactID, r.Remove)
		if len(r.Add) > 0 {
			reactorAfter = ownNames(rs, r.ContactID)
		}
	}
	links, err := s.checkLinks(m.ID, m.ConversationID, ch.LinkAttachments)
	if err != nil {
		return messaging.Message{}, err
	}
	after := driver.MessageCounts{ReactionNames: len(rs), Attachments: before.Attachments + len(links), ReactorNames: reactorAfter}
	if a := ch.NewAttachment; a != nil {
		if err := s.reservedFor(ch.Reservation); err != nil {
			return messaging.Message{}, err
		}
		if _, ok := s.atts[a.ID]; ok {
			return messaging.Message{}, conflict("an attachment with the id " + strconv.Quote(a.ID) + " already exists")
		}
		after.Attachments++
	}
	if ch.Check != nil {
		if err := ch.Check(before, after); err != nil {
			return messaging.Message{}, err
		}
	}
	if err := s.holds(ch.Done); err != nil {
		return messaging.Message{}, err
	}
	if ch.Text != nil && ch.RevisionID != "" && *ch.Text != cur.Text {
		s.addRevision(messaging.Revision{ID: ch.RevisionID, MessageID: id, Text: cur.Text, CreatedAt: norm(ch.UpdatedAt)})
	}
	if a := ch.NewAttachment; a != nil {
		stored := *a
		stored.MessageID, stored.ConversationID, stored.CreatedAt = "", m.ConversationID, norm(a.CreatedAt)
		s.atts[a.ID] = stored
		links = append(links, a.ID)
		delete(s.reserved, ch.Reservation)
	}
	if ch.Read != nil {
		switch {
		case !*ch.Read:
			m.ReadAt = time.Time{}
		case m.ReadAt.IsZero():
			m.ReadAt = norm(ch.ReadAt)
		}
	}
	if !ch.UpdatedAt.IsZero() {
		m.UpdatedAt = norm(ch.UpdatedAt)
	}
	*cur = m
	if len(rs) > 0 {
		s.reacts[id] = rs
	} else {
		delete(s.reacts, id)
	}
	s.link(cur, links)
	out := s.view(cur)
	v := out
	s.record(ch.Record, driver.Change{Message: &v})
	s.keep(ch.Done)
	return s.view(cur), nil
}

// DeleteMessage removes the message, its reactions and its attachment rows,
// records the attachments' keys as pending deletions, and returns the
// removed attachments (oldest first), or an error matching
// messaging.ErrNotFound.
func (s *store) DeleteMessage(ctx context.Context, id string, rec driver.Recorder) ([]messaging.Attachment, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	del, ok := s.messages[id]
	if !ok || del.Deleted {
		return nil, notFound("message", id)
	}
	removed := s.attachmentsOf(id)
	for _, a := range removed {
		delete(s.atts, a.ID)
		s.pending = append(s.pending, a.Key)
	}
	delete(s.linked, id)
	c := s.convs[del.ConversationID]
	gone := messaging.Message{ID: id, ConversationID: c.id, Contact: messaging.Contact{ID: del.Contact.ID}, ParentID: del.ParentID}
	delete(s.reacts, id)
	s.removeRevisions(id)
	ch := driver.Change{Message: &gone, Removed: slices.Clone(removed)}
	switch t := s.threads[id]; {
	case t != nil && len(t.replies) > 0:
		// A root with replies keeps its place as a tombstone.
		*del = messaging.Message{ID: id, ConversationID: del.ConversationID, Contact: messaging.Contact{ID: del.Contact.ID}, CreatedAt: del.CreatedAt, Deleted: true}
	case del.ParentID != "":
		t := s.threads[del.ParentID]
		t.replies = slices.DeleteFunc(t.replies, func(x string) bool { return x == id })
		delete(s.messages, id)
		if root := s.messages[del.ParentID]; root.Deleted && len(t.replies) == 0 {
			// The tombstone goes with its last reply.
			s.removeRoot(root)
			ch.RemovedRoot = root.ID
		}
	default:
		s.removeRoot(del)
	}
	s.record(rec, ch)
	return removed, nil
}

// removeRoot removes m, a message that is not a reply, and its thread.
func (s *store) removeRoot(m *messaging.Message) {
	c := s.convs[m.ConversationID]
	c.msgs = slices.DeleteFunc(c.msgs, func(x string) bool { return x == m.ID })
	delete(s.messages, m.ID)
	delete(s.threads, m.ID)
	for k := range s.threadReads {
		if k.conversation == m.ID {
			delete(s.threadReads, k)
		}
	}
}
