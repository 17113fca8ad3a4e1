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

// A database-only copy of a source without files, whose bucket it never
// claimed (a server claims its bucket at its start, a host may not), finds
// an unclaimed bucket without files, which it cannot tell from a new one.
// It took it for a new one, claimed it and was handed the source's prefix
// alone (exclusive), so the source could no longer use its own bucket
// (its Claim: "belongs to another Parley database"). It takes nothing: the
// handover is shared, the bucket stays unclaimed, and both databases use
// it, each under a prefix of its own.
func TestDatabaseOnlyCopyTakesNoUnclaimedBucket(t *testing.T) {
	ctx := context.Background()
	src, files := memstore.New(), memstore.NewBlobStore()
	svc, err := messaging.New(ctx, src, files, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	alice, err := svc.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	_, err = svc.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "no files yet"})
	require.NoError(t, err)

	dst := memstore.New()
	rep, err := storecopy.Copy(ctx, dst, files, src, files, nil)
	require.NoError(t, err)
	assert.True(t, rep.Verified)
	_, _, found, err := claim.Load(ctx, files)
	require.NoError(t, err)
	assert.False(t, found, "the copy claims no bucket that may be its source's")
	hs, err := claim.LoadHandovers(ctx, files)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.True(t, hs[0].Shared)

	require.NoError(t, svc.Files().Claim(ctx), "the source uses its own bucket")
	cp, err := messaging.New(ctx, dst, files, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cp.Close() })
	require.NoError(t, cp.Files().Claim(ctx), "and so does the copy, which shares it")
	a, err := svc.Files().Upload(ctx, alice, attachments.Upload{Filename: "a.txt", ConversationID: "team", Body: strings.NewReader("hello")})
	require.NoError(t, err)
	_, err = cp.Files().Reconcile(ctx)
	require.NoError(t, err)
	_, err = files.Open(ctx, a.Key)
	assert.NoError(t, err, "the copy leaves the source's new file alone")
}
