package sqlstore

import (
	"context"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// Threads. A reply is a row of messages whose conversation_id is its
// thread's key, "<conversation id>/<root id>" (threadKey): no conversation
// id the API accepts holds a slash. A thread is then a conversation of its
// own, kept by the code that keeps conversations: its row of conversations
// counts its replies (message_count) and has the time of the newest
// (updated_at), each reader's row of conversation_members has its read
// position and the counters of its unread count, sends and deletes keep
// them in their transactions (tallied on PostgreSQL and MySQL), and its
// replies are listed by keyset on the conversation's index. A reply costs
// what a send costs, and a thread's unread count is arithmetic on
// counters, whatever its size. The lists of every conversation
// (notThread) leave threads' keys out.
//
// Who takes part in a thread (the root's sender, each who replied) has a
// row of the thread's conversation_members with joined_at set and
// is_member false (is_member is the host's membership of real
// conversations). The root's row of messages has thread set from its first
// reply, so that reads ask for the counts of those roots only; deleted
// marks a root's tombstone.

// threadKey is the conversation id that the replies of root, a message of
// conv, are stored under.
func threadKey(conv, root string) string { return conv + "/" + root }

// splitThread returns the conversation and the root of a stored
// conversation id: the id itself and "" for a message that is no reply.
func splitThread(stored string) (conv, root string) {
	if i := strings.IndexByte(stored, '/'); i >= 0 {
		return stored[:i], stored[i+1:]
	}
	return stored, ""
}

// notThread is the condition that conversation column col is no thread's.
func notThread(col string) string { return col + " NOT LIKE '%/%'" }

// threadsOf is the condition that conversation column col is the key of
// a thread of one of n conversations, whose threadPatterns are its
// arguments.
func threadsOf(col string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = col + " LIKE ? ESCAPE '!'"
	}
	return strings.Join(parts, " OR ")
}

// threadConversation returns the SQL of the conversation of the thread
// key in col ("<conversation>/<root>"): what comes before the slash.
func (s *store) threadConversation(col string) string {
	switch s.flavor {
	case flavorPostgres:
		return "split_part(" + col + ", '/', 1)"
	case flavorMySQL:
		return "SUBSTRING_INDEX(" + col + ", '/', 1)"
	}
	return "substr(" + col + ", 1, instr(" + col + ", '/') - 1)"
}

// threadPatterns returns the LIKE patterns of the keys of the threads of
// convs ("_" escaped: no conversation id holds "!", "%" or "/").
func threadPatterns(convs []string) []any {
	out := make([]any, len(convs))
	for i, c := range convs {
		out[i] = strings.ReplaceAll(c, "_", "!_") + "/%"
	}
	return out
}

// tombstoneSQL turns a root into its tombstone: nothing of its text (nor
// its words: search finds no tombstone), reactions, attachments or read
// state is kept (their rows are deleted with it). Its arguments: the
// words of no text, the id.
const tombstoneSQL = `UPDATE messages SET text = '', search_words = ?, deleted = TRUE, reaction_count = 0, attachment_count = 0,
	read_at = NULL, updated_at = NULL WHERE id = ?`

// takeReply checks, with the root's row locked until tx ends, that the
// root of m, a reply, takes it, and makes the root's sender take part in
// the thread; the reply's sender takes part by its send (ensureTaker).
func (s *store) takeReply(ctx context.Context, tx bun.Tx, m messaging.Message) error {
	var rows []messageOwnRow
	if err := s.txRead(ctx, tx, &rows, "SELECT "+messageOwnCols+" FROM messages AS m WHERE m.id = ?"+s.forUpdate(), m.ParentID); err != nil {
		return err
	}
	if len(rows) == 0 || rows[0].ConversationID != m.ConversationID || rows[0].Deleted {
		return driver.ErrNoParent
	}
	if !rows[0].Thread {
		if _, err := tx.ExecContext(ctx, "UPDATE messages SET thread = TRUE WHERE id = ?", m.ParentID); err != nil {
			return err
		}
	}
	key := threadKey(m.ConversationID, m.ParentID)
	for _, who := range []string{rows[0].ContactID, m.Contact.ID} {
		if err := s.ensureTaker(ctx, tx, key, who, m.CreatedAt); err != nil {
			return err
		}
	}
	return nil
}

// ensureTaker makes contact take part in the thread key, from at.
func (s *store) ensureTaker(ctx context.Context, tx bun.Tx, key, contact string, at time.Time) error {
	q := `INSERT INTO conversation_members (conversation_id, contact_id, joined_at) VALUES (?, ?, ?)
		ON CONFLICT (conversation_id, contact_id) DO UPDATE SET joined_at = COALESCE(conversation_members.joined_at, EXCLUDED.joined_at)`
	if s.flavor == flavorMySQL {
		q = `INSERT INTO conversation_members (conversation_id, contact_id, joined_at) VALUES (?, ?, ?)
			ON DUPLICATE KEY UPDATE joined_at = COALESCE(joined_at, VALUES(joined_at))`
	}
	_, err := tx.ExecContext(ctx, q, key, contact, at.UTC())
	return err
}

// hasReplies reports whether the thread key has a reply.
func (s *store) hasReplies(ctx context.Context, tx bun.Tx, key string) (bool, error) {
	var ids []string
	err := s.txRead(ctx, tx, &ids, "SELECT m.id FROM messages AS m WHERE m.conversation_id = ? LIMIT 1", key)
	return len(ids) > 0, err
}

// removeMessage deletes r's row (its reactions, revisions and attachments
// gone already) and takes it out of its conversation's counters.
func (s *store) removeMessage(ctx context.Context, tx bun.Tx, r *messageRow) error {
	if err := s.uncountMessage(ctx, tx, r); err != nil {
		return err
	}
	if _, err := s.execWrite(ctx, tx, "DELETE FROM messages WHERE id = ?", r.ID); err != nil {
		return err
	}
	return s.lastMessageGone(ctx, tx, r.ConversationID, r.ID)
}

// replyGone removes the tombstone of root, a root of conv, once its last
// reply is deleted in tx, and returns its id; "" when it stays.
func (s *store) replyGone(ctx context.Context, tx bun.Tx, conv, root string) (string, error) {
	var rows []messageRow
	if err := s.txRead(ctx, tx, &rows, "SELECT "+messageOwnCols+" FROM messages AS m WHERE m.id = ?"+s.forUpdate(), root); err != nil {
		return "", err
	}
	if len(rows) == 0 || !rows[0].Deleted {
		return "", nil
	}
	more, err := s.hasReplies(ctx, tx, threadKey(conv, root))
	if err != nil || more {
		return "", err
	}
	return root, s.removeMessage(ctx, tx, &rows[0])
}

// threadCount is a thread's count of replies and the time of its newest.
type threadCount struct {
	Key   string    `bun:"id"`
	Count int64     `bun:"n"`
	Last  time.Time `bun:"last"`
}

// addThreadCounts sets the ReplyCount and LastReplyAt of the roots among
// out whose rows have thread set: one query for their counters, and on
// PostgreSQL and MySQL one for their replies still tallied (tallies.go).
func addThreadCounts(ctx context.Context, f flavor, query queryFn, rows []messageRow, out []messaging.Message) error {
	var keys []string
	for i := range rows {
		if rows[i].Thread {
			keys = append(keys, threadKey(out[i].ConversationID, out[i].ID))
		}
	}
	if len(keys) == 0 {
		return nil
	}
	var counts []threadCount
	if err := query(ctx, &counts, "SELECT id, message_count AS n, updated_at AS last FROM conversations WHERE id IN (?)", idList(keys)); err != nil {
		return err
	}
	if f != flavorSQLite {
		var tallied []threadCount
		if err := query(ctx, &tallied, `SELECT conversation_id AS id, COUNT(*) AS n, MAX(created_at) AS last
			FROM message_tallies WHERE conversation_id IN (?) GROUP BY conversation_id`, idList(keys)); err != nil {
			return err
		}
		counts = append(counts, tallied...)
	}
	for i := range out {
		if !rows[i].Thread {
			continue
		}
		key := threadKey(out[i].ConversationID, out[i].ID)
		for _, c := range counts {
			if c.Key != key {
				continue
			}
			out[i].ReplyCount += c.Count
			if c.Count > 0 && c.Last.After(out[i].LastReplyAt) {
				out[i].LastReplyAt = utc(c.Last)
			}
		}
	}
	return nil
}

// thread returns root's thread as conv, the thread's conversation as the
// viewer sees it, gives it.
func thread(root messaging.Message, conv messaging.Conversation) messaging.Thread {
	t := messaging.Thread{Root: root, ReplyCount: conv.MessageCount, UnreadCount: conv.UnreadCount, LastReadMessageID: conv.LastReadMessageID}
	if conv.MessageCount > 0 {
		t.LastReplyAt = conv.UpdatedAt
	}
	t.Root.ReplyCount, t.Root.LastReplyAt = t.ReplyCount, t.LastReplyAt
	return t
}

// GetThread returns the thread of the root as viewerID sees it.
func (s *store) GetThread(ctx context.Context, rootID, viewerID string) (messaging.Thread, error) {
	t, err := s.getThread(ctx, rootID, viewerID)
	return t, wrapErr("sqlstore.GetThread", err)
}

func (s *store) getThread(ctx context.Context, rootID, viewerID string) (messaging.Thread, error) {
	root, err := s.getMessage(ctx, rootID)
	if err != nil {
		return messaging.Thread{}, err
	}
	if root.ParentID != "" {
		return messaging.Thread{}, notFound("thread")
	}
	c, err := s.GetConversation(ctx, threadKey(root.ConversationID, root.ID), viewerID)
	if messaging.KindOf(err) == messaging.ErrNotFound {
		return messaging.Thread{Root: root}, nil
	}
	if err != nil {
		return messaging.Thread{}, err
	}
	return thread(root, c), nil
}

// ListReplies returns a page of the root's replies, newest first: a page
// of the thread's conversation.
func (s *store) ListReplies(ctx context.Context, q driver.ReplyQuery) ([]messaging.Message, bool, error) {
	var rows []messageRefRow
	if err := s.readPrepared(ctx, &rows, "SELECT m.id, m.conversation_id, m.contact_id, m.created_at, m.deleted FROM messages AS m WHERE m.id = ?", q.RootID); err != nil {
		return nil, false, wrapErr("sqlstore.ListReplies", err)
	}
	if len(rows) == 0 || strings.Contains(rows[0].ConversationID, "/") {
		if q.After != nil || q.Before != nil {
			return nil, false, wrapErr("sqlstore.ListReplies", notFound("message"))
		}
		return []messaging.Message{}, false, nil
	}
	items, more, err := s.listMessages(ctx, driver.MessageQuery{
		Scope:  driver.Scope{ConversationIDs: []string{threadKey(rows[0].ConversationID, q.RootID)}},
		Window: q.Window,
	})
	return items, more, wrapErr("sqlstore.ListReplies", err)
}

// ListThreads returns a page of the viewer's threads, most recently
// replied first: a page of the conversations of the threads the viewer
// takes part in. It reads the keys of all of them first.
func (s *store) ListThreads(ctx context.Context, q driver.ThreadQuery) ([]messaging.Thread, bool, error) {
	ts, more, err := s.listThreads(ctx, q)
	return ts, more, wrapErr("sqlstore.ListThreads", err)
}

func (s *store) listThreads(ctx context.Context, q driver.ThreadQuery) ([]messaging.Thread, bool, error) {
	if q.Limit < 1 {
		return nil, false, invalid("limit must be at least 1")
	}
	var keys []string
	if err := s.read(ctx, &keys, "SELECT conversation_id FROM conversation_members WHERE contact_id = ? AND is_member = FALSE AND joined_at IS NOT NULL",
		q.ViewerID); err != nil {
		return nil, false, err
	}
	var member map[string]bool
	if !q.All && q.MemberID != "" {
		mine, err := s.allMemberships(ctx, q.MemberID)
		if err != nil {
			return nil, false, err
		}
		member = make(map[string]bool, len(mine))
		for _, c := range mine {
			member[c] = true
		}
	}
	mine := keys[:0]
	for _, k := range keys {
		conv, root := splitThread(k)
		if root == "" {
			continue
		}
		if q.All || member[conv] || containsString(q.ConversationIDs, conv) {
			mine = append(mine, k)
		}
	}
	cq := driver.ConversationQuery{Scope: driver.Scope{ConversationIDs: mine}, Window: driver.Window{Limit: q.Limit}, ViewerID: q.ViewerID}
	for _, c := range []struct{ from, to **driver.Cursor }{{&q.After, &cq.After}, {&q.Before, &cq.Before}} {
		if *c.from == nil {
			continue
		}
		key := ""
		for _, k := range mine {
			if _, root := splitThread(k); root == (*c.from).ID {
				key = k
			}
		}
		if key == "" {
			return nil, false, notFound("thread")
		}
		conv, err := s.GetConversation(ctx, key, q.ViewerID)
		if err != nil {
			return nil, false, err
		}
		if conv.MessageCount == 0 {
			return nil, false, notFound("thread")
		}
		*c.to = &driver.Cursor{Time: conv.UpdatedAt, ID: key}
	}
	if len(mine) == 0 {
		return []messaging.Thread{}, false, nil
	}
	convs, more, err := s.listConversations(ctx, cq)
	if err != nil {
		return nil, false, err
	}
	rootIDs := make([]string, 0, len(convs))
	for _, c := range convs {
		_, root := splitThread(c.ID)
		rootIDs = append(rootIDs, root)
	}
	var rows []messageRow
	if len(rootIDs) > 0 {
		if err := s.read(ctx, &rows, "SELECT "+messageCols+" FROM "+messageFrom+" WHERE m.id IN (?)", idList(rootIDs)); err != nil {
			return nil, false, err
		}
	}
	roots, err := complete(ctx, s.flavor, s.readByIDs, rows)
	if err != nil {
		return nil, false, err
	}
	out := make([]messaging.Thread, 0, len(convs))
	for _, c := range convs {
		_, rootID := splitThread(c.ID)
		if c.MessageCount == 0 {
			continue // every reply deleted: no thread
		}
		for _, r := range roots {
			if r.ID == rootID {
				out = append(out, thread(r, c))
			}
		}
	}
	return out, more, nil
}

// allMemberships returns every conversation contact is a member of.
func (s *store) allMemberships(ctx context.Context, contact string) ([]string, error) {
	var ids []string
	err := s.read(ctx, &ids, "SELECT conversation_id FROM conversation_members WHERE contact_id = ? AND is_member = TRUE", contact)
	return ids, err
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// MarkThreadRead moves contactID's read position in the thread forward: a
// read of the thread's conversation.
func (s *store) MarkThreadRead(ctx context.Context, rootID, contactID, replyID string, rec driver.Recorder) error {
	root, err := s.getMessage(ctx, rootID)
	if err != nil || root.ParentID != "" {
		return wrapErr("sqlstore.MarkThreadRead", notFound("reply"))
	}
	var wrapped driver.Recorder
	if rec != nil {
		wrapped = func(c driver.Change) []messaging.Event {
			t := thread(root, *c.Conversation)
			return rec(driver.Change{Thread: &t})
		}
	}
	return s.MarkRead(ctx, threadKey(root.ConversationID, rootID), contactID, replyID, wrapped)
}

var _ driver.ThreadStore = (*store)(nil)
