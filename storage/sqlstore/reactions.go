package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// Reactions are stored one row per reactor of a name (reactions), under a
// row per name (reaction_names) that keeps the name's place, its number of
// reactors and head_seq, the seq of its messaging.MaxEmbeddedReactors-th
// reactor: a message embeds the reactors up to head_seq, so that no read
// or write of a reaction reads all its reactors.

// noHead is the head_seq of a reaction name with fewer than
// messaging.MaxEmbeddedReactors reactors: every reactor is embedded.
const noHead = "9223372036854775807"

// headSQL is the head_seq of the reaction (message_id, name) given as the
// SQL expressions msg and name: the seq of its MaxEmbeddedReactors-th reactor.
func headSQL(msg, name string) string {
	return "COALESCE((SELECT h.seq FROM reactions AS h WHERE h.message_id = " + msg + " AND h.name = " + name +
		" ORDER BY h.seq LIMIT 1 OFFSET " + embeddedOffset + "), " + noHead + ")"
}

// embeddedOffset is messaging.MaxEmbeddedReactors - 1, for SQL.
const embeddedOffset = "99"

// backfillReactorCounts sets the number of reactors of each name (Load).
const backfillReactorCounts = `UPDATE reaction_names SET reactors = (SELECT COUNT(*) FROM reactions AS r
	WHERE r.message_id = reaction_names.message_id AND r.name = reaction_names.name)`

// reactionRow is a reaction of a message with its embedded reactors, or
// some of them: their usernames joined by reactorSep, in their order.
type reactionRow struct {
	MessageID string         `bun:"message_id"`
	Name      string         `bun:"name"`
	Count     int            `bun:"reactor_count"`
	Reactors  sql.NullString `bun:"reactors"`
}

// reactorSep separates the usernames of reactionRow.Reactors: a control
// character, which no username has (messaging.Service.SaveContact).
const reactorSep = "\x1f"

// reactionsCols are the columns of the reactions' reads but reactors.
const reactionsCols = `n.message_id, n.name, n.reactors AS reactor_count`

// reactionsBySQL returns the read of the embedded reactors
// (dialectSQL.reactions), one row per name, given agg, which joins a
// name's reactors up to its head_seq in their order (BENCHMARKS.md §8).
// It ends with "n.message_id ", for "= ?" or "IN (?)".
func reactionsBySQL(agg string) string {
	return `SELECT ` + reactionsCols + `, (` + agg + `) AS reactors
	FROM reaction_names AS n WHERE n.message_id `
}

// reactionsRowsSQL is reactionsBySQL with a row per reactor (MySQL, whose
// GROUP_CONCAT is cut at group_concat_max_len): each name's reactors are a
// range of the index (message_id, name, seq, contact_id).
const reactionsRowsSQL = `SELECT ` + reactionsCols + `, COALESCE(c.username, '') AS reactors
	FROM reaction_names AS n
	CROSS JOIN reactions AS r
	LEFT JOIN contacts AS c ON c.id = r.contact_id
	WHERE r.message_id = n.message_id AND r.name = n.name AND r.seq <= n.head_seq AND n.message_id `

// loadReactions returns the embedded reactions of the messages ids: names
// in their order, each name's first reactors in theirs. No ids, no query.
func loadReactions(ctx context.Context, d *dialectSQL, query queryFn, ids boxedIDs) ([]reactionRow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var rs []reactionRow
	cond, arg := "= ?", ids[0]
	if len(ids) > 1 {
		cond, arg = "IN (?)", ids
	}
	err := query(ctx, &rs, d.reactions+cond+d.reactionsOrder, arg)
	return rs, err
}

// addReactions sets the reactions of the messages (index finds one by
// id) from rs, in loadReactions's order, all in two arrays, each message's
// a full slice of them. A name without reactors read (NULL) is left out.
func addReactions(index func(id string) *messaging.Message, rs []reactionRow) {
	rs = slices.DeleteFunc(rs, func(r reactionRow) bool { return !r.Reactors.Valid })
	if len(rs) == 0 {
		return
	}
	total, names := 0, 0
	for i, r := range rs {
		total += strings.Count(r.Reactors.String, reactorSep) + 1
		if i == 0 || r.MessageID != rs[i-1].MessageID || r.Name != rs[i-1].Name {
			names++
		}
	}
	reactors := make([]string, 0, total)
	reactions := make([]messaging.Reaction, 0, names)
	first := 0 // the first reaction of the message under way
	for i := 0; i < len(rs); {
		start, j := len(reactors), i
		for ; j < len(rs) && rs[j].MessageID == rs[i].MessageID && rs[j].Name == rs[i].Name; j++ {
			for who := range strings.SplitSeq(rs[j].Reactors.String, reactorSep) {
				reactors = append(reactors, who)
			}
		}
		reactions = append(reactions, messaging.Reaction{Name: rs[i].Name, Reactors: reactors[start:len(reactors):len(reactors)], Count: rs[i].Count})
		if j == len(rs) || rs[j].MessageID != rs[i].MessageID {
			if m := index(rs[i].MessageID); m != nil {
				m.Reactions = reactions[first:len(reactions):len(reactions)]
			}
			first = len(reactions)
		}
		i = j
	}
}

// reacted is what react changed: names, the change in the number of names;
// reactorBefore and reactorAfter, MessageCounts.ReactorNames, counted when
// count is set and the change adds names.
type reacted struct{ names, reactorBefore, reactorAfter int }

// react applies rc, a MessageChange's reactions (nil: none), to the
// locked message id, which has reactions if hasReactions, reading no
// name's every reactor. With count, it counts the reactor's names.
func (s *store) react(ctx context.Context, tx bun.Tx, id string, rc *driver.ReactionChange, hasReactions, count bool) (reacted, error) {
	var out reacted
	if rc == nil {
		return out, nil
	}
	who := rc.ContactID
	names := dedupe(rc.Add)
	// Inserts that do nothing when the row is there, and count no row
	// then (every value is checked before).
	insert, onConflict := s.sql.insertNew, s.sql.insertNewTail
	if len(names) > 0 {
		own := 0 // the names the reactor has
		if count {
			if err := s.txRead(ctx, tx, &own, "SELECT COUNT(*) FROM reactions WHERE message_id = ? AND contact_id = ?", id, who); err != nil {
				return out, err
			}
			out.reactorBefore = own
		}
		// Names first (a reactor's row refers to its name's), in the order
		// given: seq follows it, and a name already there is skipped.
		values := strings.Repeat("(?, ?), ", len(names))
		args := make([]any, 0, 2*len(names))
		for _, n := range names {
			args = append(args, id, n)
		}
		n, err := affected(s.execWrite(ctx, tx, insert+" reaction_names (message_id, name) VALUES "+values[:len(values)-2]+onConflict, args...))
		if err != nil {
			return out, err
		}
		out.names += int(n)
		// One insert per name, which does nothing when the reactor is
		// there: its count of affected rows says whether the name gained it.
		at := rc.At
		if at.IsZero() {
			at = time.Now()
		}
		for _, name := range names {
			n, err := affected(s.execWrite(ctx, tx, insert+" reactions (message_id, name, contact_id, created_at) VALUES (?, ?, ?, ?)"+onConflict,
				id, name, who, at.UTC()))
			if err != nil {
				return out, err
			} else if n == 0 {
				continue
			}
			own++
			// head_seq moves only when the name reaches the embedded count,
			// and before reactors: MySQL assigns in order, seeing new values.
			if _, err := s.execWrite(ctx, tx, `UPDATE reaction_names SET
				head_seq = CASE WHEN reactors = `+embeddedOffset+` THEN `+headSQL("?", "?")+` ELSE head_seq END,
				reactors = reactors + 1 WHERE message_id = ? AND name = ?`, id, name, id, name); err != nil {
				return out, err
			}
		}
		out.reactorAfter = own
	}
	// Nothing to remove from a message without reactions.
	if !hasReactions && len(names) == 0 {
		return out, nil
	}
	for _, name := range rc.Remove {
		var seqs []int64
		if err := s.txRead(ctx, tx, &seqs, "SELECT seq FROM reactions WHERE message_id = ? AND name = ? AND contact_id = ?",
			id, name, who); err != nil {
			return out, err
		}
		if len(seqs) == 0 {
			continue
		}
		if count && len(names) > 0 {
			out.reactorAfter--
		}
		if _, err := s.execWrite(ctx, tx, "DELETE FROM reactions WHERE message_id = ? AND name = ? AND contact_id = ?",
			id, name, who); err != nil {
			return out, err
		}
		// A reactor removed from the embedded ones lets the next one in.
		if _, err := s.execWrite(ctx, tx, `UPDATE reaction_names SET
			head_seq = CASE WHEN head_seq >= ? THEN `+headSQL("?", "?")+` ELSE head_seq END,
			reactors = reactors - 1 WHERE message_id = ? AND name = ?`, seqs[0], id, name, id, name); err != nil {
			return out, err
		}
		// A name left with no reactors disappears (and loses its place).
		n, err := affected(s.execWrite(ctx, tx, "DELETE FROM reaction_names WHERE message_id = ? AND name = ? AND reactors <= 0", id, name))
		if err != nil {
			return out, err
		}
		out.names -= int(n)
	}
	return out, nil
}

// messageRefSQL reads a message's messageRefRow by its id.
const messageRefSQL = "SELECT m.id, m.conversation_id, m.contact_id, m.created_at, m.deleted FROM messages AS m WHERE m.id = ?"

// messageRefRow is what LookupMessage reads of a message.
type messageRefRow struct {
	ID             string    `bun:"id"`
	ConversationID string    `bun:"conversation_id"`
	ContactID      string    `bun:"contact_id"`
	CreatedAt      time.Time `bun:"created_at"`
	Deleted        bool      `bun:"deleted"`
}

// LookupMessage returns the conversation, sender and creation time of the
// message in one query on its row, or an error matching ErrNotFound.
func (s *store) LookupMessage(ctx context.Context, id string) (driver.MessageRef, error) {
	r, err := readOne[messageRefRow](ctx, s.readPrepared, "message", messageRefSQL, id)
	if err != nil {
		return driver.MessageRef{}, wrapErr("sqlstore.LookupMessage", err)
	}
	conv, parent := splitThread(r.ConversationID)
	return driver.MessageRef{ID: r.ID, ConversationID: conv, SenderID: r.ContactID, CreatedAt: utc(r.CreatedAt), ParentID: parent, Deleted: r.Deleted}, nil
}

// reactorRow is a row of ListReactors.
type reactorRow struct {
	ContactID string    `bun:"contact_id"`
	Username  string    `bun:"username"`
	CreatedAt time.Time `bun:"created_at"`
}

// ListReactors returns a page of the reactors of a reaction in the order
// they came, by a range of an index. A cursor that is not a reactor is an
// error matching ErrNotFound.
func (s *store) ListReactors(ctx context.Context, q driver.ReactorQuery) (_ []messaging.Reactor, _ bool, err error) {
	defer wrapTo("sqlstore.ListReactors", &err)
	if q.Limit < 1 {
		return nil, false, invalid("limit must be at least 1")
	}
	query := `SELECT r.contact_id, COALESCE(c.username, '') AS username, r.created_at FROM reactions AS r
		LEFT JOIN contacts AS c ON c.id = r.contact_id WHERE r.message_id = ? AND r.name = ?`
	args := []any{q.MessageID, q.Name}
	order := " ORDER BY r.seq LIMIT ?"
	after, before := cursorID(q.After), cursorID(q.Before)
	if cursor := cmp.Or(after, before); cursor != "" {
		seq, err := readOne[int64](ctx, s.read, "reactor", "SELECT seq FROM reactions WHERE message_id = ? AND contact_id = ? AND name = ?", q.MessageID, cursor, q.Name)
		if err != nil {
			return nil, false, err
		}
		if after != "" {
			query += " AND r.seq > ?"
		} else {
			query += " AND r.seq < ?"
			order = " ORDER BY r.seq DESC LIMIT ?"
		}
		args = append(args, seq)
	}
	var rows []reactorRow
	if err := s.read(ctx, &rows, query+order, append(args, q.Limit+1)...); err != nil {
		return nil, false, err
	}
	rows, more := trimPage(rows, q.Limit, before != "")
	out := make([]messaging.Reactor, len(rows))
	for i, r := range rows {
		out[i] = messaging.Reactor{ContactID: r.ContactID, Username: r.Username, ReactedAt: utc(r.CreatedAt)}
	}
	return out, more, nil
}
