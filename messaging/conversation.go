package messaging

import (
	"context"
	"errors"
	"iter"
	"strconv"
	"time"

	"github.com/parleychat/parley/internal/check"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/internal/paging"
	"github.com/parleychat/parley/messaging/driver"
)

// Conversations returns a page of the conversations the caller may see,
// most recently active first (UpdatedAt, then ID, descending), with the
// caller's own unread counts. A page costs a fixed number of queries, and
// its unread counts are counters kept by the writes, whatever the size of
// the conversations. Errors: ErrInvalid for a bad limit or cursor (an id
// that is not in the list).
func (s *Service) Conversations(ctx context.Context, caller Contact, o ListOptions) (Page[Conversation], error) {
	p, err := s.conversations(ctx, caller, o)
	return p, wrapErr("messaging.Conversations", err)
}

func (s *Service) conversations(ctx context.Context, caller Contact, o ListOptions) (Page[Conversation], error) {
	limit, err := check.Limit(o.Limit, s.opts.MaxListLimit)
	if err != nil {
		return Page[Conversation]{}, err
	}
	sc, err := s.policy.Scope(ctx, caller.ID)
	if err != nil {
		return Page[Conversation]{}, err
	}
	q := driver.ConversationQuery{Scope: driver.Scope{All: sc.All, ConversationIDs: sc.ConversationIDs}, Window: driver.Window{Limit: limit}, ViewerID: caller.ID}
	if sc.Members {
		q.MemberID = caller.ID
	}
	// The store finds a cursor's place in the caller's list, or reports
	// that the conversation is not in it, in the page's own query
	// (BENCHMARKS.md section 4, "The conversations list against a page of messages").
	q.After, q.Before, err = check.Cursors(o.StartingAfter, o.EndingBefore, func(id string) (driver.Cursor, bool, error) {
		return driver.Cursor{ID: id}, check.ConversationID("id", id) == nil, nil
	})
	if err != nil {
		return Page[Conversation]{}, err
	}
	if !q.All && q.MemberID == "" && len(q.ConversationIDs) == 0 {
		if q.After != nil {
			return Page[Conversation]{}, check.UnknownCursor("starting_after", q.After.ID)
		}
		if q.Before != nil {
			return Page[Conversation]{}, check.UnknownCursor("ending_before", q.Before.ID)
		}
		return Page[Conversation]{Data: []Conversation{}}, nil
	}
	items, more, err := s.repo.ListConversations(ctx, q)
	return listPage(items, more, err, q.After, q.Before)
}

// AllConversations returns an iterator over every conversation the caller
// may see, most recently active first, read page by page (o.Limit a page;
// 0 for the largest), from the first or from just after
// o.StartingAfter. o.EndingBefore must be empty. It yields the first error
// and stops.
func (s *Service) AllConversations(ctx context.Context, caller Contact, o ListOptions) iter.Seq2[Conversation, error] {
	return paging.All("messaging.AllConversations", o, s.opts.MaxListLimit,
		func(o ListOptions) (Page[Conversation], error) { return s.Conversations(ctx, caller, o) },
		func(c Conversation) string { return c.ID })
}

// Conversation returns one conversation as the caller sees it. Errors:
// ErrNotFound when it does not exist or the caller may not see it.
func (s *Service) Conversation(ctx context.Context, caller Contact, id string) (Conversation, error) {
	c, err := s.conversation(ctx, caller, id)
	return c, wrapErr("messaging.Conversation "+strconv.Quote(id), err)
}

func (s *Service) conversation(ctx context.Context, caller Contact, id string) (Conversation, error) {
	if check.ConversationID("id", id) != nil {
		return Conversation{}, noConversation(id)
	}
	ok, err := s.policy.CanView(ctx, caller.ID, id)
	if err != nil {
		return Conversation{}, err
	}
	if !ok {
		return Conversation{}, noConversation(id)
	}
	c, err := s.repo.GetConversation(ctx, id, caller.ID)
	if errors.Is(err, ErrNotFound) {
		return Conversation{}, noConversation(id)
	}
	return c, err
}

func noConversation(id string) error {
	return &Error{Kind: ErrNotFound, Message: "no such conversation: " + id}
}

// MarkRead moves the caller's read position in the conversation forward to
// messageID, a message of that conversation, and returns the conversation
// as the caller now sees it. A message older than the current position
// changes nothing: positions never move back. Errors: ErrNotFound for a
// conversation the caller may not see, ErrInvalid (Param "read_through")
// for a message that is not one of the conversation's.
func (s *Service) MarkRead(ctx context.Context, caller Contact, conversationID, messageID string) (Conversation, error) {
	c, err := s.markRead(ctx, caller, conversationID, messageID)
	return c, wrapErr("messaging.MarkRead "+strconv.Quote(conversationID), err)
}

func (s *Service) markRead(ctx context.Context, caller Contact, conversationID, messageID string) (Conversation, error) {
	if _, err := s.conversation(ctx, caller, conversationID); err != nil {
		return Conversation{}, err
	}
	notHere := check.BadParam("read_through", "read_through names no message of this conversation: "+messageID)
	if messageID == "" {
		return Conversation{}, check.Missing("read_through")
	}
	if !ids.Valid(ids.Message, messageID) {
		return Conversation{}, notHere
	}
	now := s.now()
	err := s.repo.MarkRead(ctx, conversationID, caller.ID, messageID, s.recorder(func(c driver.Change) []Event {
		e := newEvent(EventConversationRead, conversationID, now)
		e.AudienceID, e.Conversation = caller.ID, c.Conversation
		return []Event{e}
	}))
	if errors.Is(err, ErrNotFound) {
		return Conversation{}, notHere
	}
	if err != nil {
		return Conversation{}, err
	}
	s.notify()
	return s.conversation(ctx, caller, conversationID)
}

// AddMember makes the contact a member of the conversation (which need not
// have messages yet); adding a member again changes nothing. Membership is
// the host's to manage: these calls take no caller. Under the MembersOnly
// Policy, members are who may see a conversation. Errors: ErrInvalid for a
// bad conversation id, ErrNotFound for an unknown contact.
func (s *Service) AddMember(ctx context.Context, conversationID, contactID string) error {
	err := check.ConversationID("conversation_id", conversationID)
	if err == nil {
		done := s.memberChanged(contactID, conversationID)
		err = s.repo.AddMember(ctx, conversationID, contactID, s.now())
		done(err == nil)
	}
	if errors.Is(err, ErrNotFound) {
		err = &Error{Kind: ErrNotFound, Param: "contact_id", Message: "no such contact: " + contactID, Err: err}
	}
	return wrapErr("messaging.AddMember "+strconv.Quote(conversationID), err)
}

// typingFor is how long a typing indicator lasts unless said again.
const typingFor = 5 * time.Second

// Typing tells the others who may see the conversation, on their event
// streams (package events), that the caller is typing, for the next five
// seconds (Typing.ExpiresAt); each stream gets a caller's typing at most
// once a second. It is never stored: not in the list of past events, nor
// replayed on resume. Errors: ErrInvalid for a malformed conversation id,
// ErrNotFound for a conversation the caller may not see.
func (s *Service) Typing(ctx context.Context, caller Contact, conversationID string) (Typing, error) {
	err := check.ConversationID("conversation_id", conversationID)
	if err == nil {
		err = s.mustView(ctx, caller.ID, conversationID)
	}
	if err != nil {
		return Typing{}, wrapErr("messaging.Typing "+strconv.Quote(conversationID), err)
	}
	t := Typing{ConversationID: conversationID, Contact: caller, ExpiresAt: s.now().Add(typingFor)}
	s.typing(t)
	return t, nil
}

// RemoveMember ends the contact's membership of the conversation; its read
// position is kept. Removing one who is not a member is not an error.
func (s *Service) RemoveMember(ctx context.Context, conversationID, contactID string) error {
	err := check.ConversationID("conversation_id", conversationID)
	if err == nil {
		done := s.memberChanged(contactID, conversationID)
		err = s.repo.RemoveMember(ctx, conversationID, contactID)
		done(err == nil)
	}
	return wrapErr("messaging.RemoveMember "+strconv.Quote(conversationID), err)
}

// Members returns a page of the conversation's members, by contact id
// (o.StartingAfter a contact id). The list only goes forward. Errors:
// ErrInvalid for a bad conversation id or limit, or with o.EndingBefore.
func (s *Service) Members(ctx context.Context, conversationID string, o ListOptions) (Page[Member], error) {
	p, err := s.members(ctx, driver.MemberQuery{ConversationID: conversationID}, o)
	return p, wrapErr("messaging.Members "+strconv.Quote(conversationID), err)
}

// AllMembers returns an iterator over every member of the conversation,
// by contact id, read page by page (o.Limit a page; 0 for the largest),
// from the first or from just after o.StartingAfter. It yields the first
// error and stops.
func (s *Service) AllMembers(ctx context.Context, conversationID string, o ListOptions) iter.Seq2[Member, error] {
	return paging.All("messaging.AllMembers", o, s.opts.MaxListLimit,
		func(o ListOptions) (Page[Member], error) { return s.Members(ctx, conversationID, o) },
		func(m Member) string { return m.ContactID })
}

// Memberships returns a page of the contact's memberships, by
// conversation id (o.StartingAfter a conversation id). The list only goes
// forward. Errors: ErrInvalid for a bad limit, or with o.EndingBefore.
func (s *Service) Memberships(ctx context.Context, contactID string, o ListOptions) (Page[Member], error) {
	p, err := s.members(ctx, driver.MemberQuery{ContactID: contactID}, o)
	return p, wrapErr("messaging.Memberships "+strconv.Quote(contactID), err)
}

// AllMemberships returns an iterator over every membership of the
// contact, by conversation id, read page by page (o.Limit a page; 0 for
// the largest), from the first or from just after o.StartingAfter. It
// yields the first error and stops.
func (s *Service) AllMemberships(ctx context.Context, contactID string, o ListOptions) iter.Seq2[Member, error] {
	return paging.All("messaging.AllMemberships", o, s.opts.MaxListLimit,
		func(o ListOptions) (Page[Member], error) { return s.Memberships(ctx, contactID, o) },
		func(m Member) string { return m.ConversationID })
}

func (s *Service) members(ctx context.Context, q driver.MemberQuery, o ListOptions) (Page[Member], error) {
	limit, err := check.Limit(o.Limit, s.opts.MaxListLimit)
	if err != nil {
		return Page[Member]{}, err
	}
	if o.EndingBefore != "" {
		return Page[Member]{}, check.BadParam("ending_before", "members are listed forward only: ending_before cannot be used")
	}
	if q.ConversationID != "" {
		if err := check.ConversationID("conversation_id", q.ConversationID); err != nil {
			return Page[Member]{}, err
		}
	}
	q.Limit = limit
	if o.StartingAfter != "" {
		q.After = &driver.Cursor{ID: o.StartingAfter}
	}
	items, more, err := s.repo.ListMembers(ctx, q)
	if err != nil {
		return Page[Member]{}, err
	}
	if items == nil {
		items = []Member{}
	}
	return Page[Member]{Data: items, HasMore: more}, nil
}
