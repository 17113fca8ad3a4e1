// Package pgtx is the contract between sqlstore and the connections that
// package postgres makes: transactions whose BEGIN and COMMIT travel with
// their statements, so that they cost no round trip of their own.
//
// A transaction begun with the default options sends no BEGIN: its first
// statement carries it, as "BEGIN; " in front of its text, in one simple
// query (a prepared statement whose arguments a simple query carries
// alike runs that way once; otherwise BEGIN goes first, alone). A
// transaction that ran nothing commits or rolls back without a word to
// the server.
//
// A statement of a transaction whose text ends in CommitSuffix commits the
// transaction with it: when it succeeds, Commit is answered at once, and
// sends nothing. When it fails, nothing of the transaction is committed if
// the server answered (an error of a statement aborts the transaction, and
// a failed COMMIT rolls it back); if the server did not answer, the
// outcome is unknown, as for any COMMIT. sqlstore sends it only to a
// database whose driver implements Driver, and only as the last statement
// of a transaction.
package pgtx

import "database/sql/driver"

// CommitSuffix ends a statement that commits its transaction.
const CommitSuffix = "; COMMIT"

// Driver is implemented by the database/sql driver of the connections that
// fold BEGIN and COMMIT into statements as the package doc says.
type Driver interface {
	driver.Driver
	// FoldsTransactions reports whether the connections fold BEGIN and COMMIT.
	FoldsTransactions() bool
}
