package memstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/kind"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// TestErrorMessages: the messages of the fakes' errors reach the API's
// clients, so they say what is wrong in the callers' terms and never name
// the backend; their kinds and parameters are the contract's.
func TestErrorMessages(t *testing.T) {
	ctx := t.Context()
	s, blobs := memstore.New(), memstore.NewBlobStore()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	alice := messaging.Contact{ID: "ctc_1", Username: "alice", CreatedAt: now}
	require.NoError(t, s.PutContact(ctx, alice))
	att := attachments.Attachment{ID: "att_1", ConversationID: "c", UploaderID: alice.ID, Filename: "a.txt", Key: "k1", CreatedAt: now}
	require.NoError(t, s.CreateAttachment(ctx, att))
	other := attachments.Attachment{ID: "att_2", ConversationID: "elsewhere", UploaderID: alice.ID, Filename: "b.txt", Key: "k2", CreatedAt: now}
	require.NoError(t, s.CreateAttachment(ctx, other))
	third := attachments.Attachment{ID: "att_3", ConversationID: "c", UploaderID: alice.ID, Filename: "c.txt", Key: "k3", CreatedAt: now}
	require.NoError(t, s.CreateAttachment(ctx, third))
	m := messaging.Message{ID: "msg_1", ConversationID: "c", Contact: messaging.Contact{ID: alice.ID}, Text: "hi", CreatedAt: now}
	require.NoError(t, s.CreateMessage(ctx, m, []string{att.ID}))
	reacted := []messaging.Reaction{{Name: "a", Reactors: []string{"alice"}}, {Name: "b", Reactors: []string{"alice"}}}
	after := &attachments.Cursor{CreatedAt: now, ID: "x"}
	mafter := &messaging.Cursor{CreatedAt: now, ID: "x"}

	for _, tc := range []struct {
		name        string
		err         error
		kind        error
		param, want string
	}{
		{"message not found", func() error { _, err := s.GetMessage(ctx, "msg_9"); return err }(), kind.NotFound, "", `no such message: "msg_9"`},
		{"contact not found", func() error { _, err := s.GetContact(ctx, "ctc_9"); return err }(), kind.NotFound, "", `no such contact: "ctc_9"`},
		{"attachment not found", func() error { _, err := s.GetAttachment(ctx, "att_9"); return err }(), kind.NotFound, "", `no such attachment: "att_9"`},
		{"username taken", s.PutContact(ctx, messaging.Contact{ID: "ctc_2", Username: "alice", CreatedAt: now}), kind.Conflict, "", `the username "alice" is taken by another contact`},
		{"message exists", s.CreateMessage(ctx, m, nil), kind.Conflict, "", `a message with the id "msg_1" already exists`},
		{"attachment exists", s.CreateAttachment(ctx, att), kind.Conflict, "", `an attachment with the id "att_1" already exists`},
		{"attachment linked elsewhere", s.CreateMessage(ctx, messaging.Message{ID: "msg_2", ConversationID: "c", Contact: messaging.Contact{ID: alice.ID}, CreatedAt: now}, []string{att.ID}),
			kind.Conflict, "", `the attachment "att_1" is linked to another message`},
		{"attachment of another conversation", s.CreateMessage(ctx, messaging.Message{ID: "msg_3", ConversationID: "c", Contact: messaging.Contact{ID: alice.ID}, CreatedAt: now}, []string{other.ID}),
			kind.Conflict, "", `the attachment "att_2" belongs to another conversation`},
		{"too many reactions", func() error {
			_, err := s.UpdateMessage(ctx, m.ID, messaging.Change{AddReactions: reacted, MaxReactionNames: 1})
			return err
		}(), kind.Invalid, "reactions", "a message may have at most 1 distinct reactions"},
		{"too many attachments", func() error {
			_, err := s.UpdateMessage(ctx, m.ID, messaging.Change{LinkAttachments: []string{"att_3"}, MaxAttachments: 1})
			return err
		}(), kind.Invalid, "attachments", "a message may have at most 1 attachments"},
		{"limit", func() error { _, _, err := s.ListMessages(ctx, messaging.ListQuery{All: true}); return err }(), kind.Invalid, "limit", "limit must be at least 1"},
		{"both cursors", func() error {
			_, _, err := s.ListAttachments(ctx, attachments.ListQuery{All: true, Limit: 1, After: after, Before: after})
			return err
		}(), kind.Invalid, "ending_before", "starting_after and ending_before cannot be used together"},
		{"both message cursors", func() error {
			_, _, err := s.ListMessages(ctx, messaging.ListQuery{All: true, Limit: 1, After: mafter, Before: mafter})
			return err
		}(), kind.Invalid, "ending_before", "starting_after and ending_before cannot be used together"},
		{"no such object", func() error { _, err := blobs.Open(ctx, "attachments/none"); return err }(), kind.NotFound, "", "no such file"},
		{"empty key", blobs.Put(ctx, "", "text/plain", strings.NewReader("x")), kind.Invalid, "key", "the file has no storage key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Error(t, tc.err)
			assert.ErrorIs(t, tc.err, tc.kind)
			var ke *kind.Error
			require.True(t, errors.As(tc.err, &ke), "%T %v", tc.err, tc.err)
			assert.Equal(t, tc.param, ke.Param)
			assert.Equal(t, tc.want, ke.Message)
			assert.NotContains(t, strings.ToLower(ke.Message), "memstore")
		})
	}
}
