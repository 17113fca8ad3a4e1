package sqlstore_test

import (
	sqldriver "database/sql/driver"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/sqlstore"
)

// seed inserts n messages spread over convs conversations, one second
// apart, and refreshes the planner's statistics.
func seed(t *testing.T, s *sqlstore.Store, engine string, n, convs int) {
	t.Helper()
	ctx := t.Context()
	c := messaging.Contact{ID: ids.New(ids.Contact), CreatedAt: time.Now().UTC()}
	c.Username = "seed_" + c.ID // a contact of each seed
	require.NoError(t, s.Driver().PutContact(ctx, c))
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
	items, _, err := s.Driver().ListMessages(t.Context(), driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"conv_7"}}, Window: driver.Window{Limit: 10}})
	require.NoError(t, err)
	require.Len(t, items, 10)
	last = items[9]
	cursor := &driver.Cursor{Time: last.CreatedAt, ID: last.ID}
	out := map[string]struct {
		index string
		query string
		args  []any
	}{}
	for name, q := range map[string]driver.MessageQuery{
		"conversation first page":  {Scope: driver.Scope{ConversationIDs: []string{"conv_7"}}, Window: driver.Window{Limit: 10}},
		"conversation second page": {Scope: driver.Scope{ConversationIDs: []string{"conv_7"}}, Window: driver.Window{Limit: 10, After: cursor}},
		"all first page":           {Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 10}},
		"all second page":          {Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 10, After: cursor}},
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

// TestExplainSQLiteCursorByID: a page after (or before) a cursor given by
// id bounds its range of the conversation's index by the cursor's row,
// which a subquery reads by key.
func TestExplainSQLiteCursorByID(t *testing.T) {
	e := engine(t, "sqlite")
	s := e.Open(t)
	seed(t, s, e.Name, 5000, 50)
	items, _, err := s.Driver().ListMessages(t.Context(), driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"conv_7"}}, Window: driver.Window{Limit: 40}})
	require.NoError(t, err)
	for name, q := range map[string]driver.MessageQuery{
		"after":  {Scope: driver.Scope{ConversationIDs: []string{"conv_7"}}, Window: driver.Window{Limit: 10, After: &driver.Cursor{ID: items[20].ID}}},
		"before": {Scope: driver.Scope{ConversationIDs: []string{"conv_7"}}, Window: driver.Window{Limit: 10, Before: &driver.Cursor{ID: items[20].ID}}},
	} {
		t.Run(name, func(t *testing.T) {
			query, args := sqlstore.MessagePageSQL(s, q)
			var rows []struct {
				ID      int    `bun:"id"`
				Parent  int    `bun:"parent"`
				NotUsed int    `bun:"notused"`
				Detail  string `bun:"detail"`
			}
			require.NoError(t, s.DB().NewRaw("EXPLAIN QUERY PLAN "+query, args...).Scan(t.Context(), &rows))
			var lines []string
			for _, r := range rows {
				lines = append(lines, r.Detail)
			}
			text := strings.Join(lines, "\n")
			t.Logf("EXPLAIN QUERY PLAN (SQLite) %s:\n%s", name, text)
			assert.Regexp(t, `SEARCH m USING INDEX messages_conversation_created \(conversation_id=\? AND created_at[<>]\?\)`, text, "a range bounded by the cursor")
			assert.Regexp(t, `SEARCH x USING INDEX sqlite_autoindex_messages_1 \(id=\?\)`, text, "the cursor's row by key")
			assert.NotContains(t, text, "TEMP B-TREE")
			page, _, err := s.Driver().ListMessages(t.Context(), q)
			require.NoError(t, err)
			want := items[21:31]
			if q.Before != nil {
				want = items[10:20]
			}
			assert.Equal(t, messageIDs(want), messageIDs(page))
		})
	}
}

func messageIDs(ms []messaging.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
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
					if strings.Contains(name, "second page") {
						// A range that starts at the cursor, not the
						// conversation read from its newest row and
						// filtered up to it (ref): that read as many
						// rows as the page was deep.
						assert.Equal(t, "range", str(r["type"]))
					}
				}
			}
			assert.True(t, found, "a plan row for messages")
		})
	}
}

// TestExplainMySQLDeepCursor: a page deep in a large conversation reads a
// range from its cursor. Given the conversation by equality, MariaDB read
// the conversation's index from its newest row (ref) and filtered every
// row up to the cursor: 131 pages a second 9,000 deep.
func TestExplainMySQLDeepCursor(t *testing.T) {
	e := engine(t, "mysql")
	s := e.Open(t)
	seed(t, s, e.Name, 20000, 1)
	var deep []messaging.Message
	q := driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"conv_0"}}, Window: driver.Window{Limit: 100}}
	for range 90 { // 9,000 deep
		page, _, err := s.Driver().ListMessages(t.Context(), q)
		require.NoError(t, err)
		require.Len(t, page, 100)
		deep = page
		last := page[len(page)-1]
		q.After = &driver.Cursor{Time: last.CreatedAt, ID: last.ID}
	}
	last := deep[len(deep)-1]
	query, args := sqlstore.MessagePageSQL(s, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"conv_0"}}, Window: driver.Window{Limit: 10, After: &driver.Cursor{Time: last.CreatedAt, ID: last.ID}}})
	var rows []map[string]any
	require.NoError(t, s.DB().NewRaw("EXPLAIN "+query, args...).Scan(t.Context(), &rows))
	for _, r := range rows {
		if str(r["table"]) == "m" {
			t.Logf("EXPLAIN (MySQL): type=%s key=%s rows=%v Extra=%s", str(r["type"]), str(r["key"]), str(r["rows"]), str(r["Extra"]))
			assert.Equal(t, "range", str(r["type"]))
			assert.Equal(t, "messages_conversation_created", str(r["key"]))
			return
		}
	}
	t.Fatal("no plan row for messages")
}

func str(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case []byte:
		return string(v)
	case sqldriver.Valuer: // sql.NullString and the like
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
			require.NoError(t, s.Driver().PutContact(ctx, c))
			start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			for i := range 30 {
				at := start.Add(time.Duration(i) * time.Second)
				a := messaging.Attachment{ID: ids.NewAt(ids.Attachment, at), UploaderID: c.ID, Filename: "f.txt", FileType: "text/plain", Key: fmt.Sprintf("k/%d", i), CreatedAt: at}
				require.NoError(t, s.Driver().CreateAttachment(ctx, a, nil))
				m := messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: "c", Contact: c, Text: "m", CreatedAt: at}
				require.NoError(t, s.Driver().CreateMessage(ctx, m, []string{a.ID}, nil))
				_, err := s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: "alice", Add: []string{"x", "y"}}})
				require.NoError(t, err)
			}
			reads := sqlstore.CountReads(s)
			for _, limit := range []int{1, 5, 30} {
				reads.Store(0)
				items, _, err := s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: limit}})
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
				require.NoError(t, s.Driver().CreateMessage(ctx, m, nil, nil))
				plain = append(plain, m.ID)
			}
			reads.Store(0)
			items, _, err := s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"plain"}}, Window: driver.Window{Limit: 10}})
			require.NoError(t, err)
			require.Len(t, items, 5)
			assert.Equal(t, int64(1), reads.Load(), "queries for a page of plain messages")
			// A cursor by id is found by the page's own query (a second
			// one on MySQL), and an unknown one by one more after an empty page.
			reads.Store(0)
			items, _, err = s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"plain"}}, Window: driver.Window{Limit: 10, After: &driver.Cursor{ID: plain[3]}}})
			require.NoError(t, err)
			require.Len(t, items, 3)
			want := map[string]int64{"mysql": 2}[e.Name]
			assert.Equal(t, max(want, 1), reads.Load(), "queries for a page after a cursor by id")
			reads.Store(0)
			_, _, err = s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 10, Before: &driver.Cursor{ID: plain[0]}}})
			assert.ErrorIs(t, err, messaging.ErrNotFound, "a cursor of another conversation")
			want = 2 // the empty page, then the cursor
			if e.Name == "mysql" {
				want = 1 // the cursor
			}
			assert.Equal(t, want, reads.Load(), "queries for a page after an unknown cursor")
			reads.Store(0)
			got, err := s.Driver().GetMessage(ctx, plain[0])
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
	require.NoError(t, s.Driver().PutContact(ctx, c))
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
			require.NoError(t, importer(s).ImportMessages(ctx, ms))
		}
	}
	_, err := s.DB().ExecContext(ctx, "VACUUM ANALYZE messages")
	require.NoError(t, err)

	for name, q := range map[string]driver.MessageQuery{
		"first page":  {Scope: driver.Scope{ConversationIDs: []string{"conv_big"}}, Window: driver.Window{Limit: 10}},
		"before page": {Scope: driver.Scope{ConversationIDs: []string{"conv_big"}}, Window: driver.Window{Limit: 10, Before: &driver.Cursor{Time: time.Date(2025, 1, 1, 0, 0, 1, 0, time.UTC), ID: "msg_"}}},
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
	items, more, err := s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"conv_big"}}, Window: driver.Window{Limit: 3}})
	require.NoError(t, err)
	assert.True(t, more)
	require.Len(t, items, 3)
	assert.Equal(t, time.Date(2025, 1, 1, 0, 0, 39, 999_000_000, time.UTC), items[0].CreatedAt)
}

// TestExplainPostgresGenericPlans: the reads of a page of one conversation,
// prepared as the store prepares them, have generic plans that read the
// conversation's index in order, cursor by id included.
func TestExplainPostgresGenericPlans(t *testing.T) {
	e := engine(t, "postgres")
	s := e.Open(t)
	ctx := t.Context()
	// 6,000 messages in 2 conversations, interleaved: a generic plan of a
	// page would read one conversation's whole range and sort it.
	seed(t, s, e.Name, 6000, 2)
	// 60,000 in 100 conversations.
	seed(t, s, e.Name, 54000, 100)
	items, _, err := s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"conv_7"}}, Window: driver.Window{Limit: 10}})
	require.NoError(t, err)
	require.Len(t, items, 10)
	conn, err := s.DB().Conn(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	// The plan the server keeps once it prefers the generic one (the
	// store sets nothing on its connections; this session asks for it).
	_, err = conn.ExecContext(ctx, "SET plan_cache_mode = force_generic_plan")
	require.NoError(t, err)
	for name, q := range map[string]driver.MessageQuery{
		"first page":      {Scope: driver.Scope{ConversationIDs: []string{"conv_7"}}, Window: driver.Window{Limit: 10}},
		"after a cursor":  {Scope: driver.Scope{ConversationIDs: []string{"conv_7"}}, Window: driver.Window{Limit: 10, After: &driver.Cursor{ID: items[9].ID}}},
		"before a cursor": {Scope: driver.Scope{ConversationIDs: []string{"conv_7"}}, Window: driver.Window{Limit: 10, Before: &driver.Cursor{ID: items[9].ID}}},
		"all, first page": {Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 10}},
		"all, after":      {Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 10, After: &driver.Cursor{Time: items[9].CreatedAt, ID: items[9].ID}}},
	} {
		t.Run(name, func(t *testing.T) {
			query, args := sqlstore.MessagePageSQL(s, q)
			prepared, pargs, ok := sqlstore.PreparedSQL(s, query, args)
			require.True(t, ok, "the page's query is prepared")
			_, err := conn.ExecContext(ctx, "DEALLOCATE ALL")
			require.NoError(t, err)
			_, err = conn.ExecContext(ctx, "PREPARE page AS "+prepared)
			require.NoError(t, err)
			execute := "EXECUTE page"
			if len(pargs) > 0 {
				execute += "(" + strings.TrimSuffix(strings.Repeat("?, ", len(pargs)), ", ") + ")"
			}
			var plan []string
			require.NoError(t, s.DB().NewRaw("EXPLAIN (ANALYZE, BUFFERS) "+execute, pargs...).Conn(conn).Scan(ctx, &plan))
			text := strings.Join(plan, "\n")
			t.Logf("EXPLAIN EXECUTE (PostgreSQL, generic plan) %s:\n%s", name, text)
			index := "messages_conversation_created"
			if q.All {
				index = "messages_created"
			}
			scan := regexp.MustCompile(`Index Scan (?:Backward )?using ` + index + ` on messages m .*\(actual time=\S+ rows=(\d+) loops=1\)`).FindStringSubmatch(text)
			if assert.NotNil(t, scan, "the index read in order") {
				n, _ := strconv.Atoi(scan[1])
				assert.LessOrEqual(t, n, 11, "rows read of messages: the page's and one more")
			}
			assert.NotContains(t, text, "'conv_7'", "a generic plan: the conversation is not in it")
			assert.NotContains(t, text, "Seq Scan on messages")
			assert.NotContains(t, text, "Rows Removed by Filter")
			assert.NotRegexp(t, `\bSort\b`, text)
		})
	}
}

// TestPostgresPagesRunGenericPlans: a prepared page of one conversation
// runs its generic plan once the server has tried five custom ones, even
// where the conversation holds the whole table in insertion order, the
// case in which a custom plan that sees the conversation is far cheaper
// by the planner's estimate than the generic one: with the conversation
// as a plain parameter, every page was planned again (most of the
// backends' CPU of a first page, BENCHMARKS.md section 2).
func TestPostgresPagesRunGenericPlans(t *testing.T) {
	e := engine(t, "postgres")
	ctx := t.Context()
	// One connection, so that this test's session is the store's.
	s, err := sqlstore.Open(ctx, e.DSN(t), &sqlstore.Options{MaxOpenConns: 1, Logger: discard})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Migrate(ctx))
	seed(t, s, e.Name, 90000, 1) // past hiddenRangeRows
	first := driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"conv_0"}}, Window: driver.Window{Limit: 10}}
	items, _, err := s.Driver().ListMessages(ctx, first)
	require.NoError(t, err)
	require.Len(t, items, 10)
	after := first
	after.After = &driver.Cursor{ID: items[9].ID}
	for range 10 {
		for _, q := range []driver.MessageQuery{first, after} {
			_, _, err := s.Driver().ListMessages(ctx, q)
			require.NoError(t, err)
		}
	}
	var plans []struct {
		Statement string `bun:"statement"`
		Generic   int64  `bun:"generic_plans"`
		Custom    int64  `bun:"custom_plans"`
	}
	require.NoError(t, s.DB().NewRaw("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%FROM messages AS m %ORDER BY m.conversation_id%'").Scan(ctx, &plans))
	require.Len(t, plans, 2, "the first page and the page after a cursor, prepared")
	for _, p := range plans {
		assert.Positive(t, p.Generic, "generic plans of %s", p.Statement)
		assert.LessOrEqual(t, p.Custom, int64(5), "custom plans of %s", p.Statement)
	}
}

// TestExplainPostgresSmallTable: in a table too small for the planner's
// guess of a hidden range to favour the index (6,000 messages, two
// conversations), pages of 50 of one conversation, first and after a
// cursor, still read its index in order rather than sort its whole range.
func TestExplainPostgresSmallTable(t *testing.T) {
	e := engine(t, "postgres")
	s := e.Open(t)
	ctx := t.Context()
	seed(t, s, e.Name, 6000, 2)
	conv := driver.Scope{ConversationIDs: []string{"conv_1"}}
	items, _, err := s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: conv, Window: driver.Window{Limit: 50}})
	require.NoError(t, err)
	require.Len(t, items, 50)
	for name, q := range map[string]driver.MessageQuery{
		"first page":      {Scope: conv, Window: driver.Window{Limit: 50}},
		"after a cursor":  {Scope: conv, Window: driver.Window{Limit: 50, After: &driver.Cursor{ID: items[9].ID}}},
		"before a cursor": {Scope: conv, Window: driver.Window{Limit: 50, Before: &driver.Cursor{ID: items[49].ID}}},
	} {
		t.Run(name, func(t *testing.T) {
			query, args := sqlstore.MessagePageSQL(s, q)
			var plan []string
			require.NoError(t, s.DB().NewRaw("EXPLAIN ANALYZE "+query, args...).Scan(ctx, &plan))
			text := strings.Join(plan, "\n")
			t.Logf("EXPLAIN ANALYZE (PostgreSQL) %s:\n%s", name, text)
			scan := regexp.MustCompile(`Index Scan (?:Backward )?using messages_conversation_created on messages m .*\(actual time=\S+ rows=(\d+) loops=1\)`).FindStringSubmatch(text)
			if assert.NotNil(t, scan, "the index read in order") {
				n, _ := strconv.Atoi(scan[1])
				assert.LessOrEqual(t, n, 51, "rows read of messages: the page's and one more")
			}
			assert.NotRegexp(t, `\bSort\b`, text)
		})
	}
}
