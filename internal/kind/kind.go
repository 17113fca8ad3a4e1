// Package kind holds the one list of error kinds that messaging, attachments,
// the storage backends and the HTTP adapter share, and the Error type that
// carries a kind together with a message that is safe to show to people.
//
// The list is append-only. messaging and attachments re-export these values,
// so errors.Is(err, messaging.ErrNotFound) and errors.Is(err,
// attachments.ErrNotFound) are the same test.
package kind

import (
	"errors"
	"strings"
)

// The kinds. Each is a sentinel that errors.Is matches through any *Error.
var (
	NotFound        = errors.New("not found")
	Invalid         = errors.New("invalid argument")
	Conflict        = errors.New("conflict")
	Permission      = errors.New("permission denied")
	TooLarge        = errors.New("too large")
	Unimplemented   = errors.New("unimplemented")
	Unauthenticated = errors.New("unauthenticated")
	Unavailable     = errors.New("unavailable")
)

// Codes for Invalid errors, as in the API's error object.
const (
	CodeMissing = "parameter_missing"
	CodeInvalid = "parameter_invalid"
)

// Error is an error of one kind, with a message for people and, optionally,
// the parameter at fault and the underlying cause.
//
// errors.Is matches both its Kind and anything its Err matches.
type Error struct {
	// Kind is one of the sentinels of this package.
	Kind error
	// Code refines Kind for the API (for example "parameter_missing").
	Code string
	// Param names the one request field at fault, if any.
	Param string
	// Message is written for people and safe to show to a client.
	Message string
	// Op names the operation and its subject, for logs ("messaging.Get msg_…").
	Op string
	// Err is the cause, if any. Never shown to clients.
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

// Unwrap returns the kind and the cause, so errors.Is matches either.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// New returns an *Error of kind k with a message for people.
func New(k error, msg string) *Error { return &Error{Kind: k, Message: msg} }

// Missing reports that a required parameter is absent.
func Missing(param string) *Error {
	return &Error{Kind: Invalid, Code: CodeMissing, Param: param, Message: "missing required parameter: " + param}
}

// BadParam reports that a parameter is malformed or out of range.
func BadParam(param, msg string) *Error {
	return &Error{Kind: Invalid, Code: CodeInvalid, Param: param, Message: msg}
}

// Of returns the kind of err: one of the sentinels, or nil when err is of no
// known kind (an unexpected error).
func Of(err error) error {
	for _, k := range []error{NotFound, Invalid, Conflict, Permission, TooLarge, Unimplemented, Unauthenticated, Unavailable} {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}

// Wrap annotates err with op once: an *Error gains Op if it has none;
// any other error becomes an *Error whose kind is the kind it matches (or
// nil when unknown) with a generic message.
func Wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if e.Op == "" {
			c := *e
			c.Op = op
			return &c
		}
		return err
	}
	k := Of(err)
	msg := "internal error"
	if k != nil {
		msg = k.Error()
	}
	return &Error{Kind: k, Op: op, Message: msg, Err: err}
}
