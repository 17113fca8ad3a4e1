package sqlstore

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
)

// TestSQLiteWriteTransactionsPrepared: the statements that a SQLite write
// transaction runs (a reaction added and taken back, a message deleted)
// are prepared on the writer once it has run them, and the next such
// transaction finds every one of them prepared.
func TestSQLiteWriteTransactionsPrepared(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "parley.db"), &Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Migrate(ctx))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	alice := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: at}
	require.NoError(t, s.PutContact(ctx, alice))
	send := func() string {
		m := messaging.Message{ID: ids.New(ids.Message), ConversationID: "c", Contact: alice, Text: "hi", CreatedAt: at}
		require.NoError(t, s.CreateMessage(ctx, m, nil, nil))
		return m.ID
	}
	cached := func() int {
		s.wstmts.mu.RLock()
		defer s.wstmts.mu.RUnlock()
		return len(s.wstmts.m)
	}
	writes := func() {
		id := send()
		_, err := s.UpdateMessage(ctx, id, messaging.MessageChange{AddReactions: []messaging.Reaction{{Name: "x", Reactors: []string{alice.ID}}}})
		require.NoError(t, err)
		_, err = s.UpdateMessage(ctx, id, messaging.MessageChange{RemoveReaction: &messaging.Reaction{Name: "x", Reactors: []string{alice.ID}}})
		require.NoError(t, err)
		_, err = s.DeleteMessage(ctx, id, nil)
		require.NoError(t, err)
	}

	sends := cached()
	writes()
	first := cached()
	assert.Greater(t, first, sends, "the transactions' statements are prepared after they ran")
	writes()
	assert.Equal(t, first, cached(), "and found prepared the next time: none is run unprepared again")
}
