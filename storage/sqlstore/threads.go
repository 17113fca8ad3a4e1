package sqlstore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// Threads: DESIGN.md §4.11.

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

// threadsOf returns the condition that conversation column col is the
// key of a thread of one of convs, and its arguments ("_" escaped: no
// conversation id holds "!", "%" or "/").
func threadsOf(col string, convs []string) (string, []any) {
	parts, args := make([]string, len(convs)), make([]any, len(convs))
	for i, c := range convs {
		parts[i], args[i] = col+" LIKE ? ESCAPE '!'", strings.ReplaceAll(c, "_", "!_")+"/%"
	}
	return strings.Join(parts, " OR "), args
}

// threadConversation returns the SQL of the conversation of the thread
// key in col ("<conversation>/<root>"): what comes before the slash.
func (s *store) threadConversation(col string) string { return fmt.Sprintf(s.sql.beforeSlash, col) }

// tombstoneSQL turns a root into its tombstone, of no text, words,
// reactions, attachments or read state. Its arguments: the words of no
// text, the id.
const tombstoneSQL = `UPDATE messages SET text = '', search_words = ?, deleted = TRUE, reaction_count = 0, attachment_count = 0,
	read_at = NULL, updated_at = NULL WHERE id = ?`

// takeReply checks, with the root's row locked until tx ends, that the
// root of m, a reply, takes it, and makes the root's sender and the
// reply's take part in the thread unless they do (DESIGN.md §4.11).
func (s *store) takeReply(ctx context.Context, tx bun.Tx, m messaging.Message) error {
	key, at := threadKey(m.ConversationID, m.ParentID), m.CreatedAt.UTC()
	var roots []struct {
		Contact     string `bun:"contact_id"`
		Thread      bool   `bun:"thread"`
		RootTakes   bool   `bun:"root_takes"`
		SenderTakes bool   `bun:"sender_takes"`
	}
	if err := s.txRead(ctx, tx, &roots, `SELECT m.contact_id, m.thread,
		EXISTS (SELECT 1 FROM conversation_members AS t WHERE t.conversation_id = ? AND t.contact_id = m.contact_id AND t.joined_at IS NOT NULL) AS root_takes,
		EXISTS (SELECT 1 FROM conversation_members AS t WHERE t.conversation_id = ? AND t.contact_id = ? AND t.joined_at IS NOT NULL) AS sender_takes
		FROM messages AS m WHERE m.id = ? AND m.conversation_id = ? AND NOT m.deleted`+s.sql.forUpdate,
		key, key, m.Contact.ID, m.ParentID, m.ConversationID); err != nil {
		return err
	}
	if len(roots) == 0 {
		return driver.ErrNoParent
	}
	root := roots[0]
	var err error
	if !root.Thread {
		if _, err := s.execWrite(ctx, tx, "UPDATE messages SET thread = TRUE WHERE id = ?", m.ParentID); err != nil {
			return err
		}
	}
	switch {
	case root.Contact == m.Contact.ID && !root.SenderTakes:
		_, err = s.execWrite(ctx, tx, s.takersSQL(1), key, m.Contact.ID, at)
	case root.Contact != m.Contact.ID && !(root.RootTakes && root.SenderTakes):
		_, err = s.execWrite(ctx, tx, s.takersSQL(2), key, root.Contact, at, key, m.Contact.ID, at)
	}
	return err
}

// takersSQL makes n contacts, each given as (thread key, contact, time),
// take part in their threads unless they do (dialectSQL.takers).
func (s *store) takersSQL(n int) string {
	return fmt.Sprintf(s.sql.takers, strings.Repeat(", (?, ?, ?)", n)[2:])
}

// insertReplySQL stores a reply on PostgreSQL in one statement, as
// insertSent stores a send; every part selects from root, so that a root
// that does not take the reply stores nothing (DESIGN.md §4.11).
func insertReplySQL(keyed, events bool) string {
	after := `(conversation_members.read_created > n.at OR (conversation_members.read_created = n.at AND conversation_members.read_message_id > n.id))`
	with := []string{`root AS MATERIALIZED (SELECT m.id, m.contact_id, m.thread FROM messages AS m
			WHERE m.id = CAST(? AS text) AND m.conversation_id = CAST(? AS text) AND NOT m.deleted FOR UPDATE)`,
		`f AS (UPDATE messages SET thread = TRUE WHERE id = (SELECT root.id FROM root WHERE NOT root.thread))`,
		`n AS MATERIALIZED (SELECT CAST(? AS text) AS id, CAST(? AS text) AS key, CAST(? AS text) AS contact, CAST(? AS timestamptz) AS at,
			root.contact_id AS root_contact FROM root)`,
		`c AS (INSERT INTO conversations (id, created_at, updated_at, message_count, last_message_id) SELECT n.key, n.at, n.at, 1, n.id FROM n
			ON CONFLICT (id) DO UPDATE SET message_count = conversations.message_count + 1,
			last_message_id = CASE WHEN ` + newest + ` THEN EXCLUDED.last_message_id ELSE conversations.last_message_id END,
			updated_at = CASE WHEN ` + newest + ` THEN EXCLUDED.updated_at ELSE conversations.updated_at END
			RETURNING updated_at)`,
		`p AS (INSERT INTO conversation_members (conversation_id, contact_id, joined_at, thread_at, own_count)
			SELECT DISTINCT n.key, w.contact, n.at, (SELECT c.updated_at FROM c), CASE WHEN w.contact = n.contact THEN 1 ELSE 0 END
			FROM n CROSS JOIN LATERAL (VALUES (n.root_contact), (n.contact)) AS w(contact)
			ON CONFLICT (conversation_id, contact_id) DO UPDATE SET joined_at = COALESCE(conversation_members.joined_at, EXCLUDED.joined_at),
				thread_at = EXCLUDED.thread_at, own_count = conversation_members.own_count + EXCLUDED.own_count,
				read_count = conversation_members.read_count + (SELECT COUNT(*) FROM n WHERE ` + after + `),
				own_read_count = conversation_members.own_read_count + (SELECT COUNT(*) FROM n WHERE ` + after + ` AND EXCLUDED.own_count = 1))`,
		`o AS (UPDATE conversation_members SET read_count = conversation_members.read_count + CASE WHEN ` + after + ` THEN 1 ELSE 0 END,
				thread_at = CASE WHEN conversation_members.joined_at IS NOT NULL THEN (SELECT c.updated_at FROM c) ELSE conversation_members.thread_at END
			FROM n WHERE conversation_members.conversation_id = n.key AND conversation_members.contact_id NOT IN (n.root_contact, n.contact)
				AND (conversation_members.joined_at IS NOT NULL OR ` + after + `) AND (SELECT COUNT(*) FROM c) > 0)`,
	}
	if keyed {
		with = append(with, `k AS (INSERT INTO idempotency_keys (scope, client_key, fingerprint, lock_token, result, created_at, expires_at)
			SELECT CAST(? AS text), CAST(? AS text), CAST(? AS text), '', CAST(? AS bytea), CAST(? AS timestamptz), CAST(? AS timestamptz) FROM root)`)
	}
	if events {
		with = append(with, "ev AS ("+insertEventsArraysFrom+" WHERE EXISTS (SELECT 1 FROM root) ORDER BY u.ord)")
	}
	return "WITH " + strings.Join(with, ",\n\t") + `
	INSERT INTO messages (id, conversation_id, contact_id, text, search_words, read_at, created_at, updated_at, attachment_count)
	SELECT n.id, n.key, n.contact, CAST(? AS text), CAST(? AS text), CAST(? AS timestamptz), n.at, CAST(? AS timestamptz), 0 FROM n`
}

// insertReply stores m, a reply with no attachments, by insertReplySQL;
// sm is m as stored, in its thread's conversation.
func (s *store) insertReply(ctx context.Context, m, sm messaging.Message, evs []messaging.Event, done *driver.IdempotencyRecord) error {
	args := []any{m.ParentID, m.ConversationID, m.ID, sm.ConversationID, m.Contact.ID, m.CreatedAt.UTC()}
	if done != nil {
		args = append(args, done.Scope, done.Key, done.Fingerprint, done.Result, done.CreatedAt.UTC(), done.ExpiresAt.UTC())
	}
	if len(evs) > 0 {
		evArgs, err := eventsArrays(evs)
		if err != nil {
			return err
		}
		args = append(args, evArgs...)
	}
	args = append(args, m.Text, s.searchWords(m.Text), ts(m.ReadAt), ts(m.UpdatedAt))
	n, err := affected(s.execWrite(ctx, s.w, insertReplySQL(done != nil, len(evs) > 0), args...))
	if isUniqueViolation(err) {
		return conflict("a message with this id exists")
	}
	if err == nil && n == 0 {
		return driver.ErrNoParent
	}
	return err
}

// placeThreadsSQL sets the takers' thread_at of the threads of its list
// of keys (DESIGN.md §4.11).
const placeThreadsSQL = `UPDATE conversation_members SET thread_at = (SELECT CASE WHEN c.message_count > 0 THEN c.updated_at END
		FROM conversations AS c WHERE c.id = conversation_members.conversation_id)
	WHERE conversation_id IN (?) AND joined_at IS NOT NULL`

// placeThreads runs placeThreadsSQL for the threads among convs (stored
// conversation ids), in tx.
func (s *store) placeThreads(ctx context.Context, tx bun.Tx, convs ...string) error {
	var keys []string
	for _, c := range convs {
		if strings.IndexByte(c, '/') >= 0 {
			keys = append(keys, c)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	_, err := s.execWrite(ctx, tx, placeThreadsSQL, idList(keys))
	return err
}

// hasReplies reports whether the thread key has a reply.
func (s *store) hasReplies(ctx context.Context, tx bun.Tx, key string) (bool, error) {
	var ids []string
	err := s.txRead(ctx, tx, &ids, "SELECT m.id FROM messages AS m WHERE m.conversation_id = ? LIMIT 1", key)
	return len(ids) > 0, err
}

// replyGone removes the tombstone of root, a root of conv, once its last
// reply is deleted in tx, and returns its id; "" when it stays.
func (s *store) replyGone(ctx context.Context, tx bun.Tx, conv, root string) (string, error) {
	var rows []messageRow
	if err := s.txRead(ctx, tx, &rows, "SELECT "+messageOwnCols+" FROM messages AS m WHERE m.id = ?"+s.sql.forUpdate, root); err != nil {
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

// addThreadCounts sets the ReplyCount and LastReplyAt of the roots among
// out (of rows) from their threads' rows, in one query.
func addThreadCounts(ctx context.Context, query queryFn, rows []messageRow, out []messaging.Message) error {
	at := make(map[string]int) // a thread's key → its root's index
	for i := range rows {
		if rows[i].Thread {
			at[threadKey(out[i].ConversationID, out[i].ID)] = i
		}
	}
	if len(at) == 0 {
		return nil
	}
	var counts []struct {
		Key   string    `bun:"id"`
		Count int64     `bun:"n"`
		Last  time.Time `bun:"last"`
	}
	if err := query(ctx, &counts, "SELECT id, message_count AS n, updated_at AS last FROM conversations WHERE id IN (?)",
		idList(slices.Collect(maps.Keys(at)))); err != nil {
		return err
	}
	for _, c := range counts {
		if i := at[c.Key]; c.Count > 0 {
			out[i].ReplyCount, out[i].LastReplyAt = c.Count, utc(c.Last)
		}
	}
	return nil
}

// thread returns root's thread of conv, its conversation.
func thread(root messaging.Message, conv messaging.Conversation) messaging.Thread {
	t := messaging.Thread{Root: root, ReplyCount: conv.MessageCount, UnreadCount: conv.UnreadCount, LastReadMessageID: conv.LastReadMessageID}
	if conv.MessageCount > 0 {
		t.LastReplyAt = conv.UpdatedAt
	}
	t.Root.ReplyCount, t.Root.LastReplyAt = t.ReplyCount, t.LastReplyAt
	return t
}

// GetThread returns the thread of the root as viewerID sees it.
func (s *store) GetThread(ctx context.Context, rootID, viewerID string) (_ messaging.Thread, err error) {
	defer wrapTo("sqlstore.GetThread", &err)
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
func (s *store) ListReplies(ctx context.Context, q driver.ReplyQuery) (_ []messaging.Message, _ bool, err error) {
	defer wrapTo("sqlstore.ListReplies", &err)
	key, err := s.threadOf(ctx, q.RootID, "message")
	if messaging.KindOf(err) == messaging.ErrNotFound {
		return nothing[messaging.Message](q.Window, "message")
	} else if err != nil {
		return nil, false, err
	}
	return s.listMessages(ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{key}}, Window: q.Window})
}

// threadOf returns the thread key of root, or an error matching
// ErrNotFound that names what when root is no message or a reply.
func (s *store) threadOf(ctx context.Context, root, what string) (string, error) {
	ref, err := readOne[messageRefRow](ctx, s.readPrepared, what, messageRefSQL, root)
	if err == nil && strings.Contains(ref.ConversationID, "/") {
		err = notFound(what)
	}
	return threadKey(ref.ConversationID, root), err
}

// ListThreads returns a page of the viewer's threads, most recently
// replied first: a range of the viewer's thread_at (DESIGN.md §4.11).
func (s *store) ListThreads(ctx context.Context, q driver.ThreadQuery) (_ []messaging.Thread, _ bool, err error) {
	defer wrapTo("sqlstore.ListThreads", &err)
	if q.Limit < 1 {
		return nil, false, invalid("limit must be at least 1")
	}
	where, args := " WHERE r.contact_id = ? AND r.thread_at IS NOT NULL", []any{q.ViewerID}
	if !q.All {
		convs, member, err := s.scope(ctx, false, q.MemberID, q.ConversationIDs, maxBranches)
		if err != nil {
			return nil, false, err
		}
		b, ok := s.scopeBranch(s.threadConversation("r.conversation_id"), false, member, convs)
		if !ok {
			return nothing[messaging.Thread](q.Window, "thread")
		}
		where, args = where+" AND "+b.where, append(args, b.args...)
	}
	dir, op, cur := "DESC", "<", q.After
	if q.Before != nil {
		dir, op, cur = "ASC", ">", q.Before
	}
	if cur != nil {
		key, err := s.threadOf(ctx, cur.ID, "thread")
		if err != nil {
			return nil, false, err
		}
		at, err := readOne[time.Time](ctx, s.read, "thread", "SELECT r.thread_at FROM conversation_members AS r"+where+" AND r.conversation_id = ?",
			append(slices.Clone(args), key)...)
		if err != nil {
			return nil, false, err
		}
		seek, seekArgs := s.seek("r.thread_at", "r.conversation_id", op, at, key)
		where, args = where+" AND "+seek, append(args, seekArgs...)
	}
	query := "SELECT " + conversationOwnCols + " FROM conversation_members AS r JOIN conversations AS c ON c.id = r.conversation_id" + where +
		" ORDER BY r.thread_at " + dir + ", r.conversation_id " + dir + " LIMIT " + strconv.Itoa(q.Limit+1)
	// Over every conversation, a range of one index whatever the values:
	// prepared (DESIGN.md §4.11).
	read := s.read
	if q.All {
		read = s.readPrepared
	}
	var rows []conversationRow
	if err := read(ctx, &rows, query, args...); err != nil {
		return nil, false, err
	}
	rows, more := trimPage(rows, q.Limit, q.Before != nil)
	if len(rows) == 0 {
		return []messaging.Thread{}, more, nil
	}
	rootIDs := make([]string, len(rows))
	for i, r := range rows {
		_, rootIDs[i] = splitThread(r.ID)
	}
	var mrows []messageRow
	if err := s.read(ctx, &mrows, "SELECT "+messageCols+" FROM "+messageFrom+" WHERE m.id IN (?)", idList(rootIDs)); err != nil {
		return nil, false, err
	}
	roots, err := complete(ctx, s.sql, s.readByIDs, mrows)
	if err != nil {
		return nil, false, err
	}
	out := make([]messaging.Thread, 0, len(rows))
	for i := range rows {
		for _, r := range roots {
			if r.ID == rootIDs[i] {
				out = append(out, thread(r, rows[i].conversation()))
			}
		}
	}
	return out, more, nil
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
