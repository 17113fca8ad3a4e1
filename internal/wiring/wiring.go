// Package wiring connects package attachments to the messaging Service it
// is built on, without exporting from messaging what only attachments may
// use: removing the files of a deleted message needs no caller check, so it
// must not be callable by anyone else.
//
// Package messaging sets the variables in its init. Package attachments
// imports messaging, so they are set before attachments uses them.
package wiring

import "context"

// Wrap annotates err with op as the messaging Service does: input problems
// and bare kinds become *messaging.Error, which keeps its kind.
var Wrap func(op string, err error) error

// Bind ties an attachments Service to msgs, a *messaging.Service: msgs
// calls removeFiles with the keys of the attachments of every message it
// deletes. Bind returns what the attachments Service enforces as msgs does:
// whether a contact may see a conversation, the scope of its lists, and the
// largest page size.
var Bind func(msgs any, removeFiles func(ctx context.Context, keys []string)) Domain

// BindFeed ties an events Feed to msgs, a *messaging.Service: from then
// on msgs, and the attachments Service built on it, record an event for
// every change and call committed after each write that recorded some.
// BindFeed returns what the Feed enforces as msgs does.
var BindFeed func(msgs any, committed func()) Domain

// Domain is what an attachments Service (or an events Feed) takes from its
// messaging Service.
type Domain struct {
	// CanView reports whether the contact may see the conversation.
	CanView func(ctx context.Context, contactID, conversationID string) (bool, error)
	// Scope returns the conversations the contact may see: all, or those
	// it is a member of (memberID is then the contact), plus ids.
	Scope func(ctx context.Context, contactID string) (all bool, memberID string, ids []string, err error)
	// MaxListLimit is the largest page size.
	MaxListLimit int
	// Committed returns the function to call after a write that recorded
	// events commits, or nil while no Feed is bound: writes then record
	// none.
	Committed func() func()
}

// Files returns what the attachments Service needs of msgs, a
// *messaging.Service, beyond its exported API (the protocol of idempotency
// keys, storing an upload linked to a message), as a value whose methods
// the attachments Service calls through an interface of its own.
var Files func(msgs any) any
