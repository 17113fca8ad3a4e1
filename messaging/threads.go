package messaging

import (
	"context"
	"errors"
	"iter"
	"strconv"

	"github.com/parleychat/parley/internal/check"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/internal/paging"
	"github.com/parleychat/parley/messaging/driver"
)

// Thread is a root message's replies as one caller sees them, with the
// caller's own unread count and read position.
type Thread = driver.Thread

// EventThreadRead is the event of a caller's read position in a thread
// that moved (Event.Thread); its audience is that caller.
const EventThreadRead = driver.EventThreadRead

// threads returns the storage's ThreadStore, or ErrUnimplemented.
func (s *Service) threads() (driver.ThreadStore, error) {
	ts, ok := s.repo.(driver.ThreadStore)
	if !ok {
		return nil, &Error{Kind: ErrUnimplemented, Message: "this storage keeps no threads"}
	}
	return ts, nil
}

// noParent is the error of a reply whose parent takes no reply.
func noParent(id string, err error) error {
	return &Error{Kind: ErrInvalid, Code: CodeInvalid, Param: "parent_id",
		Message: "parent_id must name a message of the conversation that is neither a reply nor deleted: " + id, Err: err}
}

// checkParent checks what it can of the parent of a new message, if any,
// without reading it: that the store takes replies and that it is a
// message id. The store checks the rest as it stores the reply, in its
// transaction (driver.ErrNoParent: a root of the reply's conversation,
// which the caller may view, that is neither a reply nor deleted); a read
// of the root here cost a SQLite reply a sixth of its CPU.
func (s *Service) checkParent(in NewMessage) error {
	if in.ParentID == "" {
		return nil
	}
	if _, err := s.threads(); err != nil {
		return err
	}
	if !ids.Valid(ids.Message, in.ParentID) {
		return noParent(in.ParentID, nil)
	}
	return nil
}

// root returns the thread store and the root rootID if the caller may see
// it, else ErrNotFound (a reply is no root).
func (s *Service) root(ctx context.Context, caller Contact, rootID string) (driver.ThreadStore, driver.MessageRef, error) {
	ts, err := s.threads()
	if err != nil {
		return nil, driver.MessageRef{}, err
	}
	m, err := s.lookup(ctx, caller, rootID)
	if err != nil {
		return nil, driver.MessageRef{}, err
	}
	if m.ParentID != "" {
		return nil, driver.MessageRef{}, noThread(rootID)
	}
	return ts, m, nil
}

func noThread(id string) error {
	return &Error{Kind: ErrNotFound, Message: "no such thread: " + id}
}

// Replies returns a page of the replies of the root rootID, newest first,
// with keyset paging over reply ids. Errors: ErrNotFound for a root the
// caller may not see, or a message that is a reply; ErrInvalid for a bad
// limit or cursor (an id that is no reply of the thread);
// ErrUnimplemented on a storage without threads.
func (s *Service) Replies(ctx context.Context, caller Contact, rootID string, o ListOptions) (Page[Message], error) {
	p, err := s.replies(ctx, caller, rootID, o)
	return p, wrapErr("messaging.Replies "+strconv.Quote(rootID), err)
}

func (s *Service) replies(ctx context.Context, caller Contact, rootID string, o ListOptions) (Page[Message], error) {
	limit, err := check.Limit(o.Limit, s.opts.MaxListLimit)
	if err != nil {
		return Page[Message]{}, err
	}
	ts, _, err := s.root(ctx, caller, rootID)
	if err != nil {
		return Page[Message]{}, err
	}
	q := driver.ReplyQuery{RootID: rootID, Window: driver.Window{Limit: limit}}
	q.After, q.Before, err = check.Cursors(o.StartingAfter, o.EndingBefore, func(id string) (driver.Cursor, bool, error) {
		return driver.Cursor{ID: id}, ids.Valid(ids.Message, id), nil
	})
	if err != nil {
		return Page[Message]{}, err
	}
	items, more, err := ts.ListReplies(ctx, q)
	return listPage(items, more, err, q.After, q.Before)
}

// AllReplies returns an iterator over the replies of the root rootID,
// newest first, read page by page (o.Limit a page; 0 for the largest),
// from the newest or from just older than o.StartingAfter. It yields the
// first error and stops.
func (s *Service) AllReplies(ctx context.Context, caller Contact, rootID string, o ListOptions) iter.Seq2[Message, error] {
	return paging.All("messaging.AllReplies", o, s.opts.MaxListLimit,
		func(o ListOptions) (Page[Message], error) { return s.Replies(ctx, caller, rootID, o) },
		func(m Message) string { return m.ID })
}

// Threads returns a page of the threads the caller takes part in (whose
// root it sent, or in which it replied) that have replies, in the
// conversations it may see, most recently replied first (LastReplyAt,
// then the root's conversation and id, descending; cursors are root ids), each with the
// caller's own unread count. A page costs the same whatever the number of
// the caller's threads and of their replies. Errors: ErrInvalid for a bad
// limit or cursor (a root id that is not in the list); ErrUnimplemented on
// a storage without threads.
func (s *Service) Threads(ctx context.Context, caller Contact, o ListOptions) (Page[Thread], error) {
	p, err := s.threadList(ctx, caller, o)
	return p, wrapErr("messaging.Threads", err)
}

func (s *Service) threadList(ctx context.Context, caller Contact, o ListOptions) (Page[Thread], error) {
	limit, err := check.Limit(o.Limit, s.opts.MaxListLimit)
	if err != nil {
		return Page[Thread]{}, err
	}
	ts, err := s.threads()
	if err != nil {
		return Page[Thread]{}, err
	}
	sc, err := s.policy.Scope(ctx, caller.ID)
	if err != nil {
		return Page[Thread]{}, err
	}
	q := driver.ThreadQuery{Scope: driver.Scope{All: sc.All, ConversationIDs: sc.ConversationIDs}, Window: driver.Window{Limit: limit}, ViewerID: caller.ID}
	if sc.Members {
		q.MemberID = caller.ID
	}
	// The store finds a cursor's place in the caller's list, or reports
	// that the root is not in it.
	q.After, q.Before, err = check.Cursors(o.StartingAfter, o.EndingBefore, func(id string) (driver.Cursor, bool, error) {
		return driver.Cursor{ID: id}, ids.Valid(ids.Message, id), nil
	})
	if err != nil {
		return Page[Thread]{}, err
	}
	if !q.All && q.MemberID == "" && len(q.ConversationIDs) == 0 {
		if q.After != nil {
			return Page[Thread]{}, check.UnknownCursor("starting_after", q.After.ID)
		}
		if q.Before != nil {
			return Page[Thread]{}, check.UnknownCursor("ending_before", q.Before.ID)
		}
		return Page[Thread]{Data: []Thread{}}, nil
	}
	items, more, err := ts.ListThreads(ctx, q)
	return listPage(items, more, err, q.After, q.Before)
}

// AllThreads returns an iterator over the threads the caller takes part
// in, most recently replied first, read page by page (o.Limit a page; 0
// for the largest), from the first or from just after o.StartingAfter. It
// yields the first error and stops.
func (s *Service) AllThreads(ctx context.Context, caller Contact, o ListOptions) iter.Seq2[Thread, error] {
	return paging.All("messaging.AllThreads", o, s.opts.MaxListLimit,
		func(o ListOptions) (Page[Thread], error) { return s.Threads(ctx, caller, o) },
		func(t Thread) string { return t.Root.ID })
}

// Thread returns the thread of the root rootID as the caller sees it: any
// caller who may see the root may read its thread (a root without
// replies is a thread of none). Errors: ErrNotFound for a root the caller
// may not see, or a message that is a reply; ErrUnimplemented on a
// storage without threads.
func (s *Service) Thread(ctx context.Context, caller Contact, rootID string) (Thread, error) {
	t, err := s.thread(ctx, caller, rootID)
	return t, wrapErr("messaging.Thread "+strconv.Quote(rootID), err)
}

func (s *Service) thread(ctx context.Context, caller Contact, rootID string) (Thread, error) {
	ts, _, err := s.root(ctx, caller, rootID)
	if err != nil {
		return Thread{}, err
	}
	t, err := ts.GetThread(ctx, rootID, caller.ID)
	if errors.Is(err, ErrNotFound) {
		return Thread{}, noThread(rootID)
	}
	return t, err
}

// MarkThreadRead moves the caller's read position in the thread of rootID
// forward to replyID, a reply of that thread, and returns the thread as
// the caller now sees it; a reply older than the position changes nothing.
// When the position moves, a thread.read event goes to the caller alone.
// Errors: ErrNotFound for a root the caller may not see; ErrInvalid (Param
// "read_through") for an id that is no reply of the thread;
// ErrUnimplemented on a storage without threads.
func (s *Service) MarkThreadRead(ctx context.Context, caller Contact, rootID, replyID string) (Thread, error) {
	t, err := s.markThreadRead(ctx, caller, rootID, replyID)
	return t, wrapErr("messaging.MarkThreadRead "+strconv.Quote(rootID), err)
}

func (s *Service) markThreadRead(ctx context.Context, caller Contact, rootID, replyID string) (Thread, error) {
	ts, root, err := s.root(ctx, caller, rootID)
	if err != nil {
		return Thread{}, err
	}
	if replyID == "" {
		return Thread{}, check.Missing("read_through")
	}
	notHere := check.BadParam("read_through", "read_through names no reply of this thread: "+replyID)
	if !ids.Valid(ids.Message, replyID) {
		return Thread{}, notHere
	}
	now := s.now()
	err = ts.MarkThreadRead(ctx, rootID, caller.ID, replyID, s.recorder(func(c driver.Change) []Event {
		e := newEvent(EventThreadRead, root.ConversationID, now)
		e.AudienceID, e.Thread = caller.ID, c.Thread
		return []Event{e}
	}))
	if errors.Is(err, ErrNotFound) {
		return Thread{}, notHere
	}
	if err != nil {
		return Thread{}, err
	}
	s.notify()
	return s.thread(ctx, caller, rootID)
}
