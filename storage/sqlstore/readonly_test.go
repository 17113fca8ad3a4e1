package sqlstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/sqlstore"
)

// readKey marks the context of the reads whose statements
// TestReadsDoNotWrite records.
type readKey struct{}

// TestReadsDoNotWrite checks, on every engine, that a page of GET
// /v1/conversations, GET /v1/conversations/:id and the Store's
// GetConversation and ListConversations run no statement that writes or
// takes a row lock, after sends, a late message before a reader's position
// and a read: the counters they show are the sends'.
func TestReadsDoNotWrite(t *testing.T) {
	eachMigrated(t, "", func(t *testing.T, _ string, s *sqlstore.Store) {
		ctx := t.Context()
		statements := sqlstore.RecordStatements(s, readKey{}) // before the services' goroutines start
		msgs, err := messaging.New(ctx, s, memstore.NewBlobStore(), nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = msgs.Close() })
		alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
		require.NoError(t, err)
		bob, err := msgs.SaveContact(ctx, messaging.Contact{Username: "bob"})
		require.NoError(t, err)
		api, err := httpadapter.New(msgs, &httpadapter.Options{
			Authenticator: httpadapter.StaticTokens(map[string]messaging.Contact{"a": alice, "b": bob}),
		})
		require.NoError(t, err)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			api.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), readKey{}, true)))
		}))
		t.Cleanup(srv.Close)
		get := func(path, token string) {
			t.Helper()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+token)
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_ = res.Body.Close()
			require.Equal(t, http.StatusOK, res.StatusCode, path)
		}
		sendTo := func(conv string, who messaging.Contact, n int) []messaging.Message {
			var out []messaging.Message
			for range n {
				m, err := msgs.Create(ctx, who, messaging.NewMessage{ConversationID: conv, Text: "hi"})
				require.NoError(t, err)
				out = append(out, m)
			}
			return out
		}
		sent := sendTo("c1", alice, 3)
		sendTo("c2", bob, 2)
		// The callers' first requests record their activity (Touch, at most
		// once a minute): not counted.
		get("/v1/conversations", "a")
		get("/v1/conversations", "b")
		_, err = msgs.MarkRead(ctx, bob, "c1", sent[2].ID)
		require.NoError(t, err)
		sendTo("c1", alice, 2)
		sendTo("c2", alice, 1)
		late := messaging.Message{ID: "msg_late", ConversationID: "c1", Contact: alice, Text: "late", CreatedAt: sent[0].CreatedAt.Add(time.Microsecond)}
		require.NoError(t, s.Driver().CreateMessage(ctx, late, nil, nil)) // before bob's position

		before := len(statements())
		get("/v1/conversations", "b")
		get("/v1/conversations?limit=1", "a")
		get("/v1/conversations/c1", "b")
		get("/v1/conversations/"+url.PathEscape("c2"), "a")
		rctx := context.WithValue(ctx, readKey{}, true)
		c, err := s.Driver().GetConversation(rctx, "c1", bob.ID)
		require.NoError(t, err)
		assert.EqualValues(t, 6, c.MessageCount)
		assert.EqualValues(t, 2, c.UnreadCount, "alice's two after bob's position")
		reads := statements()[before:]
		require.NotEmpty(t, reads, "the reads are recorded")
		for _, q := range reads {
			assert.False(t, writes(q), "a read ran %q", q)
		}
	})
}

// writes reports whether the statement q writes or takes a row lock.
func writes(q string) bool {
	u := strings.ToUpper(strings.TrimSpace(q))
	for _, w := range []string{"INSERT", "UPDATE", "DELETE", "REPLACE", "MERGE", "CREATE", "ALTER", "DROP", "TRUNCATE", "LOCK"} {
		if strings.HasPrefix(u, w) {
			return true
		}
	}
	if strings.HasPrefix(u, "WITH") && (strings.Contains(u, "INSERT INTO") || strings.Contains(u, "UPDATE ") || strings.Contains(u, "DELETE FROM")) {
		return true
	}
	return strings.Contains(u, " FOR UPDATE") || strings.Contains(u, " FOR SHARE") || strings.Contains(u, "LOCK IN SHARE MODE")
}
