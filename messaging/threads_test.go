package messaging_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

// paramOf returns the Param of err's *messaging.Error.
func paramOf(err error) string {
	var e *messaging.Error
	if errors.As(err, &e) {
		return e.Param
	}
	return ""
}

func TestThreadsThroughTheService(t *testing.T) {
	ctx := context.Background()
	policy := onlyConversations{}
	msgs := svctest.New(t, memstore.New(), memstore.NewBlobStore(), &messaging.Options{Policy: policy})
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	bob, err := msgs.SaveContact(ctx, messaging.Contact{Username: "bob"})
	require.NoError(t, err)
	policy[alice.ID] = []string{"team", "secret"}
	policy[bob.ID] = []string{"team"}

	root, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "lunch?"})
	require.NoError(t, err)
	secret, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "secret", Text: "psst"})
	require.NoError(t, err)
	_, err = msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "secret", Text: "x", ParentID: secret.ID})
	require.NoError(t, err)

	reply, err := msgs.Create(ctx, bob, messaging.NewMessage{ConversationID: "team", Text: "yes", ParentID: root.ID})
	require.NoError(t, err)
	assert.Equal(t, root.ID, reply.ParentID, "the answer carries its parent")

	for name, in := range map[string]messaging.NewMessage{
		"a reply to a reply":          {ConversationID: "team", Text: "no", ParentID: reply.ID},
		"another conversation":        {ConversationID: "secret", Text: "no", ParentID: root.ID},
		"a root the caller can't see": {ConversationID: "team", Text: "no", ParentID: secret.ID},
		"not an id":                   {ConversationID: "team", Text: "no", ParentID: "x"},
	} {
		caller := bob
		if name == "another conversation" {
			caller = alice
		}
		_, err := msgs.Create(ctx, caller, in)
		assert.ErrorIs(t, err, messaging.ErrInvalid, name)
		assert.Equal(t, "parent_id", paramOf(err), name)
	}

	p, err := msgs.Messages(ctx, bob, "team", messaging.ListOptions{})
	require.NoError(t, err)
	require.Len(t, p.Data, 1, "the reply is not in the conversation's list")
	assert.EqualValues(t, 1, p.Data[0].ReplyCount)
	r, err := msgs.Replies(ctx, alice, root.ID, messaging.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{reply.ID}, idsOf(r.Data))
	_, err = msgs.Replies(ctx, bob, secret.ID, messaging.ListOptions{})
	assert.ErrorIs(t, err, messaging.ErrNotFound, "a root the caller may not see")
	_, err = msgs.Replies(ctx, bob, root.ID, messaging.ListOptions{StartingAfter: root.ID})
	assert.Equal(t, "starting_after", paramOf(err))

	th, err := msgs.Threads(ctx, alice, messaging.ListOptions{})
	require.NoError(t, err)
	require.Len(t, th.Data, 2)
	assert.Equal(t, root.ID, th.Data[0].Root.ID, "the most recently replied first")
	assert.EqualValues(t, 1, th.Data[0].UnreadCount)
	th, err = msgs.Threads(ctx, bob, messaging.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, th.Data, 1, "the policy narrows the threads")
	_, err = msgs.Threads(ctx, bob, messaging.ListOptions{StartingAfter: secret.ID})
	assert.Equal(t, "starting_after", paramOf(err))

	_, err = msgs.Thread(ctx, bob, secret.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	_, err = msgs.Thread(ctx, bob, reply.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "a reply is no thread")

	_, err = msgs.MarkThreadRead(ctx, alice, root.ID, root.ID)
	assert.Equal(t, "read_through", paramOf(err))
	_, err = msgs.MarkThreadRead(ctx, alice, root.ID, "")
	assert.Equal(t, "read_through", paramOf(err))
	t1, err := msgs.MarkThreadRead(ctx, alice, root.ID, reply.ID)
	require.NoError(t, err)
	assert.Zero(t, t1.UnreadCount)
	assert.Equal(t, reply.ID, t1.LastReadMessageID)

	// Events: a reply's and its delete's carry the parent; thread.read
	// goes to its reader alone.
	evs, err := msgs.Events().Events(ctx, alice, "", messaging.ListOptions{Limit: 100})
	require.NoError(t, err)
	var sawRead bool
	for _, e := range evs.Data {
		if e.Type == messaging.EventThreadRead {
			sawRead = true
			require.NotNil(t, e.Thread)
			assert.Equal(t, alice.ID, e.AudienceID)
		}
	}
	assert.True(t, sawRead)
	evs, err = msgs.Events().Events(ctx, bob, "", messaging.ListOptions{Limit: 100})
	require.NoError(t, err)
	for _, e := range evs.Data {
		assert.NotEqual(t, messaging.EventThreadRead, e.Type, "bob sees no one else's thread.read")
	}

	require.NoError(t, msgs.Delete(ctx, alice, root.ID))
	tomb, err := msgs.Get(ctx, bob, root.ID)
	require.NoError(t, err, "the root's tombstone is still there")
	assert.True(t, tomb.Deleted)
	_, err = msgs.Create(ctx, bob, messaging.NewMessage{ConversationID: "team", Text: "late", ParentID: root.ID})
	assert.Equal(t, "parent_id", paramOf(err), "a tombstone takes no reply")
	assert.ErrorIs(t, msgs.Delete(ctx, alice, root.ID), messaging.ErrNotFound)
	require.NoError(t, msgs.Delete(ctx, bob, reply.ID))
	_, err = msgs.Get(ctx, bob, root.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "gone with its last reply")
	evs, err = msgs.Events().Events(ctx, bob, "team", messaging.ListOptions{Limit: 3})
	require.NoError(t, err)
	require.Len(t, evs.Data, 3)
	assert.Equal(t, root.ID, evs.Data[0].DeletedID, "the tombstone's going is an event")
	assert.Equal(t, reply.ID, evs.Data[1].DeletedID)
	assert.Equal(t, root.ID, evs.Data[1].DeletedParentID, "the reply's delete carries its parent")
}

// A storage without threads refuses replies rather than storing them as
// plain messages.
func TestRepliesNeedThreadStore(t *testing.T) {
	ctx := context.Background()
	msgs := svctest.New(t, storetest.Storage(noThreads{memstore.New().Driver()}), memstore.NewBlobStore(), nil)
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	root, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "c", Text: "a"})
	require.NoError(t, err)
	_, err = msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "c", Text: "b", ParentID: root.ID})
	assert.ErrorIs(t, err, messaging.ErrUnimplemented)
	_, err = msgs.Threads(ctx, alice, messaging.ListOptions{})
	assert.ErrorIs(t, err, messaging.ErrUnimplemented)
}

// noThreads hides a store's ThreadStore.
type noThreads struct{ driver.Store }

func idsOf(ms []messaging.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}
