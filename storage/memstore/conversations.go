package memstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/parleychat/parley/messaging"
)

// conversation is the state of a stored conversation.
type conversation struct {
	id        string
	createdAt time.Time
	lastSeq   int64    // the place of the newest message ever stored
	msgs      []string // ids of its messages, oldest first
}

// member keys a contact's state in a conversation.
type member struct{ conversation, contact string }

// readPos is a read position: through the message of place seq.
type readPos struct {
	seq   int64
	msgID string
}

// conversation returns the stored conversation id, storing it, created at
// at, if it is new.
func (s *Store) conversation(id string, at time.Time) *conversation {
	c, ok := s.convs[id]
	if !ok {
		c = &conversation{id: id, createdAt: norm(at)}
		s.convs[id] = c
	}
	return c
}

// view returns c as viewer sees it.
func (s *Store) viewConversation(c *conversation, viewer string) messaging.Conversation {
	v := messaging.Conversation{ID: c.id, CreatedAt: c.createdAt, UpdatedAt: c.createdAt, MessageCount: int64(len(c.msgs))}
	if n := len(c.msgs); n > 0 {
		last := s.view(s.messages[c.msgs[n-1]])
		v.LastMessage, v.UpdatedAt = &last, last.CreatedAt
	}
	pos := s.reads[member{c.id, viewer}]
	v.LastReadMessageID = pos.msgID
	for i := len(c.msgs) - 1; i >= 0 && s.seq[c.msgs[i]] > pos.seq; i-- {
		if s.messages[c.msgs[i]].Contact.ID != viewer {
			v.UnreadCount++
		}
	}
	return v
}

// isMember reports whether contact ("" for none) is a member of conv.
func (s *Store) isMember(conv, contact string) bool {
	if contact == "" {
		return false
	}
	_, ok := s.members[member{conv, contact}]
	return ok
}

// GetConversation returns the conversation as viewerID sees it, or an
// error matching messaging.ErrNotFound.
func (s *Store) GetConversation(ctx context.Context, id, viewerID string) (messaging.Conversation, error) {
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
func (s *Store) ListConversations(ctx context.Context, q messaging.ConversationQuery) ([]messaging.Conversation, bool, error) {
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
	pos := func(c messaging.Conversation) messaging.Cursor { return messaging.Cursor{Time: c.UpdatedAt, ID: c.ID} }
	sortNewestFirst(all, pos)
	return page(all, pos, q.Limit, q.After, q.Before)
}

// MarkRead moves contactID's read position forward to messageID.
func (s *Store) MarkRead(ctx context.Context, conversationID, contactID, messageID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[messageID]
	if !ok || m.ConversationID != conversationID {
		return notFound("message", messageID)
	}
	k := member{conversationID, contactID}
	if seq := s.seq[messageID]; seq > s.reads[k].seq {
		s.reads[k] = readPos{seq: seq, msgID: messageID}
	}
	return nil
}

// AddMember records the membership, keeping an existing one.
func (s *Store) AddMember(ctx context.Context, conversationID, contactID string, at time.Time) error {
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
func (s *Store) RemoveMember(ctx context.Context, conversationID, contactID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.members, member{conversationID, contactID})
	return nil
}

// IsMember reports whether the contact is a member of the conversation.
func (s *Store) IsMember(ctx context.Context, conversationID, contactID string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.members[member{conversationID, contactID}]
	return ok, nil
}

// ListMembers returns a page of the members q selects, by id.
func (s *Store) ListMembers(ctx context.Context, q messaging.MemberQuery) ([]messaging.Member, bool, error) {
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
		if key(m) > q.After {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b messaging.Member) int { return cmp.Compare(key(a), key(b)) })
	if len(out) > q.Limit {
		return out[:q.Limit], true, nil
	}
	return out, false, nil
}
