package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// conversationRow is a conversation joined with one contact's row of
// conversation_members (read position and unread counters, DESIGN.md §4.2).
type conversationRow struct {
	ID            string    `bun:"id"`
	CreatedAt     time.Time `bun:"created_at"`
	UpdatedAt     time.Time `bun:"updated_at"`
	MessageCount  int64     `bun:"message_count"`
	LastMessageID *string   `bun:"last_message_id"`
	ReadMessageID *string   `bun:"read_message_id"`
	ReadCount     int64     `bun:"read_count"`
	OwnCount      int64     `bun:"own_count"`
	OwnReadCount  int64     `bun:"own_read_count"`
	// Last is the last message with its sender (zero when there is none,
	// and in ListThreads' rows, which do not read it).
	Last messageRow `bun:"embed:lm_"`
}

// conversationCols and conversationJoins select conversations AS c with the
// state of the contact given as the first argument (r), and the last
// message with its sender (lm and lc, read with the page: DESIGN.md §4.12).
const (
	conversationCols    = conversationOwnCols + ", " + lastMessageCols
	conversationOwnCols = `c.id, c.created_at, c.updated_at, c.message_count, c.last_message_id,
		r.read_message_id, COALESCE(r.read_count, 0) AS read_count, COALESCE(r.own_count, 0) AS own_count,
		COALESCE(r.own_read_count, 0) AS own_read_count`
	conversationJoins = `LEFT JOIN conversation_members AS r ON r.conversation_id = c.id AND r.contact_id = ?` +
		` LEFT JOIN messages AS lm ON lm.id = c.last_message_id LEFT JOIN contacts AS lc ON lc.id = lm.contact_id`
	lastMessageCols = `lm.id AS lm_id, lm.conversation_id AS lm_conversation_id, lm.contact_id AS lm_contact_id, lm.text AS lm_text,
		lm.read_at AS lm_read_at, lm.created_at AS lm_created_at, lm.updated_at AS lm_updated_at,
		lm.reaction_count AS lm_reaction_count, lm.attachment_count AS lm_attachment_count, lm.thread AS lm_thread, lm.deleted AS lm_deleted,
		lc.username AS lm_contact_username, lc.phone_number AS lm_contact_phone_number, lc.avatar_url AS lm_contact_avatar_url,
		lc.last_active_at AS lm_contact_last_active_at, lc.created_at AS lm_contact_created_at`
)

// memberOf is the condition that conversation column col is one of
// contact ?'s memberships, a probe of the members' key (dialectSQL.memberOf).
func (s *store) memberOf(col string) string { return fmt.Sprintf(s.sql.memberOf, col) }

// scope resolves the conversations a list selects: all, or ids and those
// of memberID's memberships, as a list of ids when they are at most n,
// else as byMember to probe for (memberOf; BENCHMARKS.md §4).
func (s *store) scope(ctx context.Context, all bool, memberID string, ids []string, n int) (convs []string, byMember string, err error) {
	if all || memberID == "" {
		return ids, "", nil
	}
	// In the index's order, so that the planner reads the index rather
	// than scanning for a contact's rows, which lie together.
	var mine []string
	if err := s.read(ctx, &mine, "SELECT conversation_id FROM conversation_members WHERE contact_id = ? AND is_member = TRUE ORDER BY conversation_id LIMIT ?",
		memberID, n+1); err != nil || len(mine) > n {
		return ids, memberID, err
	}
	return append(mine, ids...), "", nil
}

func (r *conversationRow) conversation() messaging.Conversation {
	c := messaging.Conversation{
		ID:           r.ID,
		CreatedAt:    utc(r.CreatedAt),
		UpdatedAt:    utc(r.UpdatedAt),
		MessageCount: r.MessageCount,
		UnreadCount:  (r.MessageCount - r.ReadCount) - (r.OwnCount - r.OwnReadCount),
	}
	if r.ReadMessageID != nil {
		c.LastReadMessageID = *r.ReadMessageID
	}
	return c
}

// completeConversations turns rows into conversations with their last
// messages, completed as a page's (complete).
func completeConversations(ctx context.Context, d *dialectSQL, query queryFn, rows []conversationRow) ([]messaging.Conversation, error) {
	out := make([]messaging.Conversation, len(rows))
	last := make([]messageRow, 0, len(rows))
	for i := range rows {
		out[i] = rows[i].conversation()
		if rows[i].LastMessageID != nil && rows[i].Last.ID != "" {
			last = append(last, rows[i].Last)
		}
	}
	ms, err := complete(ctx, d, query, last)
	if err != nil {
		return nil, err
	}
	for i := range rows { // ms are in the order of rows' last messages
		if rows[i].LastMessageID != nil && rows[i].Last.ID != "" {
			out[i].LastMessage, ms = &ms[0], ms[1:]
		}
	}
	return out, nil
}

// GetConversation returns the conversation as viewerID sees it, or an
// error matching ErrNotFound.
func (s *store) GetConversation(ctx context.Context, id, viewerID string) (messaging.Conversation, error) {
	c, err := s.readConversation(ctx, s.read, id, viewerID)
	return c, wrapErr("sqlstore.GetConversation", err)
}

// readConversation is GetConversation by read.
func (s *store) readConversation(ctx context.Context, read queryFn, id, viewerID string) (messaging.Conversation, error) {
	r, err := readOne[conversationRow](ctx, read, "conversation",
		"SELECT "+conversationCols+" FROM conversations AS c "+conversationJoins+" WHERE c.id = ?", viewerID, id)
	var cs []messaging.Conversation
	if err == nil {
		cs, err = completeConversations(ctx, s.sql, read, []conversationRow{r})
	}
	if err != nil {
		return messaging.Conversation{}, err
	}
	return cs[0], nil
}

// ListConversations returns up to q.Limit conversations matching q, most
// recently active first, in at most four queries (DESIGN.md §4.12).
func (s *store) ListConversations(ctx context.Context, q driver.ConversationQuery) (_ []messaging.Conversation, _ bool, err error) {
	defer wrapTo("sqlstore.ListConversations", &err)
	if q.Limit < 1 {
		return nil, false, invalid("limit must be at least 1")
	}
	convs, member, err := s.scope(ctx, q.All, q.MemberID, q.ConversationIDs, maxBranches)
	if err != nil {
		return nil, false, err
	}
	// The list over column col, threads' conversations left out.
	scoped := func(col string) (branch, bool) {
		b, ok := s.scopeBranch(col, q.All, member, convs)
		if q.All {
			b.where = notThread(col)
		}
		return b, ok
	}
	b, ok := scoped("c.id")
	if !ok {
		return nothing[messaging.Conversation](q.Window, "conversation")
	}
	p := pageQuery{cols: conversationCols, from: "conversations AS c", joins: conversationJoins, joinArgs: []any{q.ViewerID}, alias: "c", timeCol: "updated_at",
		coarse: s.sql.listedAt, branches: []branch{b}, after: q.After, before: q.Before, limit: q.Limit}
	// A cursor by id: the row of that id among the list's, read by the
	// page's query where the engine can (subqueryBounds), else before it.
	if cur := cmp.Or(q.After, q.Before); cur != nil && cur.Time.IsZero() {
		x, _ := scoped("x.id")
		p.cursorRow, p.cursorArgs = "conversations AS x WHERE x.id = ? AND "+x.where, append([]any{cur.ID}, x.args...)
		p.after, p.before, p.afterID = nil, nil, q.After != nil
		if !s.sql.subqueryBounds {
			at, err := s.conversationCursor(ctx, p.cursorRow, p.cursorArgs)
			if err != nil {
				return nil, false, err
			}
			p.cursorRow = ""
			if q.After != nil {
				p.after = at
			} else {
				p.before = at
			}
		}
	}
	query, args := s.pageSQL(p)
	// A walk of the list's index whatever the values: prepared (§4.12).
	read := s.read
	if q.All || member != "" && len(convs) == 0 {
		read = s.readPrepared
	}
	var rows []conversationRow
	if err := read(ctx, &rows, query, args...); err != nil {
		return nil, false, err
	}
	if len(rows) == 0 && p.cursorRow != "" {
		// No row beyond the cursor, or no such cursor in the list.
		if _, err := s.conversationCursor(ctx, p.cursorRow, p.cursorArgs); err != nil {
			return nil, false, err
		}
	}
	rows, more := trimPage(rows, q.Limit, q.Before != nil)
	cs, err := completeConversations(ctx, s.sql, s.read, rows)
	return cs, more, err
}

// conversationCursor returns the place of the conversation that cursor
// (pageQuery.cursorRow) and args select, or an error matching ErrNotFound.
func (s *store) conversationCursor(ctx context.Context, cursor string, args []any) (*driver.Cursor, error) {
	r, err := readOne[struct {
		ID        string    `bun:"id"`
		UpdatedAt time.Time `bun:"updated_at"`
	}](ctx, s.read, "conversation", "SELECT x.id, x.updated_at FROM "+cursor, args...)
	if err != nil {
		return nil, err
	}
	return &driver.Cursor{Time: utc(r.UpdatedAt), ID: r.ID}, nil
}

// scopeBranch returns the one branch of a list over column col of every
// conversation (all), or of those of ids and of contact memberID's
// memberships; false when that is none.
func (s *store) scopeBranch(col string, all bool, memberID string, ids []string) (branch, bool) {
	ids = dedupe(ids)
	switch {
	case all:
		return branch{}, true
	case memberID != "" && len(ids) > 0:
		return branch{where: "(" + s.memberOf(col) + " OR " + col + " IN (?))", args: []any{memberID, idList(ids)}}, true
	case memberID != "":
		return branch{where: s.memberOf(col), args: []any{memberID}}, true
	case len(ids) > 0:
		return branch{where: col + " IN (?)", args: []any{idList(ids)}}, true
	}
	return branch{}, false
}

// conversationBranches returns the branches of a list over conversation
// column col of convs and member's memberships: one per conversation when
// there is no member and at most maxBranches, else one condition.
func (s *store) conversationBranches(col, member string, convs []string) []branch {
	if member != "" || len(convs) > maxBranches {
		b, _ := s.scopeBranch(col, false, member, convs)
		return []branch{b}
	}
	bs := make([]branch, len(convs))
	for i, c := range convs {
		bs[i] = branch{conversation: c}
	}
	return bs
}

// touchConversation counts m, a new message as stored, in its
// conversation's row (stored if new; locked until tx ends) and its
// readers' and sender's.
func (s *store) touchConversation(ctx context.Context, tx bun.Tx, m messaging.Message) error {
	at := m.CreatedAt.UTC()
	if _, err := s.execWrite(ctx, tx, s.sql.countSend, m.ConversationID, at, at, 1, m.ID); err != nil {
		return err
	}
	if _, err := s.execWrite(ctx, tx, countReadSendSQL, m.Contact.ID, m.ConversationID, at, at, m.ID); err != nil {
		return err
	}
	if m.ParentID != "" {
		_, err := s.execWrite(ctx, tx, countReplySQL, m.Contact.ID, m.ConversationID)
		return err
	}
	_, err := s.execWrite(ctx, tx, s.sql.countOwn, m.ConversationID, m.Contact.ID, 1)
	return err
}

// countReplySQL counts a reply as its sender's (countOwn) and places its
// thread's takers (placeThreadsSQL), in one UPDATE of their rows.
const countReplySQL = `UPDATE conversation_members SET own_count = own_count + CASE WHEN contact_id = ? THEN 1 ELSE 0 END,
	thread_at = (SELECT CASE WHEN c.message_count > 0 THEN c.updated_at END FROM conversations AS c WHERE c.id = conversation_members.conversation_id)
	WHERE conversation_id = ? AND joined_at IS NOT NULL`

// countReadSendSQL counts a new message (created_at twice, id) as read by
// the readers whose position is after it.
const countReadSendSQL = `UPDATE conversation_members SET read_count = read_count + 1,
	own_read_count = own_read_count + CASE WHEN contact_id = ? THEN 1 ELSE 0 END
	WHERE conversation_id = ? AND (read_created > ? OR (read_created = ? AND read_message_id > ?))`

// newest is the condition that an upsert's new message comes after the
// conversation's last one.
const newest = `(conversations.last_message_id IS NULL OR EXCLUDED.updated_at > conversations.updated_at
	OR (EXCLUDED.updated_at = conversations.updated_at AND EXCLUDED.last_message_id > conversations.last_message_id))`

// fileConversation stores conv, created at at, unless it is stored.
func (s *store) fileConversation(ctx context.Context, db bun.IConn, conv string, at time.Time) error {
	_, err := db.ExecContext(ctx, "INSERT INTO conversations (id, created_at, updated_at) VALUES (?, ?, ?)"+s.sql.skipTail("id"), conv, at.UTC(), at.UTC())
	return err
}

// removeMessage deletes r's row (its reactions, revisions and attachments
// gone already) and takes it out of its conversation's counters, last
// message and, for a reply, its thread's places.
func (s *store) removeMessage(ctx context.Context, tx bun.Tx, r *messageRow) error {
	at, conv := r.CreatedAt.UTC(), r.ConversationID
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"UPDATE conversations SET message_count = message_count - 1 WHERE id = ?", []any{conv}},
		{`UPDATE conversation_members SET read_count = read_count - 1,
			own_read_count = own_read_count - CASE WHEN contact_id = ? THEN 1 ELSE 0 END
			WHERE conversation_id = ? AND (read_created > ? OR (read_created = ? AND read_message_id >= ?))`, []any{r.ContactID, conv, at, at, r.ID}},
		{"UPDATE conversation_members SET own_count = own_count - 1 WHERE conversation_id = ? AND contact_id = ?", []any{conv, r.ContactID}},
		{"DELETE FROM messages WHERE id = ?", []any{r.ID}},
		// The newest message left is the last, if the last was r.
		{`UPDATE conversations SET
			last_message_id = (SELECT m.id FROM messages AS m WHERE m.conversation_id = ? ORDER BY m.created_at DESC, m.id DESC LIMIT 1),
			updated_at = COALESCE((SELECT m.created_at FROM messages AS m WHERE m.conversation_id = ? ORDER BY m.created_at DESC, m.id DESC LIMIT 1), created_at)
			WHERE id = ? AND last_message_id = ?`, []any{conv, conv, conv, r.ID}},
	} {
		if _, err := s.execWrite(ctx, tx, q.sql, q.args...); err != nil {
			return err
		}
	}
	return s.placeThreads(ctx, tx, conv)
}

// tailCap is the most messages MarkRead counts after the new position; a
// position further back counts the messages it passes instead.
const tailCap = 1000

// MarkRead moves contactID's read position in the conversation forward to
// messageID, its counters from the messages after it or, past tailCap of
// them, from those it passes: a cost bounded either way.
func (s *store) MarkRead(ctx context.Context, conversationID, contactID, messageID string, rec driver.Recorder) error {
	return wrapErr("sqlstore.MarkRead", s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		// The conversation locked first, as by sends, deletes and imports: on
		// MySQL the reads below then see every change committed before it.
		read := txQuery(tx)
		count, err := readOne[int64](ctx, read, "message", "SELECT message_count FROM conversations WHERE id = ?"+s.sql.forUpdate, conversationID)
		if err != nil {
			return err
		}
		at, err := readOne[time.Time](ctx, read, "message", "SELECT created_at FROM messages WHERE id = ? AND conversation_id = ?", messageID, conversationID)
		if err != nil {
			return err
		}
		to := at.UTC()
		if _, err := tx.ExecContext(ctx, "INSERT INTO conversation_members (conversation_id, contact_id) VALUES (?, ?)"+s.sql.skipTail("contact_id"),
			conversationID, contactID); err != nil {
			return err
		}
		from, err := readOne[struct {
			ReadCreated *time.Time `bun:"read_created"`
			ReadID      *string    `bun:"read_message_id"`
			OwnCount    int64      `bun:"own_count"`
		}](ctx, read, "member", "SELECT read_created, read_message_id, own_count FROM conversation_members WHERE conversation_id = ? AND contact_id = ?"+s.sql.forUpdate,
			conversationID, contactID)
		if err != nil {
			return err
		}
		if from.ReadCreated != nil && (from.ReadCreated.After(to) || from.ReadCreated.Equal(to) && *from.ReadID >= messageID) {
			return nil // positions never move back
		}
		// The messages of a range of places, and the reader's own.
		type rangeCount struct {
			All int64 `bun:"n"`
			Own int64 `bun:"own"`
		}
		const counts = "SELECT COUNT(*) AS n, COALESCE(SUM(CASE WHEN contact_id = ? THEN 1 ELSE 0 END), 0) AS own FROM "
		tail, err := readOne[rangeCount](ctx, read, "message", counts+`(SELECT contact_id FROM messages WHERE conversation_id = ?
			AND (created_at > ? OR (created_at = ? AND id > ?)) ORDER BY created_at, id LIMIT ?) AS r`, contactID, conversationID, to, to, messageID, tailCap+1)
		if err != nil {
			return err
		}
		set, args := "read_count = ?, own_read_count = ?", []any{count - tail.All, from.OwnCount - tail.Own}
		if tail.All > tailCap {
			passed := "(created_at < ? OR (created_at = ? AND id <= ?))"
			pargs := []any{contactID, conversationID, to, to, messageID}
			if from.ReadCreated != nil {
				passed += " AND (created_at > ? OR (created_at = ? AND id > ?))"
				pargs = append(pargs, *from.ReadCreated, *from.ReadCreated, *from.ReadID)
			}
			n, err := readOne[rangeCount](ctx, read, "message", counts+"messages WHERE conversation_id = ? AND "+passed, pargs...)
			if err != nil {
				return err
			}
			set, args = "read_count = read_count + ?, own_read_count = own_read_count + ?", []any{n.All, n.Own}
		}
		if _, err := tx.ExecContext(ctx, "UPDATE conversation_members SET read_created = ?, read_message_id = ?, "+set+
			" WHERE conversation_id = ? AND contact_id = ?", append(append([]any{to, messageID}, args...), conversationID, contactID)...); err != nil {
			return err
		}
		if rec == nil {
			return nil
		}
		// The conversation as the reader sees it now, for the event.
		c, err := s.readConversation(ctx, read, conversationID, contactID)
		if err != nil {
			return err
		}
		return s.record(ctx, tx, rec, driver.Change{Conversation: &c})
	}))
}

// AddMember records the membership, keeping an existing one.
func (s *store) AddMember(ctx context.Context, conversationID, contactID string, at time.Time) error {
	return wrapErr("sqlstore.AddMember", s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := readOne[string](ctx, txQuery(tx), "contact", "SELECT id FROM contacts WHERE id = ?", contactID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.sql.addMember, conversationID, contactID, at.UTC())
		return err
	}))
}

// RemoveMember ends the membership, keeping the contact's read state.
func (s *store) RemoveMember(ctx context.Context, conversationID, contactID string) error {
	_, err := s.exec(ctx, "UPDATE conversation_members SET is_member = FALSE, joined_at = NULL WHERE conversation_id = ? AND contact_id = ?",
		conversationID, contactID)
	return wrapErr("sqlstore.RemoveMember", err)
}

// IsMember reports whether the contact is a member of the conversation.
func (s *store) IsMember(ctx context.Context, conversationID, contactID string) (bool, error) {
	var n []int
	err := s.read(ctx, &n, "SELECT 1 FROM conversation_members WHERE conversation_id = ? AND contact_id = ? AND is_member = TRUE",
		conversationID, contactID)
	return len(n) > 0, wrapErr("sqlstore.IsMember", err)
}

// ListMembers returns up to q.Limit members as q selects them, by id.
func (s *store) ListMembers(ctx context.Context, q driver.MemberQuery) (_ []messaging.Member, _ bool, err error) {
	defer wrapTo("sqlstore.ListMembers", &err)
	if q.Limit < 1 {
		return nil, false, invalid("limit must be at least 1")
	}
	key, where, arg := "contact_id", "conversation_id = ?", q.ConversationID
	if q.ConversationID == "" {
		key, where, arg = "conversation_id", "contact_id = ?", q.ContactID
	}
	rows := []messaging.Member{}
	if err := s.read(ctx, &rows, "SELECT conversation_id, contact_id, joined_at FROM conversation_members WHERE "+where+
		" AND is_member = TRUE AND "+key+" > ? ORDER BY "+key+" LIMIT ?", arg, cursorID(q.After), q.Limit+1); err != nil {
		return nil, false, err
	}
	rows, more := trimPage(rows, q.Limit, false)
	for i := range rows {
		rows[i].JoinedAt = utc(rows[i].JoinedAt)
	}
	return rows, more, nil
}
