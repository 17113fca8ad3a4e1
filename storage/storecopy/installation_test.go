package storecopy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/messaging"
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
