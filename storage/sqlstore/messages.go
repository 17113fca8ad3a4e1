package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// messageOwnRow is a row of messages: the columns of messageOwnCols.
type messageOwnRow struct {
	ID              string    `bun:"id"`
	ConversationID  string    `bun:"conversation_id"`
	ContactID       string    `bun:"contact_id"`
	Text            string    `bun:"text"`
	ReadAt          time.Time `bun:"read_at"`
	CreatedAt       time.Time `bun:"created_at"`
	UpdatedAt       time.Time `bun:"updated_at"`
	ReactionCount   int       `bun:"reaction_count"`
	AttachmentCount int       `bun:"attachment_count"`
	Thread          bool      `bun:"thread"`  // a root with replies (threads.go)
	Deleted         bool      `bun:"deleted"` // a root's tombstone
}

// messageRow is a row of messages joined with its contact.
type messageRow struct {
	messageOwnRow

	ContactUsername     string    `bun:"contact_username"`
	ContactPhoneNumber  string    `bun:"contact_phone_number"`
	ContactAvatarURL    string    `bun:"contact_avatar_url"`
	ContactLastActiveAt time.Time `bun:"contact_last_active_at"`
	ContactCreatedAt    time.Time `bun:"contact_created_at"`
}

const (
	// messageOwnCols are the columns of messages AS m (messageOwnRow).
	messageOwnCols  = `m.id, m.conversation_id, m.contact_id, m.text, m.read_at, m.created_at, m.updated_at, m.reaction_count, m.attachment_count, m.thread, m.deleted`
	contactJoinCols = `c.username AS contact_username, c.phone_number AS contact_phone_number, c.avatar_url AS contact_avatar_url,
		c.last_active_at AS contact_last_active_at, c.created_at AS contact_created_at`
	messageCols = messageOwnCols + ", " + contactJoinCols
	messageFrom = `messages AS m LEFT JOIN contacts AS c ON c.id = m.contact_id`
)

// CreateMessage stores m and links the attachments attachmentIDs to it in
// one transaction. Errors: ErrNotFound for a missing attachment,
// ErrConflict for one linked to another message or of another
// conversation, or for a message id that exists.
func (s *store) CreateMessage(ctx context.Context, m messaging.Message, attachmentIDs []string, rec driver.Recorder) error {
	return wrapErr("sqlstore.CreateMessage", s.createMessage(ctx, m, attachmentIDs, rec, nil))
}

// createMessage is CreateMessage, storing done (the record of an
// idempotency key) in the same transaction when not nil.
func (s *store) createMessage(ctx context.Context, m messaging.Message, attachmentIDs []string, rec driver.Recorder, done *driver.IdempotencyRecord) error {
	atts := dedupe(attachmentIDs) // each linked here or the send fails
	s.eng.start(s)
	after := m
	after.Reactions, after.Attachments = []messaging.Reaction{}, []messaging.Attachment{}
	// A reply is stored in its thread's conversation (threads.go), its
	// attachments in its own.
	linkConv, sm := m.ConversationID, m
	if m.ParentID != "" {
		sm.ConversationID = threadKey(m.ConversationID, m.ParentID)
	}
	// write is the send's transaction; evs, unless nil, its events.
	var evs []messaging.Event
	write := func(ctx context.Context, tx bun.Tx) error {
		if done != nil {
			if err := s.storeKey(ctx, tx, *done); err != nil {
				return err
			}
		}
		if m.ParentID != "" {
			// Its root is checked and locked first (DESIGN.md §4.11).
			if err := s.takeReply(ctx, tx, m); err != nil {
				return err
			}
		} else if s.sql.arrays && len(atts) == 0 {
			return s.insertSent(ctx, tx, &pendingSend{m: m, evs: evs})
		}
		_, err := s.execWrite(ctx, tx, insertMessageSQL, sm.ID, sm.ConversationID, sm.Contact.ID, sm.Text, s.searchWords(sm.Text),
			ts(sm.ReadAt), sm.CreatedAt.UTC(), ts(sm.UpdatedAt), len(atts))
		if isUniqueViolation(err) {
			return conflict("a message with this id exists")
		} else if err != nil {
			return err
		}
		if len(atts) > 0 {
			if err := s.link(ctx, tx, m.ID, linkConv, atts); err != nil {
				return err
			}
			var as []attachmentRow
			if err := s.txRead(ctx, tx, &as, attachmentsOfSQL, m.ID); err != nil {
				return err
			}
			// Anew at each run: a retried transaction runs this again.
			after.Attachments = attachmentsOf(as)
		}
		if evs != nil { // made before (the change is the same)
			err = s.insertEvents(ctx, tx, evs)
		} else {
			err = s.record(ctx, tx, rec, driver.Change{Message: &after})
		}
		if err != nil {
			return err
		}
		// Counted last: the conversation's row, which other sends wait
		// for, is held from here to the commit.
		return s.touchConversation(ctx, tx, sm)
	}
	if len(atts) > 0 || (!s.sql.arrays && !s.sql.sendsInTx) {
		return s.write(ctx, write)
	}
	if rec != nil {
		evs = rec(driver.Change{Message: &after})
	}
	var err error
	switch {
	case s.sql.sendsInTx:
		// In a transaction with the sends waiting meanwhile (sends.go).
		return s.send(ctx, &pendingSend{m: m, evs: evs, done: done, write: write})
	case m.ParentID != "":
		// One statement, not combined: its root's lock would hold
		// others' sends (DESIGN.md §4.11).
		err = s.retry(ctx, func(ctx context.Context) error { return s.insertReply(ctx, m, sm, evs, done) })
	default:
		// One statement with others' sends (DESIGN.md §4.4); a key record in
		// its way makes it again in a transaction, which upserts the record.
		err = s.send(ctx, &pendingSend{m: m, evs: evs, done: done})
	}
	if err != nil && done != nil && messaging.KindOf(err) == messaging.ErrConflict {
		err = s.write(ctx, write)
	}
	return err
}

// insertSent stores p's message, without attachments, counted, with its
// events and key's record, in one statement (insertSentSQL; PostgreSQL).
func (s *store) insertSent(ctx context.Context, db bun.IConn, p *pendingSend) error {
	q, args, err := sentSQL([]*pendingSend{p})
	if err != nil {
		return err
	}
	_, err = s.execWrite(ctx, db, q, args...)
	if isUniqueViolation(err) {
		return conflict("a message with this id exists")
	}
	return err
}

// execWrite runs a write statement on db (the store's, or a transaction's),
// prepared where its arguments allow (DESIGN.md §4.7).
func (s *store) execWrite(ctx context.Context, db bun.IConn, query string, args ...any) (sql.Result, error) {
	if tx, inTx := db.(bun.Tx); inTx {
		if q, dargs, ok := s.txCached(query, args); ok {
			res, err := tx.Tx.ExecContext(ctx, q, s.cachedArgs(dargs)...)
			return res, staleInCachedTx(err)
		}
		if st, dargs := s.txStmt(ctx, tx, query, args); st != nil {
			return st.ExecContext(ctx, dargs...)
		}
	} else if s.cached != nil {
		if q, dargs, ok := expandArgs(query, args, true); ok {
			return unstale(s.w.DB, func() (sql.Result, error) {
				return s.w.DB.ExecContext(ctx, q, s.cachedArgs(dargs)...)
			})
		}
	}
	return db.ExecContext(ctx, query, bunArgs(args)...)
}

// txCached returns query and args as a transaction runs them from pgx's
// statement cache (Store.cached), with ok when they can be.
func (s *store) txCached(query string, args []any) (q string, dargs []any, ok bool) {
	if s.cached == nil || longList(args) {
		return "", nil, false
	}
	return expandArgs(query, args, true)
}

// staleInCachedTx returns err, a cached statement's error in a
// transaction, as a retryable staleError when the statement was stale.
func staleInCachedTx(err error) error {
	if err != nil && stalePlan(err) {
		return &staleError{err: err}
	}
	return err
}

// txStmt returns query as a statement prepared for tx (SQLite's
// stmtCache, DESIGN.md §4.7) with its driver arguments, or nil; it never
// prepares.
func (s *store) txStmt(ctx context.Context, tx bun.Tx, query string, args []any) (*sql.Stmt, []any) {
	if s.wstmts == nil || longList(args) {
		return nil, nil
	}
	if q, dargs, ok := expandArgs(query, args, false); ok {
		if from := s.wstmts.inTx(q); from != nil {
			return tx.Tx.StmtContext(ctx, from), dargs
		}
	}
	return nil, nil
}

// insertMessageSQL inserts a message (createMessage).
const insertMessageSQL = `INSERT INTO messages (id, conversation_id, contact_id, text, search_words, read_at, created_at, updated_at, attachment_count)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

// link links the attachments ids to the message, each by a conditional
// UPDATE; the caller keeps the message's attachment_count.
func (s *store) link(ctx context.Context, tx bun.Tx, messageID, conversationID string, ids []string) error {
	for _, id := range ids {
		n, err := affected(tx.ExecContext(ctx, `UPDATE attachments SET message_id = ?, conversation_id = ?
			WHERE id = ? AND (message_id IS NULL OR message_id = ?) AND (conversation_id IS NULL OR conversation_id = ?)`,
			messageID, conversationID, id, messageID, conversationID))
		if err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		cur, err := getAttachment(ctx, s.txReads(tx), id)
		switch {
		case err != nil:
			return err
		case cur.MessageID == messageID && cur.ConversationID == conversationID:
			// Already linked here (MySQL may count no changed row).
		case cur.MessageID != "" && cur.MessageID != messageID:
			return conflict("the attachment is linked to another message")
		default:
			return conflict("the attachment belongs to another conversation")
		}
	}
	return nil
}

// GetMessage returns the message with its contact, reactions and
// attachments, or an error matching ErrNotFound.
func (s *store) GetMessage(ctx context.Context, id string) (messaging.Message, error) {
	m, err := s.getMessage(ctx, id)
	return m, wrapErr("sqlstore.GetMessage", err)
}

func (s *store) getMessage(ctx context.Context, id string) (messaging.Message, error) {
	return readMessage(ctx, s.sql, s.readPrepared, s.readByIDs, id)
}

// readMessage reads the message id with its contact by read, and its
// reactions and attachments by byIDs.
func readMessage(ctx context.Context, d *dialectSQL, read, byIDs queryFn, id string) (messaging.Message, error) {
	var rows []messageRow
	if err := read(ctx, &rows, "SELECT "+messageCols+" FROM "+messageFrom+" WHERE m.id = ?", id); err != nil {
		return messaging.Message{}, err
	}
	if len(rows) == 0 {
		return messaging.Message{}, notFound("message")
	}
	ms, err := complete(ctx, d, byIDs, rows)
	if err != nil {
		return messaging.Message{}, err
	}
	return ms[0], nil
}

// complete turns rows into messages with their reactions and attachments,
// in at most two queries whatever the number of rows.
func complete(ctx context.Context, d *dialectSQL, query queryFn, rows []messageRow) ([]messaging.Message, error) {
	if len(rows) == 0 {
		return []messaging.Message{}, nil
	}
	// The ids of the messages with reactions and of those with
	// attachments, in one array, each id boxed once for both.
	buf := make(boxedIDs, 2*len(rows))
	withReactions, withAttachments := buf[:0:len(rows)], buf[len(rows):len(rows)]
	for i := range rows {
		r := &rows[i]
		if r.ReactionCount == 0 && r.AttachmentCount == 0 {
			continue
		}
		id := any(r.ID)
		if r.ReactionCount > 0 {
			withReactions = append(withReactions, id)
		}
		if r.AttachmentCount > 0 {
			withAttachments = append(withAttachments, id)
		}
	}
	rs, err := loadReactions(ctx, d, query, withReactions)
	if err != nil {
		return nil, err
	}
	as, err := loadAttachmentsOf(ctx, query, withAttachments)
	if err != nil {
		return nil, err
	}
	out := make([]messaging.Message, len(rows))
	for i := range rows {
		out[i] = rows[i].message()
	}
	if err := addThreadCounts(ctx, query, rows, out); err != nil {
		return nil, err
	}
	if len(rs) == 0 && len(as) == 0 {
		return out, nil
	}
	// A page is at most a few hundred messages: a search, not a map.
	index := func(id string) *messaging.Message {
		for i := range out {
			if out[i].ID == id {
				return &out[i]
			}
		}
		return nil
	}
	addReactions(index, rs)
	// The attachments of all the messages share one array, each message's
	// a full slice of it (an append to one reallocates it).
	all := make([]messaging.Attachment, len(as))
	for i, a := range as {
		all[i] = a.attachment()
		// Linked: its conversation is its message's (not read).
		all[i].ConversationID = index(a.MessageID).ConversationID
	}
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].MessageID == all[i].MessageID {
			j++
		}
		if m := index(all[i].MessageID); len(m.Attachments) == 0 {
			m.Attachments = all[i:j:j]
		} else {
			m.Attachments = append(m.Attachments, all[i:j]...)
		}
		i = j
	}
	return out, nil
}

// message returns the message of r, without reactions and attachments.
func (r *messageRow) message() messaging.Message {
	conv, parent := splitThread(r.ConversationID)
	return messaging.Message{
		ParentID:       parent,
		Deleted:        r.Deleted,
		ID:             r.ID,
		ConversationID: conv,
		Contact: messaging.Contact{
			ID:           r.ContactID,
			Username:     r.ContactUsername,
			PhoneNumber:  r.ContactPhoneNumber,
			AvatarURL:    r.ContactAvatarURL,
			LastActiveAt: utc(r.ContactLastActiveAt),
			CreatedAt:    utc(r.ContactCreatedAt),
		},
		Text:        r.Text,
		Reactions:   []messaging.Reaction{},
		Attachments: []messaging.Attachment{},
		ReadAt:      utc(r.ReadAt),
		CreatedAt:   utc(r.CreatedAt),
		UpdatedAt:   utc(r.UpdatedAt),
	}
}

// linkedAttachmentCols are attachmentCols but the conversation, which a
// linked attachment shares with its message.
const linkedAttachmentCols = "a.id, a.message_id, a.uploader_id, a.filename, a.file_type, a.file_size, a.sha256, a.image_width, a.image_height, a.blob_key, a.created_at"

// loadAttachmentsOf returns the attachments of the messages ids, oldest
// first, without ConversationID, which the caller takes from their
// messages: a column fewer a row (BENCHMARKS.md §1, 733 → 712 allocations
// of a first page).
func loadAttachmentsOf(ctx context.Context, query queryFn, ids boxedIDs) ([]attachmentRow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	as := make([]attachmentRow, 0, len(ids))
	var err error
	if len(ids) == 1 {
		err = query(ctx, &as, "SELECT "+linkedAttachmentCols+" FROM attachments AS a WHERE a.message_id = ? ORDER BY a.created_at, a.id", ids[0])
	} else {
		err = query(ctx, &as, "SELECT "+linkedAttachmentCols+" FROM attachments AS a WHERE a.message_id IN (?) ORDER BY a.created_at, a.id", ids)
	}
	return as, err
}

// attachmentsOfSQL reads the attachments of a message, oldest first.
const attachmentsOfSQL = "SELECT " + attachmentCols + " FROM attachments AS a WHERE a.message_id = ? ORDER BY a.created_at, a.id"

// ListMessages returns up to q.Limit messages matching q, newest first, and
// whether more exist beyond them in the direction of travel. A cursor by
// id (Time zero) must be a message of q's one conversation.
func (s *store) ListMessages(ctx context.Context, q driver.MessageQuery) ([]messaging.Message, bool, error) {
	items, more, err := s.listMessages(ctx, q)
	return items, more, wrapErr("sqlstore.ListMessages", err)
}

// messageQuery is a driver.MessageQuery with its cursors by id (Time zero)
// apart: AfterID and BeforeID replace After and Before.
type messageQuery struct {
	driver.MessageQuery
	AfterID, BeforeID string
}

// byID parts q's cursors by id from those with their Time.
func byID(q driver.MessageQuery) messageQuery {
	mq := messageQuery{MessageQuery: q}
	if q.After != nil && q.After.Time.IsZero() {
		mq.AfterID, mq.After = q.After.ID, nil
	}
	if q.Before != nil && q.Before.Time.IsZero() {
		mq.BeforeID, mq.Before = q.Before.ID, nil
	}
	return mq
}

func (s *store) listMessages(ctx context.Context, dq driver.MessageQuery) ([]messaging.Message, bool, error) {
	q := byID(dq)
	if q.Limit < 1 {
		return nil, false, invalid("limit must be at least 1")
	}
	convs, member, err := s.scope(ctx, q.All, q.MemberID, q.ConversationIDs, maxBranches)
	if err != nil {
		return nil, false, err
	}
	q.ConversationIDs, q.MemberID = convs, member
	cursorID := cmp.Or(q.AfterID, q.BeforeID)
	if cursorID != "" {
		if len(q.ConversationIDs) != 1 || q.All || q.MemberID != "" || q.After != nil || q.Before != nil || (q.AfterID != "" && q.BeforeID != "") {
			return nil, false, invalid("a cursor by id is for a list of one conversation, alone")
		}
		if !s.sql.subqueryBounds {
			// The cursor's row is read first.
			if q.After, q.Before, err = s.messageCursor(ctx, q); err != nil {
				return nil, false, err
			}
			q.AfterID, q.BeforeID, cursorID = "", "", ""
		}
	}
	query, args, fixed, ok := s.messagePageSQL(q)
	if !ok {
		return []messaging.Message{}, false, nil
	}
	read := s.read
	if fixed {
		read = s.readPrepared
	}
	rows := make([]messageRow, 0, q.Limit+1)
	if err := read(ctx, &rows, query, args...); err != nil {
		return nil, false, err
	}
	if len(rows) == 0 && cursorID != "" {
		// No row beyond the cursor, or no such cursor.
		if _, _, err := s.messageCursor(ctx, q); err != nil {
			return nil, false, err
		}
	}
	rows, more := trimPage(rows, q.Limit, q.Before != nil || q.BeforeID != "")
	items, err := complete(ctx, s.sql, s.readByIDs, rows)
	return items, more && err == nil, err
}

// messageCursor returns the cursor of q.AfterID (as after) or q.BeforeID
// (as before) in q's one conversation, or an error matching ErrNotFound.
func (s *store) messageCursor(ctx context.Context, q messageQuery) (after, before *driver.Cursor, err error) {
	id := cmp.Or(q.AfterID, q.BeforeID)
	r, err := readOne[messageRefRow](ctx, s.readPrepared, "message", messageRefSQL+" AND m.conversation_id = ?", id, q.ConversationIDs[0])
	if err != nil {
		return nil, nil, err
	}
	c := &driver.Cursor{Time: utc(r.CreatedAt), ID: r.ID}
	if q.AfterID != "" {
		return c, nil, nil
	}
	return nil, c, nil
}

// messagePageSQL returns the query of a page of messages, whether its plan
// suits every value of its arguments, or false when q matches nothing.
func (s *store) messagePageSQL(q messageQuery) (query string, args []any, fixed, ok bool) {
	p := pageQuery{cols: messageCols, from: messageFrom, alias: "m", after: q.After, before: q.Before, limit: q.Limit}
	if q.All {
		p.branches, fixed = []branch{{where: notThread("m.conversation_id")}}, true
	} else {
		convs := dedupe(q.ConversationIDs)
		p.branches, fixed = s.conversationBranches("m.conversation_id", q.MemberID, convs), q.MemberID == "" && len(convs) == 1
	}
	if len(p.branches) == 0 {
		return "", nil, false, false
	}
	if id := cmp.Or(q.AfterID, q.BeforeID); id != "" {
		p.cursorRow, p.cursorArgs, p.afterID = "messages AS x WHERE x.id = ? AND x.conversation_id = ?", []any{id, q.ConversationIDs[0]}, q.AfterID != ""
	}
	query, args = s.pageSQL(p)
	return query, args, fixed, true
}

// dedupe returns ss without repeats, in order.
func dedupe(ss []string) []string {
	seen := make(map[string]bool, len(ss))
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// UpdateMessage applies ch in one transaction, the message's row locked
// first, and returns the message as GetMessage would after it. Changes
// that arrive meanwhile are made together (combine.go, DESIGN.md §4.5):
// ch.Check and ch.Record may run on another goroutine, and again. Errors:
// ErrNotFound for a missing message or attachment, ErrConflict for an
// attachment linked elsewhere, ch.Check's error when it refuses the change.
func (s *store) UpdateMessage(ctx context.Context, id string, ch driver.MessageChange) (messaging.Message, error) {
	out, err := s.update(ctx, id, ch)
	return out, wrapErr("sqlstore.UpdateMessage", err)
}

// updatedRow is what UPDATE … RETURNING gives back of a changed message.
type updatedRow struct {
	Text      string    `bun:"text"`
	ReadAt    time.Time `bun:"read_at"`
	UpdatedAt time.Time `bun:"updated_at"`
}

// lockMessage locks the row of the message id in tx and reads it into row
// (dialectSQL.lockMessage); a deleted root is ErrNotFound.
func (s *store) lockMessage(ctx context.Context, tx bun.Tx, id string, row *messageRow) error {
	r, err := readOne[messageRow](ctx, s.txReads(tx), "message", s.sql.lockMessage, id)
	if err == nil && r.Deleted {
		err = notFound("message")
	} else if err == nil {
		*row = r
	}
	return err
}

// updateMessage makes ch on the message id in tx. row is the message's
// locked row as tx left it (zero: it is locked and read here), and is left
// as the change leaves it; ahead, unless nil, is reactPostgres's of ch.
func (s *store) updateMessage(ctx context.Context, tx bun.Tx, id string, ch driver.MessageChange, row *messageRow, ahead *reactedOne) (messaging.Message, error) {
	if row.ID == "" {
		if err := s.lockMessage(ctx, tx, id, row); err != nil {
			return messaging.Message{}, err
		}
	}
	// On PostgreSQL the reactions are one call, which also sets updated_at
	// and the counter, and returns the reactions after it (DESIGN.md §4.5).
	statement := s.sql.arrays && ch.Reactions != nil
	var err error
	if !statement {
		ahead = &reactedOne{}
		ahead.rc, err = s.react(ctx, tx, id, ch.Reactions, row.ReactionCount > 0, ch.Check != nil)
	} else if ahead == nil {
		var made []reactedOne
		if made, err = s.reactPostgres(ctx, tx, id, []driver.MessageChange{ch}); err == nil {
			ahead = &made[0]
		}
	}
	if err != nil {
		return messaging.Message{}, err
	}
	rc, rs := ahead.rc, ahead.reactions
	if st := ahead.stored; st != nil {
		row.Text, row.ReadAt, row.UpdatedAt = st.Text, st.ReadAt, st.UpdatedAt
	}
	names := row.ReactionCount + rc.names
	if err := s.keepRevision(ctx, tx, id, row.Text, ch); err != nil {
		return messaging.Message{}, err
	}
	// A reply's attachments are its conversation's, not its thread's.
	conv, _ := splitThread(row.ConversationID)
	if a := ch.NewAttachment; a != nil {
		linked := *a
		linked.MessageID, linked.ConversationID = id, conv
		if err := consumeReservation(ctx, tx, ch.Reservation); err != nil {
			return messaging.Message{}, err
		}
		if err := insertAttachment(ctx, tx, linked); err != nil {
			return messaging.Message{}, err
		}
	}
	if err := s.link(ctx, tx, id, conv, ch.LinkAttachments); err != nil {
		return messaging.Message{}, err
	}
	var as []attachmentRow
	if len(ch.LinkAttachments) > 0 || row.AttachmentCount > 0 || ch.NewAttachment != nil {
		if err = s.txRead(ctx, tx, &as, attachmentsOfSQL, id); err != nil {
			return messaging.Message{}, err
		}
	}
	if ch.Check != nil {
		before := driver.MessageCounts{ReactionNames: row.ReactionCount, Attachments: row.AttachmentCount, ReactorNames: rc.reactorBefore}
		after := driver.MessageCounts{ReactionNames: names, Attachments: len(as), ReactorNames: rc.reactorAfter}
		if err := ch.Check(before, after); err != nil {
			return messaging.Message{}, err
		}
	}
	// The answer embeds a bounded number of reactors of each name.
	if names > 0 && !statement {
		if rs, err = loadReactions(ctx, s.sql, s.txReads(tx), boxedIDs{id}); err != nil {
			return messaging.Message{}, err
		}
	}

	// One UPDATE for the fields and the counters reactPostgres left.
	var sets []string
	var args []any
	if ch.Text != nil {
		sets, args = append(sets, "text = ?", "search_words = ?"), append(args, *ch.Text, s.searchWords(*ch.Text))
	}
	if ch.Read != nil && *ch.Read {
		sets, args = append(sets, "read_at = COALESCE(read_at, ?)"), append(args, ts(ch.ReadAt))
	} else if ch.Read != nil {
		sets = append(sets, "read_at = NULL")
	}
	if !ch.UpdatedAt.IsZero() && !statement {
		sets, args = append(sets, "updated_at = ?"), append(args, ch.UpdatedAt.UTC())
	}
	fields := len(sets) > 0
	if names != row.ReactionCount && !statement {
		sets, args = append(sets, "reaction_count = ?"), append(args, names)
	}
	if len(as) != row.AttachmentCount {
		sets, args = append(sets, "attachment_count = ?"), append(args, len(as))
	}
	if len(sets) > 0 {
		update := "UPDATE messages SET " + strings.Join(sets, ", ") + " WHERE id = ?"
		args = append(args, id)
		if fields && s.sql.returning {
			// The stored values, as a read would return them.
			got, err := readOne[updatedRow](ctx, s.txReads(tx), "message", update+" RETURNING text, read_at, updated_at", args...)
			if err != nil {
				return messaging.Message{}, err
			}
			row.Text, row.ReadAt, row.UpdatedAt = got.Text, got.ReadAt, got.UpdatedAt
		} else if _, err := s.execWrite(ctx, tx, update, args...); err != nil {
			return messaging.Message{}, err
		}
	}
	row.ReactionCount, row.AttachmentCount = names, len(as)
	if !s.sql.returning {
		// The updated row with its contact, read without locking the contact.
		if *row, err = readOne[messageRow](ctx, s.txReads(tx), "message", "SELECT "+messageCols+" FROM "+messageFrom+" WHERE m.id = ?", id); err != nil {
			return messaging.Message{}, err
		}
	}
	m := row.message()
	addReactions(func(string) *messaging.Message { return &m }, rs)
	m.Attachments = attachmentsOf(as)
	return m, nil
}

// DeleteMessage removes the message, its reactions and its attachment rows
// and records the attachments' keys as pending deletions, in one
// transaction. It returns the removed attachments, oldest first, or an
// error matching ErrNotFound.
func (s *store) DeleteMessage(ctx context.Context, id string, rec driver.Recorder) ([]messaging.Attachment, error) {
	var out []messaging.Attachment
	err := s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		var r messageRow
		if err := s.lockMessage(ctx, tx, id, &r); err != nil {
			return err
		}
		conv, parent := splitThread(r.ConversationID)
		var tomb bool
		var err error
		if parent == "" && r.Thread {
			if tomb, err = s.hasReplies(ctx, tx, threadKey(conv, id)); err != nil {
				return err
			}
		}
		out = []messaging.Attachment{}
		var del []string // the tables holding rows of the message
		if r.AttachmentCount > 0 {
			var as []attachmentRow
			if err := s.txRead(ctx, tx, &as, attachmentsOfSQL+s.sql.forUpdate, id); err != nil {
				return err
			}
			out = attachmentsOf(as)
			keys := make([]string, len(as))
			for i, a := range as {
				keys[i] = a.Key
			}
			if err := s.addPending(ctx, tx, keys...); err != nil {
				return err
			}
			del = append(del, "attachments")
		}
		if !r.UpdatedAt.IsZero() { // an edited message may have revisions
			del = append(del, "message_revisions")
		}
		if r.ReactionCount > 0 {
			del = append(del, "reactions", "reaction_names")
		}
		for _, table := range del {
			if _, err := s.execWrite(ctx, tx, "DELETE FROM "+table+" WHERE message_id = ?", id); err != nil {
				return err
			}
		}
		gone := messaging.Message{ID: id, ConversationID: conv, Contact: messaging.Contact{ID: r.ContactID}, ParentID: parent}
		ch := driver.Change{Message: &gone, Removed: out}
		if tomb {
			// A root with replies keeps its place (threads.go).
			if _, err := s.execWrite(ctx, tx, tombstoneSQL, s.searchWords(""), id); err != nil {
				return err
			}
			return s.record(ctx, tx, rec, ch)
		}
		if parent != "" {
			// Its root before its thread's row, as a reply's send takes them
			// (insertReplySQL, takeReply): deadlocks otherwise.
			var roots []string
			if err := s.txRead(ctx, tx, &roots, "SELECT m.id FROM messages AS m WHERE m.id = ?"+s.sql.forUpdate, parent); err != nil {
				return err
			}
		}
		if err := s.removeMessage(ctx, tx, &r); err != nil {
			return err
		}
		if parent != "" {
			if ch.RemovedRoot, err = s.replyGone(ctx, tx, conv, parent); err != nil {
				return err
			}
		}
		return s.record(ctx, tx, rec, ch)
	})
	if err != nil {
		return nil, wrapErr("sqlstore.DeleteMessage", err)
	}
	return out, nil
}
