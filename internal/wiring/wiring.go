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
// deletes. Bind returns the conversation policy msgs enforces and its
// largest page size, which the attachments Service enforces too.
var Bind func(msgs any, removeFiles func(ctx context.Context, keys []string)) (Policy, int)

// Policy is messaging.Policy.
type Policy interface {
	CanView(ctx context.Context, contactID, conversationID string) (bool, error)
	Viewable(ctx context.Context, contactID string) (conversationIDs []string, all bool, err error)
}
