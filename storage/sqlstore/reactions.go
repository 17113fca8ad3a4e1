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

// Reactions are stored by the reactor's contact id, one row per reactor
// of a name (reactions), under a row per name (reaction_names) that keeps
// the name's place, its number of reactors and head_seq, the seq of its
// messaging.MaxEmbeddedReactors-th reactor (noHead while it has fewer):
// a message embeds the reactors up to head_seq, so that reading or
// changing a reaction reads a bounded number of rows, and never all its
// reactors. A write keeps both counters in place.

// noHead is the head_seq of a reaction name with fewer than
// messaging.MaxEmbeddedReactors reactors: every reactor is embedded.
const noHead = "9223372036854775807"

// headSQL is the head_seq of the reaction (message_id, name) given as the
// SQL expressions msg and name: the seq of its
// messaging.MaxEmbeddedReactors-th reactor, or noHead. It reads at most
// that many index entries.
func headSQL(msg, name string) string {
	return "COALESCE((SELECT h.seq FROM reactions AS h WHERE h.message_id = " + msg + " AND h.name = " + name +
		" ORDER BY h.seq LIMIT 1 OFFSET " + embeddedOffset + "), " + noHead + ")"
}

// embeddedOffset is messaging.MaxEmbeddedReactors - 1, for SQL.
const embeddedOffset = "99"

// embeddedCount is messaging.MaxEmbeddedReactors, for SQL.
const embeddedCount = "100"

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

// reactionsCols are the columns of reactionsSQL (reactionsRowsSQL's
// reactors is a column, not an expression).
const reactionsCols = `n.message_id, n.name, n.reactors AS reactor_count`

// reactionsSQL reads the embedded reactors of the messages that the
// condition on n.message_id selects, one row per name in the names'
// order: each name's reactors up to its head_seq, a range of the index
// (message_id, name, seq, contact_id), aggregated in their order into one string. One
// row per name instead of one per reactor spares the driver and the scan
// about seven allocations a reactor, and the repeated columns: the answer
// of a reaction on a message with 100 reactors then costs about what it
// does with one (BENCHMARKS.md, section 8). SQLite and PostgreSQL; MySQL,
// whose GROUP_CONCAT is cut at group_concat_max_len (1,024 bytes by
// default), reads reactionsRowsSQL. Both end with "n.message_id ", for "=
// ?" or "IN (?)", and are followed by reactionsOrder.
//
// PostgreSQL orders string_agg's input itself. SQLite's group_concat(x
// ORDER BY …) sorts its input in a temporary B-tree (about twice the cost
// of the read): instead it concatenates the rows of a subquery in the
// index's order. SQLite keeps a subquery's ORDER BY when the query around
// it uses an aggregate other than count, min and max, has no ORDER BY of
// its own and no join (sqlite3Select's omit-ORDER-BY rules); and with the
// index serving the order it sorts nothing. TestEmbeddedReactorsOrder
// checks the order against the contact ids' (which the index does not
// follow).
func reactionsSQL(f flavor) string {
	const reactors = `FROM reactions AS r LEFT JOIN contacts AS c ON c.id = r.contact_id
		WHERE r.message_id = n.message_id AND r.name = n.name AND r.seq <= n.head_seq`
	var agg string
	switch f {
	case flavorMySQL:
		return reactionsRowsSQL
	case flavorPostgres:
		// Each username by a lookup of its contact: with a join, the
		// planner, which cannot know that head_seq bounds the reactors to
		// 100, estimates a third of the reactions and hashes the whole of
		// contacts (1.2 ms at 10,000 contacts, against 0.4 ms).
		agg = `SELECT string_agg(COALESCE((SELECT c.username FROM contacts AS c WHERE c.id = r.contact_id), ''), chr(31) ORDER BY r.seq)
		FROM reactions AS r WHERE r.message_id = n.message_id AND r.name = n.name AND r.seq <= n.head_seq`
	default:
		agg = `SELECT group_concat(u.username, char(31)) FROM (SELECT COALESCE(c.username, '') AS username ` + reactors + ` ORDER BY r.seq) AS u`
	}
	return `SELECT ` + reactionsCols + `, (` + agg + `) AS reactors
	FROM reaction_names AS n WHERE n.message_id `
}

// reactionsRowsSQL reads the embedded reactors of the messages that the
// condition on n.message_id selects, one row per reactor: names by their
// seq, each name's reactors by theirs, up to its head_seq. The names come
// first (CROSS JOIN: SQLite keeps the order of the tables), so that each
// name's reactors are a range of the index (message_id, name, seq, contact_id) that
// stops at head_seq.
const reactionsRowsSQL = `SELECT ` + reactionsCols + `, COALESCE(c.username, '') AS reactors
	FROM reaction_names AS n
	CROSS JOIN reactions AS r
	LEFT JOIN contacts AS c ON c.id = r.contact_id
	WHERE r.message_id = n.message_id AND r.name = n.name AND r.seq <= n.head_seq AND n.message_id `

// reactionsOrder follows the condition of reactionsSQL: the names in
// their order (and with reactionsRowsSQL each name's reactors in theirs).
func reactionsOrder(f flavor) string {
	if f == flavorMySQL {
		return " ORDER BY n.message_id, n.seq, r.seq"
	}
	return " ORDER BY n.message_id, n.seq"
}

// loadReactions returns the embedded reactions of the messages ids: names
// in their order, each name's first reactors in theirs. No ids, no query.
func loadReactions(ctx context.Context, f flavor, query queryFn, ids boxedIDs) ([]reactionRow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var rs []reactionRow
	var err error
	if len(ids) == 1 {
		err = query(ctx, &rs, reactionsSQL(f)+"= ?"+reactionsOrder(f), ids[0])
	} else {
		err = query(ctx, &rs, reactionsSQL(f)+"IN (?)"+reactionsOrder(f), ids)
	}
	return rs, err
}

// addReactions sets the reactions of the messages (index finds one by
// id) from rs, in loadReactions's order (by message, each message's names
// in their order, each name's reactors in theirs; one row a name, or on
// MySQL one a reactor). The reactions of all the messages share one array
// and their reactors another, each message's and each name's a full slice
// of it (an append to one reallocates it): two allocations for a page
// rather than two for each message. The usernames share the rows' memory.
// A name without reactors read (a NULL aggregate) is left out, as a name
// with none disappears.
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

// addReaction adds the reactors of r to m, whose reactions come in order
// (names by their seq, each name's reactors by theirs). A name without
// reactors read (a NULL aggregate) is left out, as a name with none
// disappears.
func addReaction(m *messaging.Message, r reactionRow) {
	if !r.Reactors.Valid {
		return
	}
	i := len(m.Reactions) - 1
	for ; i >= 0 && m.Reactions[i].Name != r.Name; i-- {
	}
	if i < 0 {
		m.Reactions = append(m.Reactions, messaging.Reaction{Name: r.Name, Count: r.Count,
			Reactors: make([]string, 0, min(r.Count, messaging.MaxEmbeddedReactors))})
		i = len(m.Reactions) - 1
	}
	// The usernames share r.Reactors' memory.
	for who := range strings.SplitSeq(r.Reactors.String, reactorSep) {
		m.Reactions[i].Reactors = append(m.Reactions[i].Reactors, who)
	}
}

// reacted is what react changed.
type reacted struct {
	// names is the change in the number of reaction names.
	names int
	// reactorBefore and reactorAfter are the names the reactor of the
	// change had before it and has after it (MessageCounts.ReactorNames),
	// counted only when count is set and the change adds names.
	reactorBefore, reactorAfter int
}

// react applies rc, the reaction change of a MessageChange (nil: none),
// to the locked message id, which has reactions if hasReactions. Every
// statement reads or writes the rows of the names and reactor it names,
// and at most messaging.MaxEmbeddedReactors index entries of a name:
// never every reactor. With count, it counts the reactor's names before
// and after.
func (s *store) react(ctx context.Context, tx bun.Tx, id string, rc *driver.ReactionChange, hasReactions, count bool) (reacted, error) {
	var out reacted
	if rc == nil {
		return out, nil
	}
	who := rc.ContactID
	var names []string
	for _, n := range rc.Add {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	// An insert that does nothing when the row is there, and counts no
	// row then: MySQL's ON DUPLICATE KEY UPDATE would count the row found
	// (the driver sets clientFoundRows), INSERT IGNORE does not. Every
	// value is checked before, so IGNORE hides no other error.
	insert, onConflict := "INSERT INTO", " ON CONFLICT DO NOTHING"
	if s.flavor == flavorMySQL {
		insert, onConflict = "INSERT IGNORE INTO", ""
	}
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
		res, err := s.execWrite(ctx, tx, insert+" reaction_names (message_id, name) VALUES "+values[:len(values)-2]+onConflict, args...)
		if err != nil {
			return out, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return out, err
		}
		out.names += int(n)
		// One insert per name, which does nothing when the reactor is
		// there: its count of affected rows says whether the name gained it.
		gained := make(map[string]int, len(names))
		at := rc.At
		if at.IsZero() {
			at = time.Now()
		}
		for _, name := range names {
			res, err := s.execWrite(ctx, tx, insert+" reactions (message_id, name, contact_id, created_at) VALUES (?, ?, ?, ?)"+onConflict,
				id, name, who, at.UTC())
			if err != nil {
				return out, err
			}
			if n, err := res.RowsAffected(); err != nil {
				return out, err
			} else if n > 0 {
				gained[name]++
				own++
			}
		}
		for _, name := range names {
			k := gained[name]
			if k == 0 {
				continue
			}
			// head_seq moves only when the name reaches the embedded count.
			// (head_seq is set before reactors: MySQL assigns in order, with
			// the values already assigned.)
			if _, err := s.execWrite(ctx, tx, `UPDATE reaction_names SET
				head_seq = CASE WHEN reactors < `+embeddedCount+` AND reactors + ? >= `+embeddedCount+` THEN `+headSQL("?", "?")+` ELSE head_seq END,
				reactors = reactors + ? WHERE message_id = ? AND name = ?`, k, id, name, k, id, name); err != nil {
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
		res, err := s.execWrite(ctx, tx, "DELETE FROM reaction_names WHERE message_id = ? AND name = ? AND reactors <= 0", id, name)
		if err != nil {
			return out, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return out, err
		}
		out.names -= int(n)
	}
	return out, nil
}

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
	var rows []messageRefRow
	if err := s.readPrepared(ctx, &rows, "SELECT m.id, m.conversation_id, m.contact_id, m.created_at, m.deleted FROM messages AS m WHERE m.id = ?", id); err != nil {
		return driver.MessageRef{}, wrapErr("sqlstore.LookupMessage", err)
	}
	if len(rows) == 0 {
		return driver.MessageRef{}, wrapErr("sqlstore.LookupMessage", notFound("message"))
	}
	r := rows[0]
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
// they came, by a range of the index (message_id, name, seq, contact_id): its cost
// does not depend on the number of reactors. A cursor that is not a
// reactor is an error matching ErrNotFound.
func (s *store) ListReactors(ctx context.Context, q driver.ReactorQuery) ([]messaging.Reactor, bool, error) {
	items, more, err := s.listReactors(ctx, q)
	return items, more, wrapErr("sqlstore.ListReactors", err)
}

func (s *store) listReactors(ctx context.Context, q driver.ReactorQuery) ([]messaging.Reactor, bool, error) {
	if q.Limit < 1 {
		return nil, false, invalid("limit must be at least 1")
	}
	query := `SELECT r.contact_id, COALESCE(c.username, '') AS username, r.created_at FROM reactions AS r
		LEFT JOIN contacts AS c ON c.id = r.contact_id WHERE r.message_id = ? AND r.name = ?`
	args := []any{q.MessageID, q.Name}
	order := " ORDER BY r.seq LIMIT ?"
	after, before := cursorID(q.After), cursorID(q.Before)
	if cursor := cmp.Or(after, before); cursor != "" {
		var seqs []int64
		if err := s.read(ctx, &seqs, "SELECT seq FROM reactions WHERE message_id = ? AND contact_id = ? AND name = ?", q.MessageID, cursor, q.Name); err != nil {
			return nil, false, err
		}
		if len(seqs) == 0 {
			return nil, false, notFound("reactor")
		}
		if after != "" {
			query += " AND r.seq > ?"
		} else {
			query += " AND r.seq < ?"
			order = " ORDER BY r.seq DESC LIMIT ?"
		}
		args = append(args, seqs[0])
	}
	var rows []reactorRow
	if err := s.read(ctx, &rows, query+order, append(args, q.Limit+1)...); err != nil {
		return nil, false, err
	}
	more := len(rows) > q.Limit
	if more {
		rows = rows[:q.Limit]
	}
	if before != "" {
		slices.Reverse(rows)
	}
	out := make([]messaging.Reactor, len(rows))
	for i, r := range rows {
		out[i] = messaging.Reactor{ContactID: r.ContactID, Username: r.Username, ReactedAt: utc(r.CreatedAt)}
	}
	return out, more, nil
}

// reactOneRow is a row of what reactOneSQL's statement returns: one for each
// name of the message after the change, in the names' order, or one with
// no name when it has none.
type reactOneRow struct {
	// Own is the number of names the reactor had on the message before.
	Own int `bun:"own"`
	// Names is the change in the number of names; Reactors, in the
	// number of reactor rows.
	Names    int `bun:"names"`
	Reactors int `bun:"reactors"`
	// Updated is 1 when the statement updated the message's row, whose
	// stored values follow; 0 when the change left it as it was.
	Updated int `bun:"updated"`
	updatedRow
	// Name, Count and Embedded are a name after the change, its number of
	// reactors and its embedded ones, as reactionRow's.
	Name     sql.NullString `bun:"name"`
	Count    sql.NullInt64  `bun:"reactor_count"`
	Embedded sql.NullString `bun:"embedded"`
}

// reactPostgres makes the reaction change of ch on the locked message id
// (PostgreSQL): its names added in one statement, then each name taken
// back in one, where react sends one for each step. It returns
// the message's reactions after it, as loadReactions would read them
// after the statement: the message's row lock is held for four round
// trips fewer. Each data-modifying part of the statement sees the rows as
// they were before it, so each counts what the others change from what
// they return:
//
//   - an added name is inserted with its one reactor counted, and an
//     existing one gains a reactor only when the reactor's row is
//     inserted (the name's row inserted by the same statement is not
//     seen by that update), and gets its head_seq when it reaches 100
//     (below);
//   - a taken back reactor is deleted, and its name's row counts one
//     reactor fewer and moves head_seq past it, or goes when it was the
//     last (the foreign key's cascade then finds nothing to delete);
//   - the message's row gets UpdatedAt and its number of names, unless
//     the change sets no UpdatedAt and changes no name (a reactor taken
//     back who was not there, or not the name's last);
//   - the reactions after the change are the names and reactors before
//     it, with those inserted and without those deleted: each name's
//     first 100 reactors by seq, which are those up to its head_seq
//     (reactionsSQL), and its count of them.
//
// head_seq of a name reaching 100 reactors is the greatest seq of the
// 100, as react's headSQL finds it: the new reactor's, or (should the
// sequence of seqs ever have gone back, after a copy) an older one's.
//
// The change's Check, when set, runs after, with the counts the statement
// returns, and rolls everything back by its error.
func (s *store) reactPostgres(ctx context.Context, tx bun.Tx, id string, ch driver.MessageChange) (reactedOne, error) {
	var out reactedOne
	rc := *ch.Reactions
	var add []string
	for _, n := range rc.Add {
		if !slices.Contains(add, n) {
			add = append(add, n)
		}
	}
	var steps []driver.ReactionChange
	if len(add) > 0 {
		steps = append(steps, driver.ReactionChange{ContactID: rc.ContactID, Add: add, At: rc.At})
	}
	for _, name := range rc.Remove {
		steps = append(steps, driver.ReactionChange{ContactID: rc.ContactID, Remove: []string{name}})
	}
	for i, step := range steps {
		ch.Reactions = &step
		q, args := reactOneSQL(id, ch)
		var rows []reactOneRow
		if err := s.txRead(ctx, tx, &rows, q, args...); err != nil {
			return reactedOne{}, err
		}
		one, err := reactedOf(id, ch, rows)
		if err != nil {
			return reactedOne{}, err
		}
		out.rc.names += one.rc.names
		if i == 0 && len(add) > 0 {
			out.rc.reactorBefore, out.rc.reactorAfter = one.rc.reactorBefore, one.rc.reactorAfter
		} else if len(add) > 0 {
			out.rc.reactorAfter += rows[0].Reactors // as react counts them
		}
		if one.stored != nil {
			out.stored = one.stored
		}
		out.reactions = one.reactions
	}
	return out, nil
}

// reactedOne is what reactPostgres made: the counts, the message's row as it
// left it (nil when it did not write it) and the message's reactions.
type reactedOne struct {
	rc        reacted
	stored    *updatedRow
	reactions []reactionRow
}

// reactOneSQL returns the statement of one step of reactPostgres: ch's
// Reactions add names, or take one back.
func reactOneSQL(id string, ch driver.MessageChange) (string, []any) {
	reactor := ch.Reactions.ContactID
	// Each placeholder takes an argument of its own, in order.
	var args []any
	arg := func(a any) string {
		args = append(args, a)
		return "?"
	}
	// The message's row is updated when the change sets UpdatedAt or the
	// number of names changes (cte: the names added or gone).
	setAt := func() string {
		if ch.UpdatedAt.IsZero() {
			return ""
		}
		return "updated_at = " + arg(ch.UpdatedAt.UTC()) + ", "
	}
	changed := func(cte string) string {
		if ch.UpdatedAt.IsZero() {
			return " AND EXISTS (SELECT 1 FROM " + cte + ")"
		}
		return ""
	}
	// embedded aggregates the usernames of a name's first reactors (the
	// rows of before, with seq and contact_id, by seq, at most 100 of
	// them), as reactionsSQL does.
	embedded := func(before string) string {
		return `(SELECT string_agg(COALESCE((SELECT c.username FROM contacts AS c WHERE c.id = x.contact_id), ''), chr(31) ORDER BY x.seq)
			FROM (` + before + `) AS x) AS embedded`
	}
	var q string
	if rm := ch.Reactions.Remove; len(rm) > 0 {
		name := rm[0]
		q = `WITH d AS (DELETE FROM reactions WHERE message_id = ` + arg(id) + ` AND name = ` + arg(name) + ` AND contact_id = ` + arg(reactor) + ` RETURNING seq),
			up AS (UPDATE reaction_names AS n SET reactors = n.reactors - 1,
				head_seq = CASE WHEN n.head_seq >= d.seq THEN COALESCE((SELECT h.seq FROM reactions AS h
					WHERE h.message_id = n.message_id AND h.name = n.name AND h.seq <> d.seq
					ORDER BY h.seq LIMIT 1 OFFSET ` + embeddedOffset + `), ` + noHead + `) ELSE n.head_seq END
				FROM d WHERE n.message_id = ` + arg(id) + ` AND n.name = ` + arg(name) + ` AND n.reactors > 1 RETURNING n.name),
			gone AS (DELETE FROM reaction_names AS n USING d WHERE n.message_id = ` + arg(id) + ` AND n.name = ` + arg(name) + ` AND n.reactors <= 1 RETURNING n.name),
			m AS (UPDATE messages SET ` + setAt() + `reaction_count = reaction_count - (SELECT COUNT(*) FROM gone)
				WHERE id = ` + arg(id) + changed("gone") + ` RETURNING text, read_at, updated_at),
			a AS (SELECT n.name, n.seq, n.reactors - CASE WHEN n.name = ` + arg(name) + ` THEN (SELECT COUNT(*) FROM d) ELSE 0 END AS cnt
				FROM reaction_names AS n WHERE n.message_id = ` + arg(id) + `)
			SELECT 0 AS own, -(SELECT COUNT(*) FROM gone) AS names, -(SELECT COUNT(*) FROM d) AS reactors,
				(SELECT COUNT(*) FROM m) AS updated, m.*, a.name, a.cnt AS reactor_count, ` +
			embedded(`SELECT h.seq, h.contact_id FROM reactions AS h WHERE h.message_id = `+arg(id)+` AND h.name = a.name
				AND NOT (h.name = `+arg(name)+` AND h.contact_id = `+arg(reactor)+`) ORDER BY h.seq LIMIT `+embeddedCount) + `
			FROM (SELECT 1) AS one LEFT JOIN m ON true LEFT JOIN a ON a.cnt > 0 ORDER BY a.seq`
	} else {
		names := ch.Reactions.Add
		at := ch.Reactions.At
		if at.IsZero() {
			at = time.Now()
		}
		q = `WITH own AS (SELECT COUNT(*) AS n FROM reactions WHERE message_id = ` + arg(id) + ` AND contact_id = ` + arg(reactor) + `),
			nm AS (INSERT INTO reaction_names (message_id, name, reactors) VALUES `
		for i, n := range names {
			if i > 0 {
				q += ", "
			}
			q += "(" + arg(id) + ", " + arg(n) + ", 1)"
		}
		q += ` ON CONFLICT DO NOTHING RETURNING name, seq),
			r AS (INSERT INTO reactions (message_id, name, contact_id, created_at) VALUES `
		for i, n := range names {
			if i > 0 {
				q += ", "
			}
			q += "(" + arg(id) + ", " + arg(n) + ", " + arg(reactor) + ", " + arg(at.UTC()) + ")"
		}
		q += ` ON CONFLICT DO NOTHING RETURNING name, seq, contact_id),
			up AS (UPDATE reaction_names AS n SET reactors = n.reactors + 1,
				head_seq = CASE WHEN n.reactors + 1 = ` + embeddedCount + ` THEN GREATEST(r.seq,
					(SELECT max(h.seq) FROM reactions AS h WHERE h.message_id = n.message_id AND h.name = n.name)) ELSE n.head_seq END
				FROM r WHERE n.message_id = ` + arg(id) + ` AND n.name = r.name RETURNING n.name),
			m AS (UPDATE messages SET ` + setAt() + `reaction_count = reaction_count + (SELECT COUNT(*) FROM nm)
				WHERE id = ` + arg(id) + changed("nm") + ` RETURNING text, read_at, updated_at),
			a AS (SELECT n.name, n.seq, n.reactors + (SELECT COUNT(*) FROM r WHERE r.name = n.name) AS cnt
				FROM reaction_names AS n WHERE n.message_id = ` + arg(id) + `
				UNION ALL SELECT nm.name, nm.seq, 1 FROM nm)
			SELECT (SELECT n FROM own) AS own, (SELECT COUNT(*) FROM nm) AS names, (SELECT COUNT(*) FROM r) AS reactors,
				(SELECT COUNT(*) FROM m) AS updated, m.*, a.name, a.cnt AS reactor_count, ` +
			embedded(`SELECT y.seq, y.contact_id FROM ((SELECT h.seq, h.contact_id FROM reactions AS h
				WHERE h.message_id = `+arg(id)+` AND h.name = a.name ORDER BY h.seq LIMIT `+embeddedCount+`)
				UNION ALL SELECT r.seq, r.contact_id FROM r WHERE r.name = a.name) AS y ORDER BY y.seq LIMIT `+embeddedCount) + `
			FROM (SELECT 1) AS one LEFT JOIN m ON true LEFT JOIN a ON true ORDER BY a.seq`
	}
	return q, args
}

// reactedOf reads the rows of reactOneSQL's statement for the change ch on
// the message id.
func reactedOf(id string, ch driver.MessageChange, rows []reactOneRow) (reactedOne, error) {
	if len(rows) == 0 {
		return reactedOne{}, notFound("message")
	}
	r := rows[0]
	out := reactedOne{rc: reacted{names: r.Names}}
	if len(ch.Reactions.Remove) == 0 { // as react counts them
		out.rc.reactorBefore, out.rc.reactorAfter = r.Own, r.Own+r.Reactors
	}
	out.reactions = make([]reactionRow, 0, len(rows))
	for _, row := range rows {
		if row.Name.Valid {
			out.reactions = append(out.reactions, reactionRow{MessageID: id, Name: row.Name.String, Count: int(row.Count.Int64), Reactors: row.Embedded})
		}
	}
	if r.Updated != 0 { // else the statement left the message's row as it was
		out.stored = &r.updatedRow
	}
	return out, nil
}
