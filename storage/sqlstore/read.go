package sqlstore

import (
	"context"
	"database/sql"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// idList is a list argument of a read query: bun.List on the bun path,
// one placeholder per element on the prepared path.
type idList []string

// boxedIDs is an idList boxed already, for two queries of the same ids
// (DESIGN.md §4.7).
type boxedIDs []any

// read runs query (bun's "?" placeholders; strings, ints, times, nils and
// idLists as args) on the reader database and scans its rows into dst, a
// pointer to a slice: prepared on SQLite unless longList (DESIGN.md §4.7).
func (s *store) read(ctx context.Context, dst any, query string, args ...any) error {
	if s.stmts == nil || longList(args) {
		return s.r.NewRaw(query, bunArgs(args)...).Scan(ctx, dst)
	}
	return s.readPrepared(ctx, dst, query, args...)
}

// maxPreparedIDs is the most ids in the lists of a query that readByIDs
// and transactions prepare. Each length is a statement of its own, so a
// list of more than exactIDs is padded to a power of two (expandList).
const maxPreparedIDs, exactIDs = 128, 16

// readByIDs is read for the reactions and attachments of messages by
// their ids: prepared on PostgreSQL too, for up to maxPreparedIDs ids.
func (s *store) readByIDs(ctx context.Context, dst any, query string, args ...any) error {
	if longList(args) {
		return s.read(ctx, dst, query, args...)
	}
	return s.readPrepared(ctx, dst, query, args...)
}

// longList reports whether args hold a list of more than maxPreparedIDs.
func longList(args []any) bool {
	for _, a := range args {
		l, _ := a.(idList)
		b, _ := a.(boxedIDs)
		if len(l) > maxPreparedIDs || len(b) > maxPreparedIDs {
			return true
		}
	}
	return false
}

// readPrepared is read for a query whose plan suits every value of its
// arguments, prepared on every engine that can (DESIGN.md §4.7).
func (s *store) readPrepared(ctx context.Context, dst any, query string, args ...any) error {
	if s.cached != nil {
		if q, dargs, ok := expandArgs(query, args, true); ok {
			rows, err := unstale(s.r.DB, func() (*sql.Rows, error) {
				return s.r.DB.QueryContext(ctx, q, s.cachedArgs(dargs)...)
			})
			return s.scan(ctx, dst, rows, err)
		}
	}
	if s.stmts != nil {
		if q, dargs, ok := expandArgs(query, args, false); ok {
			st, err := s.stmts.get(ctx, q)
			if err != nil {
				return err
			}
			if st != nil {
				rows, err := st.QueryContext(ctx, dargs...)
				return s.scan(ctx, dst, rows, err)
			}
		}
	}
	return s.r.NewRaw(query, bunArgs(args)...).Scan(ctx, dst)
}

// unstale runs fn, a statement from the statement cache of db's
// connections (Store.cached), again while it fails on a stale plan: the
// driver drops the statement from the failing connection's cache, and the
// next run may take another connection that still holds it. Each of the
// connections open fails once at most.
func unstale[T any](db *sql.DB, fn func() (T, error)) (T, error) {
	v, err := fn()
	if !stalePlan(err) {
		return v, err
	}
	for n := db.Stats().OpenConnections; n > 0 && stalePlan(err); n-- {
		v, err = fn()
	}
	return v, err
}

// scan scans rows into dst, or returns err, the error of their query.
func (s *store) scan(ctx context.Context, dst any, rows *sql.Rows, err error) error {
	if err != nil {
		return err
	}
	return s.r.ScanRows(ctx, rows, dst)
}

// cachedArgs returns dargs, driver arguments, after the argument that
// runs their statement from the driver's statement cache (Store.cached).
func (s *store) cachedArgs(dargs []any) []any {
	return append([]any{s.cached}, dargs...)
}

// bunArgs returns args with idLists and boxedIDs as bun.List.
func bunArgs(args []any) []any {
	var out []any
	for i, a := range args {
		var l []string
		switch a := a.(type) {
		case idList:
			l = a
		case boxedIDs:
			l = make([]string, len(a))
			for k, id := range a {
				l[k], _ = id.(string)
			}
		default:
			continue
		}
		if out == nil {
			out = slices.Clone(args)
		}
		out[i] = bun.List(l)
	}
	if out == nil {
		return args
	}
	return out
}

// expandArgs turns a query with bun placeholders into one with driver
// placeholders (? or, if dollar, $1, $2…) and arguments: an idList one
// placeholder per element, a time SQLite's text (PostgreSQL's driver
// writes times itself); false for another type or a count that differs.
func expandArgs(query string, args []any, dollar bool) (string, []any, bool) {
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
		placeholder := func() {
			if dollar {
				b.WriteByte('$')
				b.WriteString(strconv.Itoa(len(out)))
			} else {
				b.WriteByte('?')
			}
		}
		switch a := args[i].(type) {
		case string, int, int64, []byte, nil, time.Time:
			if t, ok := a.(time.Time); ok && !dollar {
				a = driverTime(t)
			} else if ok && t.IsZero() { // the driver would send NULL
				return "", nil, false
			}
			out = append(out, a)
			placeholder()
		case idList:
			if !expandList(&b, &out, a, placeholder) {
				return "", nil, false
			}
		case boxedIDs:
			if !expandList(&b, &out, a, placeholder) {
				return "", nil, false
			}
		default:
			return "", nil, false
		}
		i++
	}
	return b.String(), out, true
}

// expandList writes a placeholder for each element of list and appends
// the element to out, a list of more than exactIDs padded with its last
// element to a power of two (lists are of IN); false for an empty list.
// Generic, so that the elements of boxedIDs, already interfaces, are not
// boxed again.
func expandList[E any](b *strings.Builder, out *[]any, list []E, placeholder func()) bool {
	if len(list) == 0 {
		return false
	}
	n := len(list)
	if n > exactIDs {
		n = 1 << bits.Len(uint(n-1))
	}
	for k := range n {
		if k > 0 {
			b.WriteString(", ")
		}
		*out = append(*out, list[min(k, len(list)-1)])
		placeholder()
	}
	return true
}

// driverTime is t as the drivers write a time.Time argument, SQLite's (as
// the store stores it) and PostgreSQL's: in UTC, to the microsecond.
func driverTime(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05.999999-07:00")
}

// queryFn runs a query and scans its rows into dst: Store.read, or a
// transaction's (txQuery, txReads).
type queryFn func(ctx context.Context, dst any, query string, args ...any) error

// txQuery returns the queryFn of tx, unprepared.
func txQuery(tx bun.IDB) queryFn {
	return func(ctx context.Context, dst any, query string, args ...any) error {
		return tx.NewRaw(query, bunArgs(args)...).Scan(ctx, dst)
	}
}

// txRead runs query in tx and scans its rows into dst, prepared where
// execWrite would prepare a write (DESIGN.md §4.7).
func (s *store) txRead(ctx context.Context, tx bun.Tx, dst any, query string, args ...any) error {
	if q, dargs, ok := s.txCached(query, args); ok {
		rows, err := tx.Tx.QueryContext(ctx, q, s.cachedArgs(dargs)...)
		return s.scan(ctx, dst, rows, staleInCachedTx(err))
	}
	if st, dargs := s.txStmt(ctx, tx, query, args); st != nil {
		rows, err := st.QueryContext(ctx, dargs...)
		return s.scan(ctx, dst, rows, err)
	}
	return tx.NewRaw(query, bunArgs(args)...).Scan(ctx, dst)
}

// txReads returns the queryFn of txRead in tx.
func (s *store) txReads(tx bun.Tx) queryFn {
	return func(ctx context.Context, dst any, query string, args ...any) error {
		return s.txRead(ctx, tx, dst, query, args...)
	}
}
