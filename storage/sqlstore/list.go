package sqlstore

import (
	"cmp"
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

// branch is one index-ordered range of a list: one conversation (when
// not ""), or a WHERE condition.
type branch struct {
	conversation string
	where        string
	args         []any
}

// pageQuery is a keyset-paginated list: up to limit+1 rows of from
// matching any of branches, beyond the cursor, ordered by (timeCol, id)
// newest first (After or no cursor) or oldest first (Before: the caller
// reverses them).
type pageQuery struct {
	cols     string // the selected columns, unique names including timeCol and id
	from     string // FROM clause, the listed table aliased alias
	fromArgs []any
	// joins are joined to from with joinArgs: after the order and limit
	// where coarse is set (DESIGN.md §4.12), else as part of from.
	joins    string
	joinArgs []any
	alias    string
	timeCol  string // "created_at" when ""
	// coarse, when not "", is timeCol truncated to the second, indexed
	// with the id, that the order and the seek start from (§4.12).
	coarse   string
	branches []branch
	after    *driver.Cursor
	before   *driver.Cursor
	// cursorRow, when not "", gives the cursor (after if afterID, else
	// before) by the id of its row: the FROM and WHERE of a query of at
	// most one row aliased x, with cursorArgs, run as a subquery. An
	// unknown cursor gives an empty page.
	cursorRow  string
	cursorArgs []any
	afterID    bool
	limit      int
}

// pageSQL returns the query of p and its arguments.
func (s *store) pageSQL(p pageQuery) (string, []any) {
	dir, op, cur := "DESC", "<", p.after
	if p.before != nil || (p.cursorRow != "" && !p.afterID) {
		dir, op, cur = "ASC", ">", p.before
	}
	a, tc := p.alias, cmp.Or(p.timeCol, "created_at")
	var seek string
	var seekArgs []any
	switch {
	case p.cursorRow != "":
		// The cursor's row read once, its values a row value that bounds
		// the index range (coarse first: its index condition).
		cols := a + "." + tc + ", " + a + ".id"
		xcols := "x." + tc + ", x.id"
		if p.coarse != "" {
			cols, xcols = a+"."+p.coarse+", "+cols, "x."+p.coarse+", "+xcols
		}
		seek, seekArgs = "("+cols+") "+op+" (SELECT "+xcols+" FROM "+p.cursorRow+")", p.cursorArgs
	case cur != nil:
		seek, seekArgs = s.seek(a+"."+tc, a+".id", op, cur.Time.UTC(), cur.ID)
		if p.coarse != "" {
			seek = a + "." + p.coarse + " " + op + "= ? AND " + seek
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
		w := func(parts ...string) {
			for _, part := range parts {
				q.WriteString(part)
			}
		}
		w("SELECT ", p.cols, " FROM ")
		if late {
			w("(SELECT ", a, ".* FROM ")
		}
		w(p.from)
		if !late && p.joins != "" {
			w(" ", p.joins)
			args = append(args, p.joinArgs...)
		}
		and := " WHERE "
		cond := func(c string, cargs ...any) {
			w(and, c)
			and = " AND "
			args = append(args, cargs...)
		}
		order := ""
		if b.conversation != "" && (s.sql.rangeOfOne || s.sql.rangeAfterCursor && seek != "") {
			// Not "=", and the conversation first in the order: only its
			// index gives that order (DESIGN.md §4.7).
			c, n := s.eng.oneConversation(s, a+".conversation_id")
			cond(c)
			for range n {
				args = append(args, b.conversation)
			}
			switch {
			case s.sql.rangeAfterCursor: // its index is ascending throughout
				order = dir
			case dir == "ASC":
				order = "DESC"
			default:
				order = "ASC"
			}
		} else if b.conversation != "" {
			cond(a+".conversation_id = ?", b.conversation)
		}
		if b.where != "" {
			cond(b.where, b.args...)
		}
		if seek != "" {
			cond(seek, seekArgs...)
		}
		w(" ORDER BY ")
		if order != "" {
			w(a, ".conversation_id ", order, ", ")
		}
		if p.coarse != "" {
			w(a, ".", p.coarse, " ", dir, ", ")
		}
		w(a, ".", tc, " ", dir, ", ", a, ".id ", dir, " LIMIT ", limit)
		if late {
			w(") AS ", a, " ", p.joins, " ORDER BY ", a, ".", p.coarse, " ", dir, ", ", a, ".", tc, " ", dir, ", ", a, ".id ", dir)
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
	q := "SELECT * FROM (" + strings.Join(parts, " UNION ALL ") + ") AS u ORDER BY u." + tc + " " + dir + ", u.id " + dir + " LIMIT " + limit
	return q, args
}

// seek returns the condition that the row's (col, id) comes before (op
// "<") or after (op ">") (t, cursorID), and its arguments: row values
// where they are an index range (dialectSQL.rowValues), else a range on col.
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

// nothing is the page of a list that selects nothing: empty, or for a
// cursor, which no row of it can be, an error matching ErrNotFound.
func nothing[T any](w driver.Window, what string) ([]T, bool, error) {
	if w.After != nil || w.Before != nil {
		return nil, false, notFound(what)
	}
	return []T{}, false, nil
}

// cursorID returns the ID of c, a cursor by id, or "" when c is nil.
func cursorID(c *driver.Cursor) string {
	if c == nil {
		return ""
	}
	return c.ID
}
