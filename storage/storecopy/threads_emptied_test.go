package storecopy_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storecopy"
)

// TestEmptiedThreadNotDropped: a thread whose replies were all deleted
// still holds who takes part in it (a new reply lists it for them again),
// which memstore's rows do not carry: a copy from memstore refuses it, as
// it refuses threads with replies, rather than dropping it.
func TestEmptiedThreadNotDropped(t *testing.T) {
	ctx := context.Background()
	src := memstore.New()
	msgs := svctest.New(t, src, memstore.NewBlobStore(), nil)
	alice, err := msgs.SaveContact(ctx, messaging.Contact{ID: "ctc_alice", Username: "alice"})
	require.NoError(t, err)
	bob, err := msgs.SaveContact(ctx, messaging.Contact{ID: "ctc_bob", Username: "bob"})
	require.NoError(t, err)
	root, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "root"})
	require.NoError(t, err)
	r, err := msgs.Create(ctx, bob, messaging.NewMessage{ConversationID: "team", Text: "reply", ParentID: root.ID})
	require.NoError(t, err)
	require.NoError(t, msgs.Delete(ctx, bob, r.ID))

	dst := backendtest.SQL(t)[0].Open(t)
	_, err = storecopy.Copy(ctx, dst, nil, src, nil, nil)
	require.ErrorIs(t, err, messaging.ErrUnimplemented)

	// What the copy would have lost: bob takes part in the thread.
	_, err = msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "again", ParentID: root.ID})
	require.NoError(t, err)
	th, err := msgs.Threads(ctx, bob, messaging.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, th.Data, 1)
}
