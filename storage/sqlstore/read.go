package sqlstore

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// idList is a list argument of a read query: bun.List on the bun path,
// one placeholder per element on the prepared path.
type idList []string

// maxStmts bounds the prepared statements a Store keeps: list queries
// differ by page size and by the number of conversations and ids.
const maxStmts = 256

// stmtCache holds the prepared statements of SQLite reads, by query text.
// SQLite parses and plans a statement on every query otherwise: with them
// a page of messages takes about two thirds of the time and a message or
// contact under half (BenchmarkSQLiteReads). Prepared statements are
// reused on each connection of the reader pool (database/sql prepares
// them on a connection when first used there).
type stmtCache struct {
	db *sql.DB
	// rewrite, when not nil, turns a query into the text prepared for it
	// (sqliteReadCols); the cache keeps the statement under the query.
	rewrite *strings.Replacer
	mu      sync.RWMutex
	m       map[string]*sql.Stmt
}

// get returns the prepared statement of query, or nil when the cache is
// full.
func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.RLock()
	st, ok := c.m[query]
	c.mu.RUnlock()
	if ok {
		return st, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	if len(c.m) >= maxStmts {
		return nil, nil
	}
	text := query
	if c.rewrite != nil {
		text = c.rewrite.Replace(query)
	}
	st, err := c.db.PrepareContext(ctx, text)
	if err != nil {
		return nil, err
	}
	c.m[query] = st
	return st, nil
}

// sqliteReadCols rewrites the column lists of the reads of messages,
// contacts, attachments and embedded reactors for SQLite's prepared reads: each column becomes
// the expression +column (SQLite's unary plus returns its operand
// unchanged), named as before. The driver (modernc.org/sqlite) allocates
// the declared type of every column that has one on every row (a Go
// string from C), and for a DATETIME column it first parses the text with
// time.String's layout, which fails and allocates a *time.ParseError,
// before the layout the store writes; an expression has no declared type,
// so the value comes as text, which bun parses with the right layout at
// once. On a first page of ten messages with reactions and attachments
// this saves about half the allocations of the request (BENCHMARKS.md,
// section 1). Only the select lists change: WHERE and ORDER BY name the
// table's columns, so the indexes serve as before.
var sqliteReadCols = strings.NewReplacer(
	messageCols, exprCols(messageCols),
	attachmentCols, exprCols(attachmentCols),
	reactionsCols, exprCols(reactionsCols),
	"SELECT "+contactCols+" FROM contacts", "SELECT "+exprCols(contactCols)+" FROM contacts",
)

// exprCols turns a column list such as "m.id, c.username AS
// contact_username" into "+m.id AS id, +c.username AS contact_username".
// An expression (with parentheses) stays as it is.
func exprCols(cols string) string {
	var parts []string
	depth, start := 0, 0
	for i, c := range cols {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, cols[start:i])
				start = i + 1
			}
		}
	}
	parts = append(parts, cols[start:])
	for i, p := range parts {
		p = strings.Join(strings.Fields(p), " ")
		if strings.Contains(p, "(") {
			parts[i] = p
			continue
		}
		col, alias, ok := strings.Cut(p, " AS ")
		if !ok {
			_, alias, ok = strings.Cut(col, ".")
			if !ok {
				alias = col
			}
		}
		parts[i] = "+" + col + " AS " + alias
	}
	return strings.Join(parts, ", ")
}

// lookup returns the prepared statement of query, or nil; it never
// prepares one.
func (c *stmtCache) lookup(query string) *sql.Stmt {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.m[query]
}

func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first error
	for q, st := range c.m {
		if err := st.Close(); err != nil && first == nil {
			first = err
		}
		delete(c.m, q)
	}
	return first
}

// read runs a query outside transactions on the reader database, and
// scans its rows into dst (a pointer to a slice of rows). query has bun's
// "?" placeholders; args are strings, ints, times, nils and idLists. On
// SQLite the statement is prepared once and reused.
func (s *Store) read(ctx context.Context, dst any, query string, args ...any) error {
	if s.stmts != nil {
		if q, dargs, ok := expandArgs(query, args); ok {
			st, err := s.stmts.get(ctx, q)
			if err != nil {
				return err
			}
			if st != nil {
				rows, err := st.QueryContext(ctx, dargs...)
				if err != nil {
					return err
				}
				return s.r.ScanRows(ctx, rows, dst)
			}
		}
	}
	return s.r.NewRaw(query, bunArgs(args)...).Scan(ctx, dst)
}

// bunArgs returns args with idLists as bun.List.
func bunArgs(args []any) []any {
	for i, a := range args {
		if l, ok := a.(idList); ok {
			out := make([]any, len(args))
			copy(out, args)
			out[i] = bun.List([]string(l))
			for j := i + 1; j < len(out); j++ {
				if l, ok := out[j].(idList); ok {
					out[j] = bun.List([]string(l))
				}
			}
			return out
		}
	}
	return args
}

// expandArgs turns a query with bun placeholders into one with driver
// placeholders and driver arguments: an idList becomes one placeholder per
// element, a time the text bun writes for SQLite. It returns false for an
// argument of another type, or a placeholder count that does not match.
func expandArgs(query string, args []any) (string, []any, bool) {
	if strings.Count(query, "?") != len(args) {
		return "", nil, false
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	out := make([]any, 0, len(args))
	i := 0
	for {
		j := strings.IndexByte(query, '?')
		if j < 0 {
			b.WriteString(query)
			break
		}
		b.WriteString(query[:j])
		query = query[j+1:]
		switch a := args[i].(type) {
		case string, int, int64, []byte, nil:
			b.WriteByte('?')
			out = append(out, a)
		case time.Time:
			b.WriteByte('?')
			out = append(out, sqliteTime(a))
		case idList:
			if len(a) == 0 {
				return "", nil, false
			}
			for k, id := range a {
				if k > 0 {
					b.WriteString(", ")
				}
				b.WriteByte('?')
				out = append(out, id)
			}
		default:
			return "", nil, false
		}
		i++
	}
	return b.String(), out, true
}

// sqliteTime is t as bun writes it for SQLite (and as the store stores it).
func sqliteTime(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05.999999-07:00")
}

// queryFn runs a query and scans its rows into dst: Store.read, or a
// transaction's (txQuery).
type queryFn func(ctx context.Context, dst any, query string, args ...any) error

// txQuery returns the queryFn of tx.
func txQuery(tx bun.IDB) queryFn {
	return func(ctx context.Context, dst any, query string, args ...any) error {
		return tx.NewRaw(query, bunArgs(args)...).Scan(ctx, dst)
	}
}
