package sqlstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/messaging"
)

// messageRow is a row of messages joined with its contact.
type messageRow struct {
	ID             string    `bun:"id"`
	ConversationID string    `bun:"conversation_id"`
	ContactID      string    `bun:"contact_id"`
	Text           string    `bun:"text"`
	ReadAt         time.Time `bun:"read_at"`
	CreatedAt      time.Time `bun:"created_at"`
	UpdatedAt      time.Time `bun:"updated_at"`

	ContactUsername     string    `bun:"contact_username"`
	ContactPhoneNumber  string    `bun:"contact_phone_number"`
	ContactAvatarURL    string    `bun:"contact_avatar_url"`
	ContactLastActiveAt time.Time `bun:"contact_last_active_at"`
	ContactCreatedAt    time.Time `bun:"contact_created_at"`
}

const (
	messageCols = `m.id, m.conversation_id, m.contact_id, m.text, m.read_at, m.created_at, m.updated_at,
		c.username AS contact_username, c.phone_number AS contact_phone_number, c.avatar_url AS contact_avatar_url,
		c.last_active_at AS contact_last_active_at, c.created_at AS contact_created_at`
	messageFrom = `messages AS m LEFT JOIN contacts AS c ON c.id = m.contact_id`
)

// reactionRow is a row of reactions.
type reactionRow struct {
	MessageID string `bun:"message_id"`
	Name      string `bun:"name"`
	Reactor   string `bun:"reactor"`
}

// CreateMessage stores m and links the attachments attachmentIDs to it in
// one transaction. Errors: ErrNotFound for a missing attachment,
// ErrConflict for one linked to another message or of another
// conversation, or for a message id that exists.
func (s *Store) CreateMessage(ctx context.Context, m messaging.Message, attachmentIDs []string) error {
	return wrapErr("sqlstore.CreateMessage", s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO messages (id, conversation_id, contact_id, text, read_at, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`,
			m.ID, m.ConversationID, m.Contact.ID, m.Text, ts(m.ReadAt), m.CreatedAt.UTC(), ts(m.UpdatedAt))
		if isUniqueViolation(err) {
			return conflict("a message with this id exists")
		}
		if err != nil {
			return err
		}
		return s.link(ctx, tx, m.ID, m.ConversationID, attachmentIDs)
	}))
}

// link links the attachments ids to the message, each by one conditional
// UPDATE, so that of two transactions linking one attachment elsewhere
// exactly one succeeds.
func (s *Store) link(ctx context.Context, tx bun.Tx, messageID, conversationID string, ids []string) error {
	for _, id := range ids {
		res, err := tx.ExecContext(ctx, `UPDATE attachments SET message_id = ?, conversation_id = ?
			WHERE id = ? AND (message_id IS NULL OR message_id = ?) AND (conversation_id IS NULL OR conversation_id = ?)`,
			messageID, conversationID, id, messageID, conversationID)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		var cur []attachmentRow
		if err := tx.NewRaw("SELECT "+attachmentCols+" FROM attachments AS a WHERE a.id = ?", id).Scan(ctx, &cur); err != nil {
			return err
		}
		switch {
		case len(cur) == 0:
			return notFound("attachment")
		case cur[0].MessageID == messageID && cur[0].ConversationID == conversationID:
			// Already linked here (MySQL may count no changed row).
		case cur[0].MessageID != "" && cur[0].MessageID != messageID:
			return conflict("the attachment is linked to another message")
		default:
			return conflict("the attachment belongs to another conversation")
		}
	}
	return nil
}

// GetMessage returns the message with its contact, reactions and
// attachments, or an error matching ErrNotFound.
func (s *Store) GetMessage(ctx context.Context, id string) (messaging.Message, error) {
	m, err := s.getMessage(ctx, s.r, id)
	return m, wrapErr("sqlstore.GetMessage", err)
}

func (s *Store) getMessage(ctx context.Context, db bun.IDB, id string) (messaging.Message, error) {
	var rows []messageRow
	if err := db.NewRaw("SELECT "+messageCols+" FROM "+messageFrom+" WHERE m.id = ?", id).Scan(ctx, &rows); err != nil {
		return messaging.Message{}, err
	}
	if len(rows) == 0 {
		return messaging.Message{}, notFound("message")
	}
	ms, err := s.complete(ctx, db, rows)
	if err != nil {
		return messaging.Message{}, err
	}
	return ms[0], nil
}

// complete turns rows into messages with their reactions and attachments,
// in two queries whatever the number of rows.
func (s *Store) complete(ctx context.Context, db bun.IDB, rows []messageRow) ([]messaging.Message, error) {
	if len(rows) == 0 {
		return []messaging.Message{}, nil
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	// Names in their order, each name's reactors in theirs.
	var rs []reactionRow
	if err := db.NewRaw(`SELECT r.message_id, r.name, r.reactor FROM reactions AS r
		JOIN reaction_names AS n ON n.message_id = r.message_id AND n.name = r.name
		WHERE r.message_id IN (?) ORDER BY n.seq, r.seq`,
		bun.List(ids)).Scan(ctx, &rs); err != nil {
		return nil, err
	}
	var as []attachmentRow
	if err := db.NewRaw("SELECT "+attachmentCols+" FROM attachments AS a WHERE a.message_id IN (?) ORDER BY a.created_at, a.id",
		bun.List(ids)).Scan(ctx, &as); err != nil {
		return nil, err
	}
	out := make([]messaging.Message, len(rows))
	index := make(map[string]*messaging.Message, len(rows))
	for i, r := range rows {
		out[i] = messaging.Message{
			ID:             r.ID,
			ConversationID: r.ConversationID,
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
			Attachments: []attachments.Attachment{},
			ReadAt:      utc(r.ReadAt),
			CreatedAt:   utc(r.CreatedAt),
			UpdatedAt:   utc(r.UpdatedAt),
		}
		index[r.ID] = &out[i]
	}
	for _, r := range rs {
		m := index[r.MessageID]
		i := len(m.Reactions) - 1
		for ; i >= 0 && m.Reactions[i].Name != r.Name; i-- {
		}
		if i < 0 {
			m.Reactions = append(m.Reactions, messaging.Reaction{Name: r.Name})
			i = len(m.Reactions) - 1
		}
		m.Reactions[i].Reactors = append(m.Reactions[i].Reactors, r.Reactor)
	}
	for _, a := range as {
		m := index[a.MessageID]
		m.Attachments = append(m.Attachments, a.attachment())
	}
	return out, nil
}

// ListMessages returns up to q.Limit messages matching q, newest first, and
// whether more exist beyond them in the direction of travel, in three
// queries: the messages with their contacts, their reactions, their
// attachments.
func (s *Store) ListMessages(ctx context.Context, q messaging.ListQuery) ([]messaging.Message, bool, error) {
	items, more, err := s.listMessages(ctx, q)
	return items, more, wrapErr("sqlstore.ListMessages", err)
}

func (s *Store) listMessages(ctx context.Context, q messaging.ListQuery) ([]messaging.Message, bool, error) {
	if q.Limit < 1 {
		return nil, false, invalid("limit must be at least 1")
	}
	query, args, ok := s.messagePageSQL(q)
	if !ok {
		return []messaging.Message{}, false, nil
	}
	var rows []messageRow
	if err := s.r.NewRaw(query, args...).Scan(ctx, &rows); err != nil {
		return nil, false, err
	}
	rows, more := trimPage(rows, q.Limit, q.Before != nil)
	items, err := s.complete(ctx, s.r, rows)
	if err != nil {
		return nil, false, err
	}
	return items, more, nil
}

// messagePageSQL returns the query of a page of messages (with contacts),
// or false when q matches nothing.
func (s *Store) messagePageSQL(q messaging.ListQuery) (string, []any, bool) {
	p := pageQuery{cols: messageCols, from: messageFrom, alias: "m", after: q.After, before: q.Before, limit: q.Limit}
	switch convs := dedupe(q.ConversationIDs); {
	case q.All:
		p.branches = []branch{{}}
	case len(convs) == 0:
		return "", nil, false
	case len(convs) <= maxBranches:
		for _, c := range convs {
			p.branches = append(p.branches, branch{where: "m.conversation_id = ?", args: []any{c}})
		}
	default:
		p.branches = []branch{{where: "m.conversation_id IN (?)", args: []any{bun.List(convs)}}}
	}
	query, args := s.pageSQL(p)
	return query, args, true
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

// UpdateMessage applies ch in one transaction and returns the message as
// GetMessage would after it. The message row is locked first, so changes
// of one message, and their limits, are serialized. Errors: ErrNotFound for
// a missing message or attachment, ErrConflict for an attachment linked
// elsewhere, ErrInvalid when the change would add reaction names or
// attachments beyond ch.MaxReactionNames or ch.MaxAttachments.
func (s *Store) UpdateMessage(ctx context.Context, id string, ch messaging.Change) (messaging.Message, error) {
	var out messaging.Message
	err := s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		var convs []string
		if err := tx.NewRaw("SELECT conversation_id FROM messages WHERE id = ?"+s.forUpdate(), id).Scan(ctx, &convs); err != nil {
			return err
		}
		if len(convs) == 0 {
			return notFound("message")
		}
		var sets []string
		var args []any
		if ch.Text != nil {
			sets, args = append(sets, "text = ?"), append(args, *ch.Text)
		}
		if ch.Read != nil {
			if *ch.Read {
				sets, args = append(sets, "read_at = COALESCE(read_at, ?)"), append(args, ts(ch.ReadAt))
			} else {
				sets = append(sets, "read_at = NULL")
			}
		}
		if !ch.UpdatedAt.IsZero() {
			sets, args = append(sets, "updated_at = ?"), append(args, ch.UpdatedAt.UTC())
		}
		if len(sets) > 0 {
			if _, err := tx.ExecContext(ctx, "UPDATE messages SET "+strings.Join(sets, ", ")+" WHERE id = ?", append(args, id)...); err != nil {
				return err
			}
		}
		if err := s.react(ctx, tx, id, ch); err != nil {
			return err
		}
		if len(ch.LinkAttachments) > 0 {
			countLinks := "SELECT COUNT(*) FROM attachments WHERE message_id = ?"
			var before, after int
			if ch.MaxAttachments > 0 {
				if err := tx.NewRaw(countLinks, id).Scan(ctx, &before); err != nil {
					return err
				}
			}
			if err := s.link(ctx, tx, id, convs[0], ch.LinkAttachments); err != nil {
				return err
			}
			if ch.MaxAttachments > 0 {
				if err := tx.NewRaw(countLinks, id).Scan(ctx, &after); err != nil {
					return err
				}
				if after > ch.MaxAttachments && after > before {
					return &messaging.Error{Kind: messaging.ErrInvalid, Code: "parameter_invalid", Param: "attachments", Message: "too many attachments on the message"}
				}
			}
		}
		var err error
		out, err = s.getMessage(ctx, tx, id)
		return err
	})
	return out, wrapErr("sqlstore.UpdateMessage", err)
}

// react applies ch's reaction changes to the locked message id.
func (s *Store) react(ctx context.Context, tx bun.Tx, id string, ch messaging.Change) error {
	countNames := "SELECT COUNT(*) FROM reaction_names WHERE message_id = ?"
	limit := ch.MaxReactionNames > 0 && len(ch.AddReactions) > 0
	var before int
	if limit {
		if err := tx.NewRaw(countNames, id).Scan(ctx, &before); err != nil {
			return err
		}
	}
	type pair struct{ name, reactor string }
	var names []string
	var add []pair
	seen := map[pair]bool{}
	for _, r := range ch.AddReactions {
		for _, who := range r.Reactors {
			if p := (pair{r.Name, who}); !seen[p] {
				seen[p] = true
				add = append(add, p)
				if !slices.Contains(names, r.Name) {
					names = append(names, r.Name)
				}
			}
		}
	}
	if len(add) > 0 {
		// Two statements, rows in the order given: seq follows it, and a
		// name or reactor already there is skipped by its unique key.
		onConflict := " ON CONFLICT DO NOTHING"
		if s.flavor == flavorMySQL {
			onConflict = " ON DUPLICATE KEY UPDATE seq = seq"
		}
		values := strings.Repeat("(?, ?), ", len(names))
		args := make([]any, 0, 2*len(names))
		for _, n := range names {
			args = append(args, id, n)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO reaction_names (message_id, name) VALUES "+values[:len(values)-2]+onConflict, args...); err != nil {
			return err
		}
		values = strings.Repeat("(?, ?, ?), ", len(add))
		args = make([]any, 0, 3*len(add))
		for _, p := range add {
			args = append(args, id, p.name, p.reactor)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO reactions (message_id, name, reactor) VALUES "+values[:len(values)-2]+onConflict, args...); err != nil {
			return err
		}
	}
	if r := ch.RemoveReaction; r != nil && len(r.Reactors) > 0 {
		if _, err := tx.ExecContext(ctx, "DELETE FROM reactions WHERE message_id = ? AND name = ? AND reactor IN (?)",
			id, r.Name, bun.List(r.Reactors)); err != nil {
			return err
		}
		// A name left with no reactors disappears (and loses its place).
		if _, err := tx.ExecContext(ctx, `DELETE FROM reaction_names WHERE message_id = ? AND name = ?
			AND NOT EXISTS (SELECT 1 FROM reactions AS r WHERE r.message_id = ? AND r.name = ?)`,
			id, r.Name, id, r.Name); err != nil {
			return err
		}
	}
	if limit {
		var after int
		if err := tx.NewRaw(countNames, id).Scan(ctx, &after); err != nil {
			return err
		}
		if after > ch.MaxReactionNames && after > before {
			return &messaging.Error{Kind: messaging.ErrInvalid, Code: "parameter_invalid", Param: "reactions", Message: "too many distinct reactions on the message"}
		}
	}
	return nil
}

// DeleteMessage removes the message, its reactions and its attachment rows
// and records the attachments' keys as pending deletions, in one
// transaction. It returns the removed attachments, oldest first, or an
// error matching ErrNotFound.
func (s *Store) DeleteMessage(ctx context.Context, id string) ([]attachments.Attachment, error) {
	var out []attachments.Attachment
	err := s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		var n []string
		if err := tx.NewRaw("SELECT id FROM messages WHERE id = ?"+s.forUpdate(), id).Scan(ctx, &n); err != nil {
			return err
		}
		if len(n) == 0 {
			return notFound("message")
		}
		var as []attachmentRow
		if err := tx.NewRaw("SELECT "+attachmentCols+" FROM attachments AS a WHERE a.message_id = ? ORDER BY a.created_at, a.id"+s.forUpdate(), id).Scan(ctx, &as); err != nil {
			return err
		}
		out = make([]attachments.Attachment, len(as))
		keys := make([]string, len(as))
		for i, a := range as {
			out[i], keys[i] = a.attachment(), a.Key
		}
		if err := s.addPending(ctx, tx, keys...); err != nil {
			return err
		}
		for _, q := range []string{
			"DELETE FROM attachments WHERE message_id = ?",
			"DELETE FROM reactions WHERE message_id = ?",
			"DELETE FROM reaction_names WHERE message_id = ?",
			"DELETE FROM messages WHERE id = ?",
		} {
			if _, err := tx.ExecContext(ctx, q, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrapErr("sqlstore.DeleteMessage", err)
	}
	return out, nil
}
