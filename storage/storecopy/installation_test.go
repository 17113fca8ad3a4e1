package storecopy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storecopy"
)

// TestRowsOnlyCopyTakesEveryInstallationID: a copy of the rows only takes
// the attachment keys under the prefix of any installation id that
// package attachments takes (1 to 64 letters, digits, '_' or '-': a
// backend of another's making names its database so), handed to the
// source by an earlier copy. It took only ids of "ins_" and lower-case
// letters, digits and '_', and refused such a source's rows.
func TestRowsOnlyCopyTakesEveryInstallationID(t *testing.T) {
	ctx := context.Background()
	first, firstFiles := memstore.New(), memstore.NewBlobStore()
	require.NoError(t, first.Driver().(storecopy.Sink).SetInstallation(ctx, storecopy.Installation{ID: "Parley-EU-1"}))
	svc, err := messaging.New(ctx, first, firstFiles, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	alice, err := svc.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	a, err := svc.Files().Upload(ctx, alice, attachments.Upload{Filename: "a.txt", ConversationID: "team", Body: strings.NewReader("hello")})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(a.Key, attachments.KeyPrefix+"Parley-EU-1/"), a.Key)

	mid := memstore.New()
	_, err = storecopy.Copy(ctx, mid, memstore.NewBlobStore(), first, firstFiles, nil)
	require.NoError(t, err)
	rep, err := storecopy.Copy(ctx, memstore.New(), nil, mid, nil, nil)
	require.NoError(t, err, "the rows of the copy, whose key the first database made")
	assert.True(t, rep.Verified)

	// An id that attachments refuses is no installation's.
	bad := memstore.New()
	_, err = storecopy.Copy(ctx, bad, nil, mid, nil, nil)
	require.NoError(t, err)
	a.ID, a.Key = "att_bad", attachments.KeyPrefix+"Parley.EU/att_bad"
	require.NoError(t, bad.Driver().(storecopy.Sink).Load(ctx, &storecopy.Batch{Kind: storecopy.Attachments, Attachments: []messaging.Attachment{a}}))
	_, err = storecopy.Copy(ctx, memstore.New(), nil, bad, nil, nil)
	require.ErrorIs(t, err, messaging.ErrInvalid)
}

// TestCopyRefusesSourceOfInvalidInstallationID: a source whose
// installation id is none that package attachments takes (a tampered or
// foreign database) is refused before anything is written: the copy
// names the source's files, its handover and its own id by that id, and
// took the keys under its prefix ("attachments/../x" under "..") for the
// source's own. It was copied as it was.
func TestCopyRefusesSourceOfInvalidInstallationID(t *testing.T) {
	ctx := context.Background()
	for _, id := range []string{"Parley.EU", "ins_x/y", "..", strings.Repeat("a", 65)} {
		t.Run(id, func(t *testing.T) {
			src, srcFiles := memstore.New(), memstore.NewBlobStore()
			svc, err := messaging.New(ctx, src, srcFiles, nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = svc.Close() })
			alice, err := svc.SaveContact(ctx, messaging.Contact{Username: "alice"})
			require.NoError(t, err)
			_, err = svc.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "hello"})
			require.NoError(t, err)
			require.NoError(t, src.Driver().(storecopy.Sink).SetInstallation(ctx, storecopy.Installation{ID: id}))
			srcKeys := keysOf(t, srcFiles)

			for _, tc := range []struct {
				name     string
				dstFiles attachments.BlobStore
				srcFiles attachments.BlobStore
			}{
				{"into another bucket", memstore.NewBlobStore(), srcFiles},
				{"database only", srcFiles, srcFiles},
				{"rows only", nil, nil},
			} {
				t.Run(tc.name, func(t *testing.T) {
					dst := memstore.New()
					dstID, err := dst.Driver().(driver.Installation).InstallationID(ctx)
					require.NoError(t, err)
					var dstKeys []string
					if tc.dstFiles != nil {
						dstKeys = keysOf(t, tc.dstFiles)
					}
					_, err = storecopy.Copy(ctx, dst, tc.dstFiles, src, tc.srcFiles, nil)
					require.ErrorIs(t, err, messaging.ErrInvalid)
					assert.ErrorContains(t, err, id)
					gotID, err := dst.Driver().(driver.Installation).InstallationID(ctx)
					require.NoError(t, err)
					assert.Equal(t, dstID, gotID, "the destination keeps its id")
					snap, err := dst.Driver().(storecopy.Sink).Snapshot(ctx)
					require.NoError(t, err)
					defer snap.Close()
					n, err := snap.Count(ctx, storecopy.Contacts)
					require.NoError(t, err)
					assert.Zero(t, n, "no row is copied")
					if tc.dstFiles != nil {
						assert.Equal(t, dstKeys, keysOf(t, tc.dstFiles), "nothing is written to the destination bucket")
					}
					assert.Equal(t, srcKeys, keysOf(t, srcFiles), "nor to the source's")
				})
			}
		})
	}
}

// keysOf returns the keys of every object of b.
func keysOf(t *testing.T, b attachments.BlobStore) []string {
	t.Helper()
	keys := []string{}
	require.NoError(t, b.(driver.Lister).List(context.Background(), "", func(o driver.Object) error {
		keys = append(keys, o.Key)
		return nil
	}))
	return keys
}

// TestCopyResumesNoDestinationOfInvalidInstallationID: a destination whose
// id begins as a copy's of the source (CopyID) but is none that package
// attachments takes was not made by CopyID, so it is no copy to resume:
// empty, it gets an id of its own. It was resumed into, and the handover
// written at a key made of its id ("…/ins_…_x/../y.json").
func TestCopyResumesNoDestinationOfInvalidInstallationID(t *testing.T) {
	ctx := context.Background()
	src, srcFiles := memstore.New(), memstore.NewBlobStore()
	id, err := src.Driver().(driver.Installation).InstallationID(ctx)
	require.NoError(t, err)
	copyID := storecopy.CopyID(id)
	bad := copyID[:strings.LastIndex(copyID, "_")+1] + "x/../y"
	require.True(t, storecopy.IsCopyOf(copyID, id))
	assert.False(t, storecopy.IsCopyOf(bad, id), "CopyID makes no such id")

	dst, dstFiles := memstore.New(), memstore.NewBlobStore()
	require.NoError(t, dst.Driver().(storecopy.Sink).SetInstallation(ctx, storecopy.Installation{ID: bad}))
	rep, err := storecopy.Copy(ctx, dst, dstFiles, src, srcFiles, nil)
	require.NoError(t, err)
	assert.True(t, rep.Verified)
	got, err := dst.Driver().(driver.Installation).InstallationID(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, bad, got, "the destination gets an id of its own")
	assert.True(t, storecopy.IsCopyOf(got, id), got)
	for _, k := range keysOf(t, dstFiles) {
		assert.NotContains(t, k, "..")
	}
}
