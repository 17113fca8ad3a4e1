package storecopy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storecopy"
)

// TestCopyTakesTheLongestNames: a username and a reaction name are up to
// 64 characters, which the API takes of four bytes each (256 bytes of
// emoji): a copy takes every row the API made, to every backend.
func TestCopyTakesTheLongestNames(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("😀", 64)
	require.Len(t, long, 256)
	src := memstore.New()
	msgs := svctest.New(t, src, memstore.NewBlobStore(), nil)
	alice, err := msgs.SaveContact(ctx, messaging.Contact{ID: "ctc_alice", Username: long})
	require.NoError(t, err)
	m, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "hi"})
	require.NoError(t, err)
	_, err = msgs.React(ctx, alice, m.ID, long)
	require.NoError(t, err)

	dsts := map[string]messaging.Storage{"memstore": memstore.New()}
	for _, e := range backendtest.SQL(t) {
		dsts[e.Name] = e.Open(t)
	}
	for name, dst := range dsts {
		rep, err := storecopy.Copy(ctx, dst, nil, src, nil, nil)
		require.NoError(t, err, "copy to %s", name)
		assert.True(t, rep.Verified)
		got, err := svctest.New(t, dst, memstore.NewBlobStore(), nil).Get(ctx, alice, m.ID)
		require.NoError(t, err)
		require.Len(t, got.Reactions, 1)
		assert.Equal(t, long, got.Reactions[0].Name, "on %s", name)
		assert.Equal(t, long, got.Contact.Username, "on %s", name)
	}
}
