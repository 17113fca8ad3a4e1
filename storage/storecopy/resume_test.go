package storecopy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storecopy"
)

// sourceWithFile returns a memstore holding an attachment, and a bucket
// holding its file.
func sourceWithFile(t *testing.T) (messaging.Storage, *memstore.BlobStore) {
	t.Helper()
	ctx := context.Background()
	src, files := memstore.New(), memstore.NewBlobStore()
	d := src.Driver()
	id, err := d.(driver.Installation).InstallationID(ctx)
	require.NoError(t, err)
	require.NoError(t, d.PutContact(ctx, messaging.Contact{ID: "ctc_a", Username: "a", CreatedAt: time.Unix(1, 0).UTC()}))
	body := []byte("hello")
	sum := sha256.Sum256(body)
	a := messaging.Attachment{ID: "att_1", ConversationID: "c", UploaderID: "ctc_a", Filename: "a.txt", FileType: "text/plain",
		FileSize: int64(len(body)), SHA256: hex.EncodeToString(sum[:]), Key: attachments.KeyPrefix + id + "/att_1", CreatedAt: time.Unix(2, 0).UTC()}
	require.NoError(t, files.Put(ctx, a.Key, a.FileType, bytes.NewReader(body)))
	require.NoError(t, d.CreateAttachment(ctx, a, nil))
	return src, files
}

// A copy resumed with files, after a first run of the rows only, refuses
// an unclaimed bucket holding another Parley's files, as a first run
// does, rather than claiming it for the copy.
func TestResumeRefusesForeignBucket(t *testing.T) {
	ctx := context.Background()
	src, srcFiles := sourceWithFile(t)
	dst := memstore.New()
	_, err := storecopy.Copy(ctx, dst, nil, src, nil, nil)
	require.NoError(t, err)

	foreign := memstore.NewBlobStore()
	require.NoError(t, foreign.Put(ctx, attachments.KeyPrefix+"ins_other/att_9", "text/plain", bytes.NewReader([]byte("theirs"))))
	_, err = storecopy.Copy(ctx, dst, foreign, src, srcFiles, nil)
	require.ErrorIs(t, err, messaging.ErrConflict)
	require.ErrorContains(t, err, "none is the source's")
	_, err = foreign.Open(ctx, attachments.ClaimKey)
	require.ErrorIs(t, err, messaging.ErrNotFound, "the other Parley's bucket is not claimed for the copy")

	// The source's own bucket stays a fine destination.
	rep, err := storecopy.Copy(ctx, dst, srcFiles, src, srcFiles, nil)
	require.NoError(t, err)
	require.True(t, rep.Verified)
}
