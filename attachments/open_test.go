package attachments_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// countingOpens is a BlobStore that counts the objects it opens.
type countingOpens struct {
	attachments.BlobStore
	opens atomic.Int64
}

func (c *countingOpens) Open(ctx context.Context, key string) (io.ReadSeekCloser, error) {
	c.opens.Add(1)
	return c.BlobStore.Open(ctx, key)
}

// TestOpenNamed: the current name opens the file; another name returns the
// attachment and no reader, without opening anything; an attachment the
// caller may not see is not found under any name.
func TestOpenNamed(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	blobs := &countingOpens{BlobStore: memstore.NewBlobStore()}
	files := svctest.New(t, store, blobs, nil).Files()
	alice, bob := messaging.Contact{ID: "ctc_alice"}, messaging.Contact{ID: "ctc_bob"}
	a, err := files.Upload(ctx, alice, attachments.Upload{Filename: "a.txt", Body: strings.NewReader("hello")})
	require.NoError(t, err)
	a, err = files.Rename(ctx, alice, a.ID, "b.txt")
	require.NoError(t, err)

	got, r, err := files.OpenNamed(ctx, alice, a.ID, "a.txt")
	require.NoError(t, err)
	assert.Nil(t, r)
	assert.Equal(t, "b.txt", got.Filename)
	assert.Zero(t, blobs.opens.Load(), "opens for another name")

	got, r, err = files.OpenNamed(ctx, alice, a.ID, "b.txt")
	require.NoError(t, err)
	require.NotNil(t, r)
	b, err := io.ReadAll(r)
	require.NoError(t, r.Close())
	require.NoError(t, err)
	assert.Equal(t, "hello", string(b))
	assert.Equal(t, a.ID, got.ID)
	assert.EqualValues(t, 1, blobs.opens.Load())

	// In no conversation, alice's file is hers alone.
	for _, name := range []string{"a.txt", "b.txt"} {
		_, r, err = files.OpenNamed(ctx, bob, a.ID, name)
		assert.True(t, errors.Is(err, messaging.ErrNotFound), "%s: %v", name, err)
		assert.Nil(t, r)
	}
	assert.EqualValues(t, 1, blobs.opens.Load())
}
