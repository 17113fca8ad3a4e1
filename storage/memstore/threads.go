package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

var _ driver.ThreadStore = (*store)(nil)

// thread is the state of a root's thread: its replies and who takes part.
// The Store counts its replies when it reads them: it is for tests, and
// its counts need only be exact.
type thread struct {
	root    string
	replies []string        // ids of its replies, in the order they were stored
	takers  map[string]bool // contact ids of those who take part
}

// threadOf returns the thread of the root, making it if it is new.
func (s *store) threadOf(root *messaging.Message) *thread {
	t, ok := s.threads[root.ID]
	if !ok {
		t = &thread{root: root.ID, takers: map[string]bool{root.Contact.ID: true}}
		s.threads[root.ID] = t
	}
	return t
}

// replyCounts returns the number of the root's replies and the time of the
// newest; the caller holds s.mu.
func (s *store) replyCounts(rootID string) (n int64, last time.Time) {
	t, ok := s.threads[rootID]
	if !ok {
		return 0, time.Time{}
	}
	for _, id := range t.replies {
		if at := s.messages[id].CreatedAt; at.After(last) {
			last = at
		}
	}
	return int64(len(t.replies)), last
}

// checkParent reports whether m's parent, if any, takes a reply.
func (s *store) checkParent(m messaging.Message) error {
	if m.ParentID == "" {
		return nil
	}
	p, ok := s.messages[m.ParentID]
	if !ok || p.ConversationID != m.ConversationID || p.ParentID != "" || p.Deleted {
		return driver.ErrNoParent
	}
	return nil
}

// viewThread returns the thread of root as viewer sees it.
func (s *store) viewThread(root *messaging.Message, viewer string) messaging.Thread {
	v := messaging.Thread{Root: s.view(root)}
	v.ReplyCount, v.LastReplyAt = v.Root.ReplyCount, v.Root.LastReplyAt
	pos := s.threadReads[member{root.ID, viewer}]
	v.LastReadMessageID = pos.msgID
	if t, ok := s.threads[root.ID]; ok {
		for _, id := range t.replies {
			if m := s.messages[id]; m.Contact.ID != viewer && pos.after(m) {
				v.UnreadCount++
			}
		}
	}
	return v
}

// GetThread returns the thread of the root as viewerID sees it.
func (s *store) GetThread(ctx context.Context, rootID, viewerID string) (messaging.Thread, error) {
	if err := ctx.Err(); err != nil {
		return messaging.Thread{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[rootID]
	if !ok || m.ParentID != "" {
		return messaging.Thread{}, notFound("thread", rootID)
	}
	return s.viewThread(m, viewerID), nil
}

// ListReplies returns a page of the root's replies, newest first.
func (s *store) ListReplies(ctx context.Context, q driver.ReplyQuery) ([]messaging.Message, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []*messaging.Message
	if t, ok := s.threads[q.RootID]; ok {
		for _, id := range t.replies {
			all = append(all, s.messages[id])
		}
	}
	for _, pos := range []**driver.Cursor{&q.After, &q.Before} {
		if *pos == nil || !(*pos).Time.IsZero() {
			continue
		}
		m, ok := s.messages[(*pos).ID]
		if !ok || m.ParentID != q.RootID {
			return nil, false, notFound("reply", (*pos).ID)
		}
		p := msgPos(m)
		*pos = &p
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

// ListThreads returns a page of the viewer's threads, most recently
// replied first.
func (s *store) ListThreads(ctx context.Context, q driver.ThreadQuery) ([]messaging.Thread, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []messaging.Thread
	for id, t := range s.threads {
		root := s.messages[id]
		if len(t.replies) == 0 || !t.takers[q.ViewerID] {
			continue
		}
		if q.All || slices.Contains(q.ConversationIDs, root.ConversationID) || s.isMember(root.ConversationID, q.MemberID) {
			all = append(all, s.viewThread(root, q.ViewerID))
		}
	}
	// Ties break on the root's conversation, then its id, as on sqlstore.
	pos := func(t messaging.Thread) driver.Cursor {
		return driver.Cursor{Time: t.LastReplyAt, ID: t.Root.ConversationID + "/" + t.Root.ID}
	}
	sortNewestFirst(all, pos)
	for _, c := range []**driver.Cursor{&q.After, &q.Before} {
		if *c == nil || !(*c).Time.IsZero() {
			continue
		}
		id := (*c).ID
		i := slices.IndexFunc(all, func(t messaging.Thread) bool { return t.Root.ID == id })
		if i < 0 {
			return nil, false, notFound("thread", (*c).ID)
		}
		p := pos(all[i])
		*c = &p
	}
	return page(all, pos, q.Limit, q.After, q.Before)
}

// MarkThreadRead moves contactID's read position in the thread forward.
func (s *store) MarkThreadRead(ctx context.Context, rootID, contactID, replyID string, rec driver.Recorder) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[replyID]
	if !ok || m.ParentID != rootID {
		return notFound("reply", replyID)
	}
	k := member{rootID, contactID}
	if s.threadReads[k].after(m) {
		s.threadReads[k] = readPos{at: m.CreatedAt, msgID: replyID}
		t := s.viewThread(s.messages[rootID], contactID)
		s.record(rec, driver.Change{Thread: &t})
	}
	return nil
}
