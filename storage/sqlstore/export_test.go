package sqlstore

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging"
)

// MessagePageSQL exposes the query of a page of messages, for EXPLAIN.
func MessagePageSQL(s *Store, q messaging.MessageQuery) (string, []any) {
	query, args, _ := s.messagePageSQL(q)
	return query, args
}

// ReaderDB returns the database the Store reads from outside transactions.
func ReaderDB(s *Store) *bun.DB { return s.r }

// Write exposes the Store's retrying write transaction.
func Write(s *Store, ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	return s.write(ctx, fn)
}

// Versions returns the names of the schema versions, in order.
func Versions() []string {
	names := make([]string, len(versions))
	for i, v := range versions {
		names[i] = v.Name
	}
	return names
}

// MigrateTo applies the schema versions up to and including last.
func MigrateTo(s *Store, ctx context.Context, last string) error {
	return s.migrateTo(ctx, last)
}

// Reads returns the number of read queries the Store made outside
// transactions.
func Reads(s *Store) int64 { return s.reads.Load() }
