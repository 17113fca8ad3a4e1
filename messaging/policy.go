package messaging

import (
	"context"

	"github.com/parleychat/parley/messaging/driver"
)

// Policy decides who may see a conversation. It is the host's to supply, in
// Options.Policy, and governs messages, conversations and attachments alike
// (package attachments enforces the Policy of the messaging Service it is
// built on). The ownership rules (only the sender edits or deletes a
// message, only the uploader renames or deletes a file) hold under any
// policy.
//
// Everyone is the default; MembersOnly lets each contact see exactly the
// conversations it is a member of (Service.AddMember).
type Policy interface {
	// CanView reports whether the contact may see the conversation.
	CanView(ctx context.Context, contactID, conversationID string) (bool, error)
	// Scope returns the conversations the contact may see, as a filter the
	// store applies to lists, so that no list needs every conversation id.
	Scope(ctx context.Context, contactID string) (Scope, error)
}

// Scope is a set of conversations, as a store filters lists by it: every
// conversation when All is true, else those the contact is a member of when
// Members is true, and those of ConversationIDs.
type Scope struct {
	// All selects every conversation.
	All bool
	// Members selects the conversations the contact is a member of.
	Members bool
	// ConversationIDs selects these conversations; keep it short (a store
	// passes it as a list of parameters).
	ConversationIDs []string
}

// Everyone is the default Policy: every contact may see every conversation.
type Everyone struct{}

// CanView always reports true.
func (Everyone) CanView(context.Context, string, string) (bool, error) { return true, nil }

// Scope selects every conversation.
func (Everyone) Scope(context.Context, string) (Scope, error) { return Scope{All: true}, nil }

// MembersOnly returns the Policy under which a contact sees exactly the
// conversations it is a member of, as the Service's storage records them:
// members are added and removed with Service.AddMember and
// Service.RemoveMember. Lists are filtered by the store (a join on the
// members), whatever the number of conversations a contact is in.
func MembersOnly() Policy { return membersOnly{} }

// membersOnly is MembersOnly before New binds it to its storage; r is nil
// until then.
type membersOnly struct{ r driver.MessageStore }

func (p membersOnly) CanView(ctx context.Context, contactID, conversationID string) (bool, error) {
	return p.r.IsMember(ctx, conversationID, contactID)
}

func (membersOnly) Scope(context.Context, string) (Scope, error) { return Scope{Members: true}, nil }
