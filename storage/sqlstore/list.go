package sqlstore

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parleychat/parley/messaging/driver"
)

// maxBranches is the most conversations a list query reads as separate
// index ranges (UNION ALL of one ordered, limited scan each); a list of
// more conversations is one query with IN, which sorts.
const maxBranches = 32

// branch is one index-ordered range of a list: one conversation, or a
// WHERE condition.
type branch struct {
	// conversation, when not "", selects the rows of one conversation.
	conversation string
	where        string
	args         []any
}

// pageQuery is a keyset-paginated list: up to limit+1 rows of from
// matching any of branches, beyond the cursor, ordered by (created_at, id)
// newest first (After or no cursor) or oldest first (Before: the caller
// reverses them).
type pageQuery struct {
	cols     string // the selected columns, unique names including timeCol and id
	from     string // FROM clause
	fromArgs []any  // arguments of from's placeholders
	// joins, when not "", is joined to the listed table (from, alone),
	// with joinArgs: where coarse is set, to the page's rows after their
	// order and limit, so that sorting within a second handles the
	// listed table's rows only, and no more rows are joined than the page
	// holds (Incremental Sort reads at least 32); else as part of from.
	joins    string
	joinArgs []any
	alias    string // alias of the listed table in from
	timeCol  string // the time of the order: "created_at" when ""
	// coarse, when not "", is a column that orders as timeCol does in
	// steps of a second (timeCol truncated to the second), indexed with
	// the id in timeCol's place: the order and the seek start from it,
	// so that a row whose time moves within its second keeps its index
	// entry (dialectSQL.listedAt).
	coarse   string
	branches []branch
	after    *driver.Cursor
	before   *driver.Cursor
	// cursorRow, when not "", gives the cursor (after if afterID, else
	// before) by the id of its row instead: the FROM and WHERE of a query
	// of at most one row, aliased x, with placeholders for cursorArgs,
	// which the page's query runs as a subquery. An unknown cursor gives
	// an empty page.
	cursorRow  string
	cursorArgs []any
	afterID    bool
	limit      int
}

// sql returns the query and its arguments.
func (s *store) pageSQL(p pageQuery) (string, []any) {
	dir, cmp, cur := "DESC", "<", p.after
	if p.before != nil || (p.cursorRow != "" && !p.afterID) {
		dir, cmp, cur = "ASC", ">", p.before
	}
	a, tc := p.alias, p.timeCol
	if tc == "" {
		tc = "created_at"
	}
	var seek string
	var seekArgs []any
	switch {
	case p.cursorRow != "" && p.coarse != "":
		// The row value's first column bounds the range of the index
		// (PostgreSQL: an index condition on coarse, the rest a filter).
		seek = fmt.Sprintf("(%[1]s.%[5]s, %[1]s.%[3]s, %[1]s.id) %[2]s (SELECT x.%[5]s, x.%[3]s, x.id FROM %[4]s)", a, cmp, tc, p.cursorRow, p.coarse)
		seekArgs = p.cursorArgs
	case p.cursorRow != "":
		// One statement: the cursor's row is read once (PostgreSQL's
		// InitPlan, SQLite's uncorrelated subquery), and its values bound
		// the index range as a row value. (On SQLite, three scalar
		// subqueries, one per bound, made page 1,000 of a thread cost
		// 1.14-1.29x its first page, BENCHMARKS.md section 13.)
		seek = fmt.Sprintf("(%[1]s.%[3]s, %[1]s.id) %[2]s (SELECT x.%[3]s, x.id FROM %[4]s)", a, cmp, tc, p.cursorRow)
		seekArgs = p.cursorArgs
	case cur != nil:
		seek, seekArgs = s.seek(a+"."+tc, a+".id", cmp, cur.Time.UTC(), cur.ID)
		if p.coarse != "" {
			seek = a + "." + p.coarse + " " + cmp + "= ? AND " + seek
			seekArgs = append([]any{cur.Time.UTC().Truncate(time.Second)}, seekArgs...)
		}
	}
	limit := strconv.Itoa(p.limit + 1)
	one := func(b branch) (string, []any) {
		// Built in one buffer: a page's query is built at every request.
		args := make([]any, 0, len(p.fromArgs)+len(p.joinArgs)+2+len(b.args)+len(seekArgs))
		args = append(args, p.fromArgs...)
		late := p.coarse != "" && p.joins != ""
		var q strings.Builder
		q.Grow(len(p.cols) + len(p.from) + len(p.joins) + len(b.where) + len(seek) + 300)
		for _, part := range [...]string{"SELECT ", p.cols, " FROM "} {
			q.WriteString(part)
		}
		if late {
			for _, part := range [...]string{"(SELECT ", a, ".* FROM "} {
				q.WriteString(part)
			}
		}
		q.WriteString(p.from)
		if !late && p.joins != "" {
			q.WriteString(" ")
			q.WriteString(p.joins)
			args = append(args, p.joinArgs...)
		}
		and := " WHERE "
		cond := func(c string) {
			q.WriteString(and)
			q.WriteString(c)
			and = " AND "
		}
		order := ""
		if b.conversation != "" {
			if s.sql.rangeOfOne || s.sql.rangeAfterCursor && seek != "" {
				// A range (PostgreSQL: or an array of one, see
				// oneConversation) rather than "=", and the conversation first in
				// ORDER BY: with "=", PostgreSQL drops the constant column
				// from the order, and may then walk messages_created newest
				// first and filter, which costs as many rows as other
				// conversations wrote since (measured: 4.2 ms rather than
				// 0.13 ms for a conversation of a million under 30,000
				// newer rows elsewhere). Only the conversation's index gives
				// this order. MariaDB, given "=" and a cursor, reads the
				// conversation's index from its newest row (ref access) and
				// filters up to the cursor (9,012 rows read for a page 9,000
				// deep, against 12 with the range: ANALYZE SELECT); without
				// a cursor "=" reads what it needs, and spares the range's
				// estimates (a first page at 8,700 req/s with the range,
				// 10,200 without).
				c, n := s.eng.oneConversation(s, a+".conversation_id")
				cond(c)
				for range n {
					args = append(args, b.conversation)
				}
				switch {
				case s.sql.rangeAfterCursor:
					// Its index is ascending throughout: read backwards, or
					// forwards, whole.
					order = dir
				case dir == "ASC":
					order = "DESC"
				default:
					order = "ASC"
				}
			} else {
				cond(a + ".conversation_id = ?")
				args = append(args, b.conversation)
			}
		}
		if b.where != "" {
			cond(b.where)
			args = append(args, b.args...)
		}
		if seek != "" {
			cond(seek)
			args = append(args, seekArgs...)
		}
		q.WriteString(" ORDER BY ")
		for _, part := range [...]string{a, ".conversation_id ", order, ", "} {
			if order != "" {
				q.WriteString(part)
			}
		}
		if p.coarse != "" {
			for _, part := range [...]string{a, ".", p.coarse, " ", dir, ", "} {
				q.WriteString(part)
			}
		}
		for _, part := range [...]string{a, ".", tc, " ", dir, ", ", a, ".id ", dir, " LIMIT ", limit} {
			q.WriteString(part)
		}
		if late {
			for _, part := range [...]string{") AS ", a, " ", p.joins, " ORDER BY ",
				a, ".", p.coarse, " ", dir, ", ", a, ".", tc, " ", dir, ", ", a, ".id ", dir} {
				q.WriteString(part)
			}
			args = append(args, p.joinArgs...)
		}
		return q.String(), args
	}
	if len(p.branches) == 1 {
		return one(p.branches[0])
	}
	parts := make([]string, len(p.branches))
	var args []any
	for i, b := range p.branches {
		q, bargs := one(b)
		parts[i] = "SELECT * FROM (" + q + ") AS p" + strconv.Itoa(i)
		args = append(args, bargs...)
	}
	q := "SELECT * FROM (" + strings.Join(parts, " UNION ALL ") + ") AS u" +
		fmt.Sprintf(" ORDER BY u.%[3]s %[1]s, u.id %[1]s LIMIT %[2]s", dir, limit, tc)
	return q, args
}

// seek returns the condition that the row's (col, id) comes before (op
// "<") or after (op ">") (t, cursorID), with its arguments: a comparison
// of row values where the engine reads it as a range of the index
// (dialectSQL.rowValues), else a range on col and a filter of its ties.
func (s *store) seek(col, id, op string, t time.Time, cursorID string) (string, []any) {
	if s.sql.rowValues {
		return "(" + col + ", " + id + ") " + op + " (?, ?)", []any{t, cursorID}
	}
	return col + " " + op + "= ? AND (" + col + " " + op + " ? OR " + id + " " + op + " ?)", []any{t, t, cursorID}
}

// trimPage cuts rows (as pageSQL returned them) to the page: at most limit,
// newest first, and whether there are more.
func trimPage[T any](rows []T, limit int, before bool) ([]T, bool) {
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	if before {
		slices.Reverse(rows)
	}
	return rows, more
}

// cursorID returns the ID of c, a cursor by id, or "" when c is nil.
func cursorID(c *driver.Cursor) string {
	if c == nil {
		return ""
	}
	return c.ID
}
