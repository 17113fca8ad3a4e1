package sqlstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/sqlstore"
)

// keysVersion is the schema version that adds idempotency keys and
// revisions.
const keysVersion = "20261123000002"

// TestMigrateKeysAndRevisionsUpgrade fills a database at the version before
// the one of idempotency keys and revisions, then migrates it: the data is
// still there, and edits keep revisions and keyed writes keep records on
// the messages that were there before.
func TestMigrateKeysAndRevisionsUpgrade(t *testing.T) {
	eachEngineBefore(t, keysVersion, func(t *testing.T, _ string, s *sqlstore.Store) {
		ctx := t.Context()
		_, err := s.DB().ExecContext(ctx, "SELECT COUNT(*) FROM idempotency_keys")
		require.Error(t, err, "no idempotency_keys before the version")

		// Rows written as the previous version writes them.
		at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
		alice := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: at}
		require.NoError(t, s.PutContact(ctx, alice))
		old := messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: "c", Contact: alice, Text: "before the upgrade", CreatedAt: at}
		// (By SQL: today's sends and imports use tables of later versions.)
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{"INSERT INTO messages (id, conversation_id, contact_id, text, created_at) VALUES (?, ?, ?, ?, ?)", []any{old.ID, "c", alice.ID, old.Text, at}},
			{"INSERT INTO conversations (id, created_at, updated_at, message_count, last_message_id) VALUES (?, ?, ?, 1, ?)", []any{"c", at, at, old.ID}},
			{"INSERT INTO conversation_members (conversation_id, contact_id, own_count) VALUES (?, ?, 1)", []any{"c", alice.ID}},
		} {
			_, err := s.DB().ExecContext(ctx, q.sql, q.args...)
			require.NoError(t, err)
		}

		require.NoError(t, s.Migrate(ctx))
		require.NoError(t, s.Migrate(ctx), "again: nothing to do")
		var n int
		require.NoError(t, s.DB().NewRaw("SELECT COUNT(*) FROM parley_migrations").Scan(ctx, &n))
		assert.Equal(t, len(sqlstore.Versions()), n)

		got, err := s.GetMessage(ctx, old.ID)
		require.NoError(t, err)
		assert.Equal(t, "before the upgrade", got.Text)
		revs, more, err := s.ListRevisions(ctx, driver.RevisionQuery{MessageID: old.ID, Limit: 10})
		require.NoError(t, err)
		assert.Empty(t, revs, "a message from before has no revisions")
		assert.False(t, more)

		// An old message is edited through the Service: the edit keeps a
		// revision; a keyed edit keeps a record, and its retry replays.
		msgs := messaging.New(s, &messaging.Options{Logger: discard})
		text := "after the upgrade"
		u := messaging.Update{Text: &text, Idempotency: messaging.Idempotency{Key: "upgrade-edit"}}
		first, err := msgs.Update(ctx, alice, old.ID, u)
		require.NoError(t, err)
		var replayed bool
		u.Idempotency.Replayed = &replayed
		again, err := msgs.Update(ctx, alice, old.ID, u)
		require.NoError(t, err)
		assert.True(t, replayed)
		assert.Equal(t, first.UpdatedAt, again.UpdatedAt)
		page, err := msgs.Revisions(ctx, alice, old.ID, messaging.RevisionListOptions{})
		require.NoError(t, err)
		require.Len(t, page.Data, 1)
		assert.Equal(t, "before the upgrade", page.Data[0].Text)

		// Deleting the old message takes its revision along.
		require.NoError(t, msgs.Delete(ctx, alice, old.ID))
		_, err = s.GetRevision(ctx, page.Data[0].ID)
		assert.ErrorIs(t, err, messaging.ErrNotFound)
	})
}
