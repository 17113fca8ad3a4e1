package memstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

// TestErrorKinds: the fakes return the contract's kinds, bare (the wording
// people read is the services'), so that KindOf and errors.Is classify
// them as they classify every backend's.
func TestErrorKinds(t *testing.T) {
	ctx := t.Context()
	s, blobs := memstore.New(), memstore.NewBlobStore()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	alice := messaging.Contact{ID: "ctc_1", Username: "alice", CreatedAt: now}
	require.NoError(t, s.Driver().PutContact(ctx, alice))
	att := messaging.Attachment{ID: "att_1", ConversationID: "c", UploaderID: alice.ID, Filename: "a.txt", Key: "k1", CreatedAt: now}
	require.NoError(t, s.Driver().CreateAttachment(ctx, att, nil))
	other := messaging.Attachment{ID: "att_2", ConversationID: "elsewhere", UploaderID: alice.ID, Filename: "b.txt", Key: "k2", CreatedAt: now}
	require.NoError(t, s.Driver().CreateAttachment(ctx, other, nil))
	third := messaging.Attachment{ID: "att_3", ConversationID: "c", UploaderID: alice.ID, Filename: "c.txt", Key: "k3", CreatedAt: now}
	require.NoError(t, s.Driver().CreateAttachment(ctx, third, nil))
	m := messaging.Message{ID: "msg_1", ConversationID: "c", Contact: messaging.Contact{ID: alice.ID}, Text: "hi", CreatedAt: now}
	require.NoError(t, s.Driver().CreateMessage(ctx, m, []string{att.ID}, nil))
	reacted := &driver.ReactionChange{ContactID: alice.ID, Add: []string{"a", "b"}}
	after := &driver.Cursor{Time: now, ID: "x"}
	mafter := &driver.Cursor{Time: now, ID: "x"}

	for _, tc := range []struct {
		name string
		err  error
		kind messaging.ErrorKind
	}{
		{"message not found", func() error { _, err := s.Driver().GetMessage(ctx, "msg_9"); return err }(), messaging.ErrNotFound},
		{"contact not found", func() error { _, err := s.Driver().GetContact(ctx, "ctc_9"); return err }(), messaging.ErrNotFound},
		{"attachment not found", func() error { _, err := s.Driver().GetAttachment(ctx, "att_9"); return err }(), messaging.ErrNotFound},
		{"username taken", s.Driver().PutContact(ctx, messaging.Contact{ID: "ctc_2", Username: "alice", CreatedAt: now}), messaging.ErrConflict},
		{"message exists", s.Driver().CreateMessage(ctx, m, nil, nil), messaging.ErrConflict},
		{"attachment exists", s.Driver().CreateAttachment(ctx, att, nil), messaging.ErrConflict},
		{"attachment linked elsewhere", s.Driver().CreateMessage(ctx, messaging.Message{ID: "msg_2", ConversationID: "c", Contact: messaging.Contact{ID: alice.ID}, CreatedAt: now}, []string{att.ID}, nil),
			messaging.ErrConflict},
		{"attachment of another conversation", s.Driver().CreateMessage(ctx, messaging.Message{ID: "msg_3", ConversationID: "c", Contact: messaging.Contact{ID: alice.ID}, CreatedAt: now}, []string{other.ID}, nil),
			messaging.ErrConflict},
		{"too many reactions", func() error {
			_, err := s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: reacted, Check: storetest.Limits(1, 0)})
			return err
		}(), messaging.ErrInvalid},
		{"too many attachments", func() error {
			_, err := s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{LinkAttachments: []string{"att_3"}, Check: storetest.Limits(0, 1)})
			return err
		}(), messaging.ErrInvalid},
		{"limit", func() error {
			_, _, err := s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{All: true}})
			return err
		}(), messaging.ErrInvalid},
		{"both cursors", func() error {
			_, _, err := s.Driver().ListAttachments(ctx, driver.AttachmentQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 1, After: after, Before: after}})
			return err
		}(), messaging.ErrInvalid},
		{"both message cursors", func() error {
			_, _, err := s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 1, After: mafter, Before: mafter}})
			return err
		}(), messaging.ErrInvalid},
		{"no such object", func() error { _, err := blobs.Open(ctx, "attachments/none"); return err }(), messaging.ErrNotFound},
		{"empty key", blobs.Put(ctx, "", "text/plain", strings.NewReader("x")), messaging.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Error(t, tc.err)
			assert.ErrorIs(t, tc.err, tc.kind)
			assert.Equal(t, tc.kind, messaging.KindOf(tc.err))
			var e *messaging.Error
			assert.False(t, errors.As(tc.err, &e), "a backend returns bare kinds, not *messaging.Error: %v", tc.err)
		})
	}
}
