package storecopy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/claim"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storecopy"
)

// A database-only copy (into the source's own bucket) that fails, here on
// a row it refuses, leaves no handover in the bucket: the handover it
// wrote first, to keep the source from deleting files the copy names,
// froze the source's files for good, and the source could no longer
// delete a file of its own.
func TestFailedDatabaseOnlyCopyFreezesNothing(t *testing.T) {
	ctx := context.Background()
	src, files := memstore.New(), memstore.NewBlobStore()
	svc, err := messaging.New(ctx, src, files, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	require.NoError(t, svc.Files().Claim(ctx), "as a server does at its start")
	alice, err := svc.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	a, err := svc.Files().Upload(ctx, alice, attachments.Upload{Filename: "a.txt", ConversationID: "team", Body: strings.NewReader("hello")})
	require.NoError(t, err)
	m, err := svc.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "longer than the copy takes"})
	require.NoError(t, err)

	dst := memstore.New()
	_, err = storecopy.Copy(ctx, dst, files, src, files, &storecopy.Options{MaxTextChars: 4})
	require.ErrorIs(t, err, messaging.ErrInvalid)
	require.ErrorContains(t, err, m.ID)

	hs, err := claim.LoadHandovers(ctx, files)
	require.NoError(t, err)
	assert.Empty(t, hs, "no handover is left")
	require.NoError(t, svc.Files().Delete(ctx, alice, a.ID))
	_, err = files.Open(ctx, a.Key)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "the source deletes its own file")

	// Run again, taking the text, the copy resumes and hands the files
	// over.
	rep, err := storecopy.Copy(ctx, dst, files, src, files, nil)
	require.NoError(t, err)
	assert.True(t, rep.Verified)
	hs, err = claim.LoadHandovers(ctx, files)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.True(t, hs[0].Shared)
}
