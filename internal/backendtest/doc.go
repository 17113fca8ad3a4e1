// Package backendtest gives tests every storage backend to run against:
// the in-memory store always, SQLite always (a file in a temporary
// directory), PostgreSQL when PARLEY_TEST_POSTGRES is set and MySQL or
// MariaDB when PARLEY_TEST_MYSQL is set, as bun's testEachDB does.
//
//	for _, b := range backendtest.All(t) {
//		t.Run(b.Name, func(t *testing.T) {
//			store := b.New(t) // fresh and empty, removed at the end of t
//			…
//		})
//	}
//
// Every store that New makes has a database of its own: a fresh SQLite
// file, a fresh PostgreSQL schema (via search_path) or a fresh MySQL
// database, created, migrated and dropped in tb.Cleanup, so that tests
// never see each other's rows.
//
// The variables hold DSNs as sqlstore.Open takes them, for example
// PARLEY_TEST_POSTGRES='postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable'
// and PARLEY_TEST_MYSQL='mysql://root@127.0.0.1:3306/test' (or the
// go-sql-driver form 'root@tcp(127.0.0.1:3306)/test').
package backendtest
