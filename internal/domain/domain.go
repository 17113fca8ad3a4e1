// Package domain joins the services that messaging.New builds: the
// messaging Service, the attachments Service and the events Feed. Each
// constructor of attachments and events takes what it needs of the
// messaging Service as a Messaging value, built once by messaging.New and
// never changed, and returns what the messaging Service needs of it (a
// FileRemover, a Committed): the three are joined in one typed step, in
// one order, and a host cannot build one of them on its own (it cannot
// name the types of this package).
package domain

import (
	"context"
	"errors"
	"time"

	"github.com/parleychat/parley/internal/check"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging/driver"
)

// Messaging is what the attachments Service and the events Feed take from
// the messaging Service they are built with, so that one set of rules
// governs them all.
type Messaging struct {
	// CanView reports whether the contact may see the conversation (the
	// Policy).
	CanView func(ctx context.Context, contactID, conversationID string) (bool, error)
	// Scope returns the conversations the contact may see: all, or those
	// it is a member of (memberID is then the contact), plus ids.
	Scope func(ctx context.Context, contactID string) (all bool, memberID string, ids []string, err error)
	// MaxListLimit is the largest page size.
	MaxListLimit int
	// CanSeeEvent reports whether the caller may see the event.
	CanSeeEvent func(ctx context.Context, caller driver.Contact, e driver.Event) (bool, error)
	// Committed is called after each write that recorded events (it wakes
	// the events Feed); nil for the Feed itself.
	Committed Committed
	// Files is the messaging side of uploads; nil for the Feed.
	Files Files
}

// Committed is called by the services after each write that recorded
// events, once it has committed.
type Committed func()

// MemberChanged is called by the messaging Service before it adds or
// removes a membership of the contact in the conversation, and the
// function it returns once that write has returned (committed: whether it
// committed). In between the Feed keeps no answer of the Policy for them,
// so that no event committed after the change is judged by an answer from
// before it; afterwards it asks the Policy again.
type MemberChanged func(contactID, conversationID string) (done func(committed bool))

// FeedHooks are what the messaging Service calls on the Feed built with
// it.
type FeedHooks struct {
	Committed     Committed
	MemberChanged MemberChanged
	// Typing delivers a typing indicator to the streams that may see it,
	// in every instance.
	Typing func(driver.Typing)
}

// FileRemover removes the objects of deleted attachments, then forgets
// their pending deletions; what fails stays for Reconcile.
type FileRemover func(ctx context.Context, keys []string)

// ErrMessageFull is Files.Attach's error when the message has its most
// attachments already.
var ErrMessageFull = errors.New("the message has its most attachments")

// Files is what the attachments Service needs of the messaging Service
// beyond its rules: the messages it links uploads to, and the protocol of
// idempotency keys, so that one set of rules and one store of records
// serve both services.
type Files interface {
	// Get returns the message if the caller may see it (messaging's Get).
	Get(ctx context.Context, caller driver.Contact, id string) (driver.Message, error)
	// MaxAttachments is the most attachments on a message.
	MaxAttachments() int
	// Attach stores a, a new attachment, linked to the message of caller
	// (its sender) in one transaction, with done when not nil, and returns
	// the message; ErrMessageFull when the message has its most
	// attachments. reservation, unless "", is the upload reservation that
	// a completes, removed in that transaction (MessageChange.Reservation).
	Attach(ctx context.Context, caller driver.Contact, messageID string, a driver.Attachment, done *driver.IdempotencyRecord, reservation string) (driver.Message, error)
	// Hold holds key of scope in this process until release is called.
	Hold(scope, key string) (release func(), err error)
	// Once carries out a short write once per key; a replay reads the
	// resource the key answered again with reread.
	Once(ctx context.Context, scope string, idem driver.Idempotency, fp string, reread func(id string) error, write func(done driver.IdempotencyRecord) error) (replayed bool, err error)
	// Claim claims key of scope in the store for a long write.
	Claim(ctx context.Context, scope, key, fp string) (driver.IdempotencyRecord, bool, error)
	// Release gives up a claim whose write failed with err, and returns
	// the error to report.
	Release(ctx context.Context, rec driver.IdempotencyRecord, err error) error
	// Replay returns the id of the resource rec answered.
	Replay(rec driver.IdempotencyRecord, fp string) (id string, err error)
	// Fingerprint returns the fingerprint of a write's arguments.
	Fingerprint(parts ...string) string
}

// Wrap annotates err with op once, as every service does: an *Error gains
// Op if it has none; an argument that breaks a rule becomes an *Error of
// kind ErrInvalid; any other error becomes an *Error of the kind it
// carries (zero, internal, when none) with that kind's name as its
// message.
func Wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var e *driver.Error
	if errors.As(err, &e) {
		if e.Op == "" {
			c := *e
			c.Op = op
			return &c
		}
		return err
	}
	var p *check.Error
	if errors.As(err, &p) {
		return &driver.Error{Kind: driver.ErrInvalid, Code: p.Code, Param: p.Param, Message: p.Message, Op: op}
	}
	k := driver.KindOf(err)
	return &driver.Error{Kind: k, Op: op, Message: k.Error(), Err: err}
}

// NewEvent returns the event of type t in conversation conv made at at,
// with a new id. Its audience is audienceID when conv is "" (a file in no
// conversation is seen by its uploader only).
func NewEvent(t driver.EventType, conv, audienceID string, at time.Time) driver.Event {
	e := driver.Event{ID: ids.NewAt(ids.Event, at), Type: t, ConversationID: conv, Created: at}
	if conv == "" {
		e.AudienceID = audienceID
	}
	return e
}
