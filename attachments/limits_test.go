package attachments_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/memstore"
)

// fullMessage returns services whose messages take two attachments, alice,
// and her message that has two.
func fullMessage(t *testing.T) (*attachments.Service, *memstore.BlobStore, messaging.Contact, string) {
	t.Helper()
	ctx := context.Background()
	store, blobs := memstore.New(), memstore.NewBlobStore()
	msgs := svctest.New(t, store, blobs, &messaging.Options{MaxAttachments: 2, Files: &attachments.Options{MaxUploadBytes: 32 << 20}})
	files := msgs.Files()
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	m, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "c", Text: "two files"})
	require.NoError(t, err)
	for range 2 {
		_, err := files.Upload(ctx, alice, attachments.Upload{Filename: "a.txt", MessageID: m.ID, Body: strings.NewReader("a")})
		require.NoError(t, err)
	}
	return files, blobs, alice, m.ID
}

// assertMessageFull checks the error of an upload to a full message: a 400
// naming message_id.
func assertMessageFull(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, messaging.ErrInvalid)
	var e *messaging.Error
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, "message_id", e.Param)
	assert.Contains(t, e.Message, "most attachments")
}

// TestUploadToFullMessageReadsNothing: issue 30 found a 20 MB upload to a
// message with its most attachments read whole, then refused. It is
// refused before its first byte is read, with or without a key.
func TestUploadToFullMessageReadsNothing(t *testing.T) {
	files, blobs, alice, msgID := fullMessage(t)
	for _, key := range []string{"", "key-1"} {
		body := &countingBody{r: io.LimitReader(zeros{}, 20<<20)}
		_, err := files.Upload(context.Background(), alice, attachments.Upload{Filename: "big.bin", MessageID: msgID, Body: body,
			Idempotency: messaging.Idempotency{Key: key}})
		assertMessageFull(t, err)
		assert.Zero(t, body.n, "key %q: bytes read of an upload refused", key)
	}
	assert.Equal(t, 2, objectCount(t, blobs), "nothing stored")
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// gatedBody is a body that waits for a gate before its bytes.
type gatedBody struct {
	gate    chan struct{}
	started chan struct{}
	r       io.Reader
}

func (b *gatedBody) Read(p []byte) (int, error) {
	if b.started != nil {
		close(b.started)
		b.started = nil
		<-b.gate
	}
	return b.r.Read(p)
}

// TestUploadToMessageFilledMeanwhile: an upload that passed the early
// check while the message had room, and whose message was filled while
// its file streamed, is refused by the link's own check, with the same
// error, and leaves nothing.
func TestUploadToMessageFilledMeanwhile(t *testing.T) {
	ctx := context.Background()
	store, blobs := memstore.New(), memstore.NewBlobStore()
	msgs := svctest.New(t, store, blobs, &messaging.Options{MaxAttachments: 1})
	files := msgs.Files()
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	m, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "c", Text: "one file"})
	require.NoError(t, err)

	slow := &gatedBody{gate: make(chan struct{}), started: make(chan struct{}), r: strings.NewReader("slow")}
	started := slow.started
	done := make(chan error, 1)
	go func() {
		_, err := files.Upload(ctx, alice, attachments.Upload{Filename: "slow.txt", MessageID: m.ID, Body: slow})
		done <- err
	}()
	<-started // past the early check, reading its file
	_, err = files.Upload(ctx, alice, attachments.Upload{Filename: "fast.txt", MessageID: m.ID, Body: strings.NewReader("fast")})
	require.NoError(t, err)
	close(slow.gate)
	assertMessageFull(t, <-done)
	assert.Equal(t, 1, objectCount(t, blobs), "the refused upload's file is removed")
}

// objectCount is the number of objects in blobs.
func objectCount(t *testing.T, blobs *memstore.BlobStore) int {
	t.Helper()
	n := 0
	require.NoError(t, blobs.List(context.Background(), "", func(driver.Object) error { n++; return nil }))
	return n
}
