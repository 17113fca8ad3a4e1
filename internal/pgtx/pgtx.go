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
// When the first statement fails, the transaction is aborted, as the
// server would have it whether or not its BEGIN ran (a syntax error
// rejects the whole query, BEGIN included): every later statement fails
// without reaching the server until the transaction is rolled back. (An
// error that comes with a query's rows, after the call that sent it
// returned, is the server's: BEGIN ran, and the server refuses what
// follows.)
//
// A statement of a transaction whose text ends in CommitSuffix commits the
// transaction with it: when it succeeds, Commit is answered at once, and
// sends nothing. When it fails with an error the server answered (an error
// of a statement aborts the transaction; a failed COMMIT rolls it back),
// nothing of the transaction is committed. Any other failure (the
// connection lost, the answer never read) matches ErrCommitUnknown: the
// transaction may have committed. sqlstore sends it only to a database
// whose driver implements Driver, and only as the last statement of a
// transaction.
package pgtx

import (
	sqldriver "database/sql/driver"
	"errors"
)

// CommitSuffix ends a statement that commits its transaction.
const CommitSuffix = "; COMMIT"

// ErrCommitUnknown is matched by the error of a statement that carried its
// transaction's COMMIT when the server's answer did not say that nothing
// was committed.
var ErrCommitUnknown = errors.New("pgtx: the transaction may have committed")

// ErrAborted is the error of a statement of a transaction whose first
// statement failed.
var ErrAborted = errors.New("pgtx: current transaction is aborted, commands ignored until end of transaction block")

// Driver is implemented by the database/sql driver of the connections that
// fold BEGIN and COMMIT into statements as the package doc says.
type Driver interface {
	sqldriver.Driver
	// FoldsTransactions reports whether the connections fold BEGIN and COMMIT.
	FoldsTransactions() bool
}
