package memstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// conversation is the state of a stored conversation.
type conversation struct {
	id        string
	createdAt time.Time
	msgs      []string // ids of its messages, in the order they were stored
}

// member keys a contact's state in a conversation.
type member struct{ conversation, contact string }

// readPos is a read position: through the message at (at, msgID) of the
// list order.
type readPos struct {
	at    time.Time
	msgID string
}

// after reports whether the message m comes after the position p.
func (p readPos) after(m *messaging.Message) bool {
	return p.msgID == "" || compareCursor(msgPos(m), driver.Cursor{Time: p.at, ID: p.msgID}) > 0
}

// conversation returns the stored conversation id, storing it, created at
// at, if it is new.
func (s *store) conversation(id string, at time.Time) *conversation {
	c, ok := s.convs[id]
	if !ok {
		c = &conversation{id: id, createdAt: norm(at)}
		s.convs[id] = c
	}
	return c
}

// viewConversation returns c as viewer sees it.
func (s *store) viewConversation(c *conversation, viewer string) messaging.Conversation {
	v := messaging.Conversation{ID: c.id, CreatedAt: c.createdAt, UpdatedAt: c.createdAt, MessageCount: int64(len(c.msgs))}
	pos := s.reads[member{c.id, viewer}]
	v.LastReadMessageID = pos.msgID
	var last *messaging.Message
	for _, id := range c.msgs {
		m := s.messages[id]
		if last == nil || compareCursor(msgPos(m), msgPos(last)) > 0 {
			last = m
		}
		if m.Contact.ID != viewer && pos.after(m) {
			v.UnreadCount++
		}
	}
	if last != nil {
		lm := s.view(last)
		v.LastMessage, v.UpdatedAt = &lm, lm.CreatedAt
	}
	return v
}

// isMember reports whether contact ("" for none) is a member of conv.
func (s *store) isMember(conv, contact string) bool {
	if contact == "" {
		return false
	}
	_, ok := s.members[member{conv, contact}]
	return ok
}

// GetConversation returns the conversation as viewerID sees it, or an
// error matching messaging.ErrNotFound.
func (s *store) GetConversation(ctx context.Context, id, viewerID string) (messaging.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return messaging.Conversation{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[id]
	if !ok {
		return messaging.Conversation{}, notFound("conversation", id)
	}
	return s.viewConversation(c, viewerID), nil
}

// ListConversations returns a page of the conversations q selects, most
// recently active first.
func (s *store) ListConversations(ctx context.Context, q driver.ConversationQuery) ([]messaging.Conversation, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []messaging.Conversation
	for id, c := range s.convs {
		if q.All || slices.Contains(q.ConversationIDs, id) || s.isMember(id, q.MemberID) {
			all = append(all, s.viewConversation(c, q.ViewerID))
		}
	}
	pos := func(c messaging.Conversation) driver.Cursor { return driver.Cursor{Time: c.UpdatedAt, ID: c.ID} }
	sortNewestFirst(all, pos)
	for _, c := range []**driver.Cursor{&q.After, &q.Before} {
		if *c == nil || !(*c).Time.IsZero() {
			continue
		}
		id := (*c).ID
		i := slices.IndexFunc(all, func(c messaging.Conversation) bool { return c.ID == id })
		if i < 0 {
			return nil, false, notFound("conversation", id)
		}
		at := pos(all[i])
		*c = &at
	}
	return page(all, pos, q.Limit, q.After, q.Before)
}

// MarkRead moves contactID's read position forward to messageID.
func (s *store) MarkRead(ctx context.Context, conversationID, contactID, messageID string, rec driver.Recorder) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[messageID]
	if !ok || m.ConversationID != conversationID || m.ParentID != "" {
		return notFound("message", messageID)
	}
	k := member{conversationID, contactID}
	if s.reads[k].after(m) {
		s.reads[k] = readPos{at: m.CreatedAt, msgID: messageID}
		c := s.viewConversation(s.convs[conversationID], contactID)
		s.record(rec, driver.Change{Conversation: &c})
	}
	return nil
}

// AddMember records the membership, keeping an existing one.
func (s *store) AddMember(ctx context.Context, conversationID, contactID string, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.contacts[contactID]; !ok {
		return notFound("contact", contactID)
	}
	k := member{conversationID, contactID}
	if _, ok := s.members[k]; !ok {
		s.members[k] = norm(at)
	}
	return nil
}

// RemoveMember ends the membership.
func (s *store) RemoveMember(ctx context.Context, conversationID, contactID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.members, member{conversationID, contactID})
	return nil
}

// IsMember reports whether the contact is a member of the conversation.
func (s *store) IsMember(ctx context.Context, conversationID, contactID string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.members[member{conversationID, contactID}]
	return ok, nil
}

// ListMembers returns a page of the members q selects, by id.
func (s *store) ListMembers(ctx context.Context, q driver.MemberQuery) ([]messaging.Member, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []messaging.Member
	key := func(m messaging.Member) string { return m.ContactID }
	if q.ConversationID == "" {
		key = func(m messaging.Member) string { return m.ConversationID }
	}
	for k, at := range s.members {
		if q.ConversationID != "" && k.conversation != q.ConversationID || q.ContactID != "" && k.contact != q.ContactID {
			continue
		}
		m := messaging.Member{ConversationID: k.conversation, ContactID: k.contact, JoinedAt: at}
		if key(m) > cursorID(q.After) {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b messaging.Member) int { return cmp.Compare(key(a), key(b)) })
	if len(out) > q.Limit {
		return out[:q.Limit], true, nil
	}
	return out, false, nil
}
