package httpadapter_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/internal/backendtest"
)

// TestFailingDatabaseShowsNoSQL drives a database that fails every query
// of a table (dropped under the running server) on every engine: clients
// get "internal error" and a request id, never SQL, table names or the
// driver's words; the log gets the cause with the same request id (issue
// 10, defect 8: the test restated that errors of a healthy database carry
// no SQL).
func TestFailingDatabaseShowsNoSQL(t *testing.T) {
	for _, eng := range backendtest.SQL(t) {
		t.Run(eng.Name, func(t *testing.T) {
			store := eng.Open(t)
			var logs bytes.Buffer
			e := newEnv(t, store.Driver(), envConfig{opts: httpadapter.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
			fx := e.fixture(t)
			for _, table := range []string{"message_revisions", "reactions", "reaction_names", "attachments", "messages"} {
				_, err := store.DB().ExecContext(e.ctx, "DROP TABLE "+table)
				require.NoError(t, err, table)
			}
			for _, req := range []struct{ method, path string }{
				{"GET", "/v1/messages?conversation_id=" + fx.conv},
				{"GET", "/v1/messages/" + fx.msgA},
				{"GET", "/v1/attachments/" + fx.attA},
				{"GET", "/v1/attachments?conversation_id=" + fx.conv},
				{"POST", "/v1/messages"},
				// alice's own: the Service knows the sender of bob's, which
				// it reacted to, and refuses alice's edit without the database.
				{"PUT", "/v1/messages/" + fx.msgA},
			} {
				var body *reqBody
				if req.method != "GET" {
					body = form("conversation_id=" + fx.conv + "&message=hi&reactions[tada][]=alice")
				}
				res := e.as(t, "alice", req.method, req.path, body)
				assertError(t, res, 500, wantErr{"api_error", "internal_error", ""})
				text := strings.ToLower(string(res.body))
				for _, word := range []string{"select", "insert", "update", "where", "table", "messages", "attachments", "exist", "sql", "relation", "error 1146"} {
					assert.NotContains(t, strings.ReplaceAll(text, `"internal error"`, ""), word, "%s %s: %s", req.method, req.path, res.body)
				}
				id := res.Header.Get("Request-Id")
				require.NotEmpty(t, id)
				assert.Contains(t, logs.String(), id, "the cause is logged with the request id")
			}
			assert.Regexp(t, `(?i)no such table|does not exist|doesn't exist`, logs.String(), "the driver's words are in the log")
		})
	}
}
