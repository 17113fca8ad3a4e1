package memstore_test

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/memstore"
)

// The fakes hand out copies: changing what they return changes nothing
// stored.
func TestReturnsCopies(t *testing.T) {
	ctx := t.Context()
	s := memstore.New()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	alice := messaging.Contact{ID: "ctc_1", Username: "alice", CreatedAt: now}
	require.NoError(t, s.Driver().PutContact(ctx, alice))
	att := messaging.Attachment{ID: "att_1", ConversationID: "c", UploaderID: alice.ID, Filename: "a.txt", Key: "k1", CreatedAt: now}
	require.NoError(t, s.Driver().CreateAttachment(ctx, att, nil))
	add := []string{"👍"}
	m := messaging.Message{ID: "msg_1", ConversationID: "c", Contact: messaging.Contact{ID: alice.ID}, Text: "hi", CreatedAt: now}
	require.NoError(t, s.Driver().CreateMessage(ctx, m, []string{att.ID}, nil))
	_, err := s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: alice.ID, Add: add}})
	require.NoError(t, err)
	add[0] = "mallory" // the caller's slice is not kept

	got, err := s.Driver().GetMessage(ctx, m.ID)
	require.NoError(t, err)
	want := got
	want.Reactions = []messaging.Reaction{{Name: "👍", Reactors: []string{"alice"}, Count: 1}}
	want.Attachments = []messaging.Attachment{got.Attachments[0]}
	assert.Equal(t, want, got)

	got.Reactions[0].Reactors[0] = "mallory"
	got.Reactions[0].Name = "x"
	got.Attachments[0].Filename = "evil"
	got.Contact.Username = "mallory"
	items, _, err := s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 10}})
	require.NoError(t, err)
	items[0].Reactions[0].Reactors[0] = "mallory"

	again, err := s.Driver().GetMessage(ctx, m.ID)
	require.NoError(t, err)
	assert.Equal(t, want, again)

	atts, _, err := s.Driver().ListAttachments(ctx, driver.AttachmentQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 10}})
	require.NoError(t, err)
	atts[0].Filename = "evil"
	pending, err := s.Driver().PendingDeletions(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, pending)
	a, err := s.Driver().GetAttachment(ctx, att.ID)
	require.NoError(t, err)
	assert.Equal(t, "a.txt", a.Filename)
}

func TestBlobStoreCopies(t *testing.T) {
	ctx := t.Context()
	b := memstore.NewBlobStore()
	data := []byte("hello")
	require.NoError(t, b.Put(ctx, "k", "text/plain", bytes.NewReader(data)))
	data[0] = 'j'
	r, err := b.Open(ctx, "k")
	require.NoError(t, err)
	got, err := io.ReadAll(r)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(got))
	got[0] = 'y'
	require.NoError(t, r.Close())
	_, err = r.Read(make([]byte, 1))
	assert.Error(t, err, "a closed reader reads nothing")

	r, err = b.Open(ctx, "k")
	require.NoError(t, err)
	got, err = io.ReadAll(r)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(got))

	assert.ErrorIs(t, b.Put(ctx, "", "text/plain", bytes.NewReader(nil)), messaging.ErrInvalid)
}
