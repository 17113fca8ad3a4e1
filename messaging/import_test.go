package messaging_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// TestImportMessages: the Service's bulk load stores what it is given on
// a store that has one (SQLite here), refuses a message that breaks the
// Service's rules storing nothing of the call, and is refused by a store
// without one.
func TestImportMessages(t *testing.T) {
	ctx := context.Background()
	store := backendtest.SQL(t)[0].Open(t)
	svc := svctest.New(t, store, nil, nil)
	alice, err := svc.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	msg := func(i int, text string) messaging.Message {
		at := base.Add(time.Duration(i) * time.Millisecond)
		return messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: "imported", Contact: messaging.Contact{ID: alice.ID}, Text: text, CreatedAt: at}
	}
	var good []messaging.Message
	for i := range 5 {
		good = append(good, msg(i, fmt.Sprintf("old message %d", i)))
	}
	for _, bad := range [][]messaging.Message{
		{good[0], msg(9, "")},                         // no text
		{good[0], msg(9, string(make([]byte, 5000)))}, // too long
		{good[0], {ID: "nope", ConversationID: "imported", Contact: alice, Text: "x", CreatedAt: base}},
		{good[0], func() messaging.Message { m := msg(9, "x"); m.ConversationID = "bad id!"; return m }()},
	} {
		err := svc.ImportMessages(ctx, bad)
		assert.ErrorIs(t, err, messaging.ErrInvalid)
	}
	page, err := svc.Messages(ctx, alice, "imported", messaging.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, page.Data, "a refused import stores nothing")

	require.NoError(t, svc.ImportMessages(ctx, good))
	page, err = svc.Messages(ctx, alice, "imported", messaging.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Data, 5)
	assert.Equal(t, "old message 4", page.Data[0].Text)
	assert.Equal(t, "alice", page.Data[0].Contact.Username)
	assert.ErrorIs(t, svc.ImportMessages(ctx, good[:1]), messaging.ErrConflict, "an id taken")

	mem := svctest.New(t, memstore.New(), nil, nil)
	assert.ErrorIs(t, mem.ImportMessages(ctx, good), messaging.ErrInvalid, "memstore has no bulk load")
}
