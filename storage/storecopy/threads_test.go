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

// TestThreadsCopied copies a Parley with threads along the SQL engines
// whose environment variables are set (SQLite first): replies, the roots'
// counts, each reader's unread replies and read position, who takes part,
// and a root's tombstone read back the same after every copy, which the
// copy's verification checked. memstore's rows do not carry threads
// yet: a copy from or into it refuses them (TestThreadsNotFlattened).
func TestThreadsCopied(t *testing.T) {
	ctx := context.Background()
	engines := backendtest.SQL(t)
	src := engines[0].Open(t)
	msgs := svctest.New(t, src, memstore.NewBlobStore(), nil)
	alice, err := msgs.SaveContact(ctx, messaging.Contact{ID: "ctc_alice", Username: "alice"})
	require.NoError(t, err)
	bob, err := msgs.SaveContact(ctx, messaging.Contact{ID: "ctc_bob", Username: "bob"})
	require.NoError(t, err)
	send := func(who messaging.Contact, text, parent string) messaging.Message {
		m, err := msgs.Create(ctx, who, messaging.NewMessage{ConversationID: "team", Text: text, ParentID: parent})
		require.NoError(t, err)
		return m
	}
	root, gone := send(alice, "lunch?", ""), send(alice, "draft", "")
	r1 := send(bob, "yes", root.ID)
	send(alice, "where?", root.ID)
	send(bob, "notes", gone.ID)
	_, err = msgs.MarkThreadRead(ctx, alice, root.ID, r1.ID)
	require.NoError(t, err)
	require.NoError(t, msgs.Delete(ctx, alice, gone.ID))

	view := func(s *messaging.Service) map[string]any {
		out := map[string]any{}
		for _, who := range []messaging.Contact{alice, bob} {
			th, err := s.Threads(ctx, who, messaging.ListOptions{})
			require.NoError(t, err)
			out["threads of "+who.Username] = th
			for _, id := range []string{root.ID, gone.ID} {
				one, err := s.Thread(ctx, who, id)
				require.NoError(t, err)
				out["thread "+id+" of "+who.Username] = one
			}
		}
		for _, id := range []string{root.ID, gone.ID} {
			r, err := s.Replies(ctx, alice, id, messaging.ListOptions{})
			require.NoError(t, err)
			out["replies "+id] = r
		}
		ms, err := s.Messages(ctx, bob, "", messaging.ListOptions{})
		require.NoError(t, err)
		out["messages"] = ms
		c, err := s.Conversations(ctx, bob, messaging.ListOptions{})
		require.NoError(t, err)
		out["conversations"] = c
		return out
	}
	want := view(msgs)
	require.True(t, want["thread "+gone.ID+" of bob"].(messaging.Thread).Root.Deleted, "the fixture has a tombstone")
	prev := src
	for _, e := range append(engines[1:], engines[0]) {
		next := e.Open(t)
		rep, err := storecopy.Copy(ctx, next, memstore.NewBlobStore(), prev, memstore.NewBlobStore(), nil)
		require.NoError(t, err, "copy to %s", e.Name)
		require.True(t, rep.Verified)
		got := view(svctest.New(t, next, memstore.NewBlobStore(), nil))
		assert.Equal(t, want, got, "after the copy to %s", e.Name)
		prev = next
	}
}

// TestThreadsNotFlattened: memstore's rows do not carry threads, so a copy
// of threads from or into it is refused with ErrUnimplemented, rather
// than made with the replies as plain messages (from memstore) or each
// thread as a conversation of its own (into it).
func TestThreadsNotFlattened(t *testing.T) {
	ctx := context.Background()
	withThread := func(st messaging.Storage) {
		msgs := svctest.New(t, st, memstore.NewBlobStore(), nil)
		alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
		require.NoError(t, err)
		root, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "root"})
		require.NoError(t, err)
		_, err = msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "reply", ParentID: root.ID})
		require.NoError(t, err)
	}
	mem, sql := memstore.New(), backendtest.SQL(t)[0].Open(t)
	withThread(mem)
	_, err := storecopy.Copy(ctx, backendtest.SQL(t)[0].Open(t), memstore.NewBlobStore(), mem, memstore.NewBlobStore(), nil)
	assert.ErrorIs(t, err, messaging.ErrUnimplemented, "from memstore")

	withThread(sql)
	dst := memstore.New()
	_, err = storecopy.Copy(ctx, dst, memstore.NewBlobStore(), sql, memstore.NewBlobStore(), nil)
	assert.ErrorIs(t, err, messaging.ErrUnimplemented, "into memstore")
	msgs := svctest.New(t, dst, memstore.NewBlobStore(), nil)
	convs, err := msgs.Conversations(ctx, messaging.Contact{ID: "nobody"}, messaging.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, convs.Data, "no thread became a conversation")
}
