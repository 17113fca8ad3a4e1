package sqlstore_test

import (
	"database/sql/driver"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/sqlstore"
)

// seed inserts n messages spread over convs conversations, one second
// apart, and refreshes the planner's statistics.
func seed(t *testing.T, s *sqlstore.Store, engine string, n, convs int) {
	t.Helper()
	ctx := t.Context()
	c := messaging.Contact{ID: ids.New(ids.Contact), Username: "seed", CreatedAt: time.Now().UTC()}
	require.NoError(t, s.PutContact(ctx, c))
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	const batch = 500
	for done := 0; done < n; done += batch {
		var b strings.Builder
		var args []any
		b.WriteString("INSERT INTO messages (id, conversation_id, contact_id, text, created_at) VALUES ")
		for i := done; i < min(done+batch, n); i++ {
			if i > done {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?, ?, ?)")
			at := start.Add(time.Duration(i) * time.Second)
			args = append(args, ids.NewAt(ids.Message, at), fmt.Sprintf("conv_%d", i%convs), c.ID, "seed message", at)
		}
		_, err := s.DB().ExecContext(ctx, b.String(), args...)
		require.NoError(t, err)
	}
	analyze := map[string]string{"postgres": "ANALYZE", "sqlite": "ANALYZE", "mysql": "ANALYZE TABLE messages, contacts"}[engine]
	_, err := s.DB().ExecContext(ctx, analyze)
	require.NoError(t, err)
}

// explainQueries are the list queries whose plans must read an index in
// order: first and second pages, of a conversation and of all.
func explainQueries(t *testing.T, s *sqlstore.Store) map[string]struct {
	index string
	query string
	args  []any
} {
	t.Helper()
	var last messaging.Message
	items, _, err := s.ListMessages(t.Context(), messaging.MessageQuery{ConversationIDs: []string{"conv_7"}, Limit: 10})
	require.NoError(t, err)
	require.Len(t, items, 10)
	last = items[9]
	cursor := &messaging.Cursor{Time: last.CreatedAt, ID: last.ID}
	out := map[string]struct {
		index string
		query string
		args  []any
	}{}
	for name, q := range map[string]messaging.MessageQuery{
		"conversation first page":  {ConversationIDs: []string{"conv_7"}, Limit: 10},
		"conversation second page": {ConversationIDs: []string{"conv_7"}, Limit: 10, After: cursor},
		"all first page":           {All: true, Limit: 10},
		"all second page":          {All: true, Limit: 10, After: cursor},
	} {
		query, args := sqlstore.MessagePageSQL(s, q)
		index := "messages_created"
		if !q.All {
			index = "messages_conversation_created"
		}
		out[name] = struct {
			index string
			query string
			args  []any
		}{index, query, args}
	}
	return out
}

func TestExplainPostgres(t *testing.T) {
	e := engine(t, "postgres")
	s := e.Open(t)
	seed(t, s, e.Name, 5000, 50)
	for name, q := range explainQueries(t, s) {
		t.Run(name, func(t *testing.T) {
			var plan []string
			require.NoError(t, s.DB().NewRaw("EXPLAIN "+q.query, q.args...).Scan(t.Context(), &plan))
			text := strings.Join(plan, "\n")
			t.Logf("EXPLAIN (PostgreSQL) %s:\n%s", name, text)
			assert.Contains(t, text, "Index Scan using "+q.index+" on messages m")
			assert.NotContains(t, text, "Seq Scan on messages")
			for _, line := range plan {
				assert.NotRegexp(t, `->\s+(Incremental )?Sort\b|^(Incremental )?Sort\b`, strings.TrimSpace(line), "no sort of the messages")
			}
		})
	}
}

func TestExplainSQLite(t *testing.T) {
	e := engine(t, "sqlite")
	s := e.Open(t)
	seed(t, s, e.Name, 5000, 50)
	for name, q := range explainQueries(t, s) {
		t.Run(name, func(t *testing.T) {
			var rows []struct {
				ID      int    `bun:"id"`
				Parent  int    `bun:"parent"`
				NotUsed int    `bun:"notused"`
				Detail  string `bun:"detail"`
			}
			require.NoError(t, s.DB().NewRaw("EXPLAIN QUERY PLAN "+q.query, q.args...).Scan(t.Context(), &rows))
			var lines []string
			for _, r := range rows {
				lines = append(lines, r.Detail)
			}
			text := strings.Join(lines, "\n")
			t.Logf("EXPLAIN QUERY PLAN (SQLite) %s:\n%s", name, text)
			assert.Regexp(t, `(SEARCH|SCAN) m USING INDEX `+q.index+`\b`, text)
			assert.NotContains(t, text, "USE TEMP B-TREE FOR ORDER BY")
		})
	}
}

func TestExplainMySQL(t *testing.T) {
	e := engine(t, "mysql")
	s := e.Open(t)
	seed(t, s, e.Name, 5000, 50)
	for name, q := range explainQueries(t, s) {
		t.Run(name, func(t *testing.T) {
			var rows []map[string]any
			require.NoError(t, s.DB().NewRaw("EXPLAIN "+q.query, q.args...).Scan(t.Context(), &rows))
			var found bool
			for _, r := range rows {
				t.Logf("EXPLAIN (MySQL) %s: table=%s type=%s key=%s rows=%v Extra=%s", name, str(r["table"]), str(r["type"]), str(r["key"]), str(r["rows"]), str(r["Extra"]))
				if str(r["table"]) == "m" {
					found = true
					assert.Equal(t, q.index, str(r["key"]))
					assert.NotContains(t, str(r["Extra"]), "filesort")
				}
			}
			assert.True(t, found, "a plan row for messages")
		})
	}
}

func str(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case []byte:
		return string(v)
	case driver.Valuer: // sql.NullString and the like
		x, _ := v.Value()
		return str(x)
	}
	return fmt.Sprint(v)
}

// engine returns the named SQL engine, or skips the test when its
// environment variable is unset.
func engine(t *testing.T, name string) backendtest.SQLEngine {
	t.Helper()
	for _, e := range backendtest.SQL(t) {
		if e.Name == name {
			return e
		}
	}
	env := map[string]string{"postgres": backendtest.EnvPostgres, "mysql": backendtest.EnvMySQL}[name]
	t.Skipf("%s is not set: not testing %s", env, name)
	return backendtest.SQLEngine{}
}

func TestListReadsAPageInAtMostThreeQueries(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			s := e.Open(t)
			c := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
			require.NoError(t, s.PutContact(ctx, c))
			start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			for i := range 30 {
				at := start.Add(time.Duration(i) * time.Second)
				a := messaging.Attachment{ID: ids.NewAt(ids.Attachment, at), UploaderID: c.ID, Filename: "f.txt", FileType: "text/plain", Key: fmt.Sprintf("k/%d", i), CreatedAt: at}
				require.NoError(t, s.CreateAttachment(ctx, a, nil))
				m := messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: "c", Contact: c, Text: "m", CreatedAt: at}
				require.NoError(t, s.CreateMessage(ctx, m, []string{a.ID}, nil))
				_, err := s.UpdateMessage(ctx, m.ID, messaging.MessageChange{AddReactions: []messaging.Reaction{{Name: "x", Reactors: []string{"alice"}}, {Name: "y", Reactors: []string{"alice"}}}})
				require.NoError(t, err)
			}
			reads := sqlstore.CountReads(s)
			for _, limit := range []int{1, 5, 30} {
				reads.Store(0)
				items, _, err := s.ListMessages(ctx, messaging.MessageQuery{ConversationIDs: []string{"c"}, Limit: limit})
				require.NoError(t, err)
				require.Len(t, items, limit)
				for _, m := range items {
					assert.Len(t, m.Reactions, 2)
					assert.Len(t, m.Attachments, 1)
				}
				assert.Equal(t, int64(3), reads.Load(), "queries for a page of %d", limit)
			}

			// Messages without reactions or attachments: one query.
			var plain []string
			for i := range 5 {
				m := messaging.Message{ID: ids.NewAt(ids.Message, start.Add(time.Duration(i)*time.Second)), ConversationID: "plain", Contact: c, Text: "p", CreatedAt: start.Add(time.Duration(i) * time.Second)}
				require.NoError(t, s.CreateMessage(ctx, m, nil, nil))
				plain = append(plain, m.ID)
			}
			reads.Store(0)
			items, _, err := s.ListMessages(ctx, messaging.MessageQuery{ConversationIDs: []string{"plain"}, Limit: 10})
			require.NoError(t, err)
			require.Len(t, items, 5)
			assert.Equal(t, int64(1), reads.Load(), "queries for a page of plain messages")
			reads.Store(0)
			got, err := s.GetMessage(ctx, plain[0])
			require.NoError(t, err)
			assert.Equal(t, "alice", got.Contact.Username)
			assert.Equal(t, int64(1), reads.Load(), "queries for a plain message")
		})
	}
}

// TestExplainPostgresDominantConversation: a conversation that holds most
// of the table, under many newer messages of another, is still read
// through its own index. With a plain "conversation_id = ?" PostgreSQL
// walks messages_created newest first and filters out every newer message
// of the other conversation.
func TestExplainPostgresDominantConversation(t *testing.T) {
	e := engine(t, "postgres")
	s := e.Open(t)
	ctx := t.Context()
	c := messaging.Contact{ID: ids.New(ids.Contact), Username: "seed", CreatedAt: time.Now().UTC()}
	require.NoError(t, s.PutContact(ctx, c))
	for _, part := range []struct {
		conv  string
		n     int
		start time.Time
	}{
		{"conv_big", 40000, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"conv_new", 4000, time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)},
	} {
		for done := 0; done < part.n; done += 1000 {
			ms := make([]messaging.Message, 0, 1000)
			for i := done; i < done+1000; i++ {
				at := part.start.Add(time.Duration(i) * time.Millisecond)
				ms = append(ms, messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: part.conv,
					Contact: c, Text: "seed", CreatedAt: at})
			}
			require.NoError(t, s.ImportMessages(ctx, ms))
		}
	}
	_, err := s.DB().ExecContext(ctx, "VACUUM ANALYZE messages")
	require.NoError(t, err)

	for name, q := range map[string]messaging.MessageQuery{
		"first page":  {ConversationIDs: []string{"conv_big"}, Limit: 10},
		"before page": {ConversationIDs: []string{"conv_big"}, Limit: 10, Before: &messaging.Cursor{Time: time.Date(2025, 1, 1, 0, 0, 1, 0, time.UTC), ID: "msg_"}},
	} {
		query, args := sqlstore.MessagePageSQL(s, q)
		var plan []string
		require.NoError(t, s.DB().NewRaw("EXPLAIN ANALYZE "+query, args...).Scan(ctx, &plan))
		text := strings.Join(plan, "\n")
		t.Logf("EXPLAIN ANALYZE (PostgreSQL) %s:\n%s", name, text)
		assert.Contains(t, text, "using messages_conversation_created on messages m", name)
		assert.NotContains(t, text, "Rows Removed by Filter", name)
		assert.NotContains(t, text, "Sort", name)
	}
	items, more, err := s.ListMessages(ctx, messaging.MessageQuery{ConversationIDs: []string{"conv_big"}, Limit: 3})
	require.NoError(t, err)
	assert.True(t, more)
	require.Len(t, items, 3)
	assert.Equal(t, time.Date(2025, 1, 1, 0, 0, 39, 999_000_000, time.UTC), items[0].CreatedAt)
}
