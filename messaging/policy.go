package messaging

import "context"

// Policy decides who may see a conversation. It is the host's to supply, in
// Options.Policy, and governs messages and attachments alike (package
// attachments enforces the Policy of the messaging Service it is built
// on). The ownership rules (only the sender edits or deletes a message, only
// the uploader renames or deletes a file) hold under any policy.
type Policy interface {
	// CanView reports whether the contact may see the conversation.
	CanView(ctx context.Context, contactID, conversationID string) (bool, error)
	// Viewable returns the conversations the contact may see, or all=true
	// when it may see every conversation.
	Viewable(ctx context.Context, contactID string) (conversationIDs []string, all bool, err error)
}

// Everyone is the default Policy: every contact may see every conversation.
type Everyone struct{}

// CanView always reports true.
func (Everyone) CanView(context.Context, string, string) (bool, error) { return true, nil }

// Viewable reports every conversation.
func (Everyone) Viewable(context.Context, string) ([]string, bool, error) { return nil, true, nil }
