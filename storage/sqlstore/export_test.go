package sqlstore

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging"
)

// MessagePageSQL exposes the query of a page of messages, for EXPLAIN.
func MessagePageSQL(s *Store, q messaging.ListQuery) (string, []any) {
	query, args, _ := s.messagePageSQL(q)
	return query, args
}

// ReaderDB returns the database the Store reads from outside transactions.
func ReaderDB(s *Store) *bun.DB { return s.r }

// MySQLConfig exposes the conversion of a MySQL DSN.
var MySQLConfig = mysqlConfig

// SQLiteDSN exposes the SQLite driver DSN.
var SQLiteDSN = sqliteDSN

// Write exposes the Store's retrying write transaction.
func Write(s *Store, ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	return s.write(ctx, fn)
}
