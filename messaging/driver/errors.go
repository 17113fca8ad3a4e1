package driver

import (
	"errors"
	"fmt"
	"strings"
)

// ErrorKind classifies an error. The kinds form a closed set: the constants
// below, and the zero ErrorKind for an error of no known kind (an internal
// error). An ErrorKind is itself an error, so that a backend can return a
// bare kind (or wrap one with fmt.Errorf and %w) and a caller can test for
// one with errors.Is.
type ErrorKind int

// The kinds. The list is append-only.
const (
	// ErrNotFound: no such item, or one the caller may not see.
	ErrNotFound ErrorKind = iota + 1
	// ErrInvalid: a missing or malformed argument, or one beyond a limit.
	ErrInvalid
	// ErrConflict: the change conflicts with the state of the store (an
	// attachment linked to another message, a username taken).
	ErrConflict
	// ErrPermission: the caller may see the item but not change it.
	ErrPermission
	// ErrTooLarge: an upload beyond its size limit.
	ErrTooLarge
	// ErrUnimplemented: a backend lacks an optional capability.
	ErrUnimplemented
	// ErrUnauthenticated: the caller could not be identified.
	ErrUnauthenticated
	// ErrUnavailable: a backend (database, bucket) cannot be reached now;
	// the same call may succeed later.
	ErrUnavailable
)

var kindText = [...]string{
	0:                  "internal error",
	ErrNotFound:        "not found",
	ErrInvalid:         "invalid argument",
	ErrConflict:        "conflict",
	ErrPermission:      "permission denied",
	ErrTooLarge:        "too large",
	ErrUnimplemented:   "unimplemented",
	ErrUnauthenticated: "unauthenticated",
	ErrUnavailable:     "unavailable",
}

// Error returns the kind's name, such as "not found".
func (k ErrorKind) Error() string {
	if k < 0 || int(k) >= len(kindText) {
		return "unknown error kind"
	}
	return kindText[k]
}

// String returns the kind's name, as Error does.
func (k ErrorKind) String() string { return k.Error() }

// Codes of the API's error object that refine ErrInvalid (Error.Code).
const (
	// CodeMissing: a required parameter is absent.
	CodeMissing = "parameter_missing"
	// CodeInvalid: a parameter is malformed or out of range.
	CodeInvalid = "parameter_invalid"
)

// Error is the error the services of this package and of attachments
// return: a kind, a message written for people, and the parameter at
// fault, if any. Use errors.As to read it, and KindOf (or errors.Is with a
// kind) to classify it:
//
//	var e *driver.Error
//	if errors.As(err, &e) && e.Param != "" {
//		fmt.Println(e.Param, e.Message) // conversation_id conversation_id may hold only letters, …
//	}
//	if errors.Is(err, driver.ErrNotFound) { … }
type Error struct {
	// Kind is what the error is; it decides the HTTP status. The zero kind
	// means an internal error, whose Message reads "internal error".
	Kind ErrorKind
	// Code refines Kind for the API's error object: CodeMissing or
	// CodeInvalid for ErrInvalid; empty otherwise.
	Code string
	// Param names the one argument at fault (the API's parameter name, such
	// as "conversation_id"), if any.
	Param string
	// Message is written for people and safe to show to a client: it never
	// holds SQL, paths or other internals.
	Message string
	// Op names the operation and its subject, for logs
	// ("messaging.Get \"msg_…\"").
	Op string
	// Err is the cause, if any, for logs. It is never shown to clients.
	Err error
}

// Error returns the operation, the message and the cause, for logs.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	if e.Err != nil && e.Err.Error() != e.Message {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Is reports whether target is e's kind.
func (e *Error) Is(target error) bool {
	k, ok := target.(ErrorKind)
	return ok && k != 0 && k == e.Kind
}

// Unwrap returns the cause, so that errors.Is and errors.As reach it (a
// driver's error, context.Canceled). An error's own kind wins over its
// cause's: when Kind is set, the kinds of the cause are hidden, so that
// errors.Is(err, k) agrees with KindOf(err) == k.
func (e *Error) Unwrap() error {
	if e.Err == nil {
		return nil
	}
	if e.Kind == 0 {
		return e.Err
	}
	return cause{e.Err}
}

// cause is the cause of an *Error that has a kind of its own: it answers
// errors.Is and errors.As for everything but kinds and *Error.
type cause struct{ err error }

func (c cause) Error() string { return c.err.Error() }

func (c cause) Is(target error) bool {
	if _, ok := target.(ErrorKind); ok {
		return false
	}
	return errors.Is(c.err, target)
}

func (c cause) As(target any) bool {
	switch target.(type) {
	case *ErrorKind, **Error:
		return false
	}
	return errors.As(c.err, target)
}

// KindOf returns the kind of err: that of the outermost *Error that has a
// kind, else that of the first ErrorKind in err's chain, else zero (an
// internal error, or nil).
func KindOf(err error) ErrorKind {
	var k ErrorKind
	if errors.As(err, &k) {
		return k
	}
	return 0
}

// As lets errors.As(err, &kind) find the kind of an *Error.
func (e *Error) As(target any) bool {
	if p, ok := target.(*ErrorKind); ok && e.Kind != 0 {
		*p = e.Kind
		return true
	}
	return false
}

// Codes of the API's error object for idempotency keys (Error.Code).
const (
	// CodeKeyReused refines ErrInvalid: the key was first used with other
	// arguments (the HTTP API answers it with type idempotency_error).
	CodeKeyReused = "idempotency_key_reused"
	// CodeKeyInUse refines ErrConflict: a call with the key is still under
	// way; retry later.
	CodeKeyInUse = "idempotency_key_in_use"
)

// ErrKeyTaken is the error of a keyed write whose key another call holds or
// has answered (see IdempotencyStore): a backend returns it, bare or
// wrapped with fmt.Errorf's %w, having changed nothing. It matches
// ErrConflict.
var ErrKeyTaken = fmt.Errorf("idempotency key held or answered by another call: %w", ErrConflict)
