package sqlstore_test

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/internal/search"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/sqlstore"
	"github.com/parleychat/parley/storage/storecopy"
	"github.com/parleychat/parley/storage/storetest"
)

// SQLite's search index is kept behind the sends (searchindex.go): a
// search reads FTS5 up to the mark and scans the tail beyond it.

// openSQLite opens and migrates a SQLite store on path.
func openSQLite(t *testing.T, path string) *sqlstore.Store {
	t.Helper()
	s := open(t, path)
	require.NoError(t, s.Migrate(t.Context()))
	return s
}

// TestSearchIndexedOrTail runs the search contract on SQLite with every
// message indexed before each search (FTS5 alone), and with none indexed
// (the tail alone).
func TestSearchIndexedOrTail(t *testing.T) {
	t.Run("indexed", func(t *testing.T) {
		storetest.RunSearchTests(t, func(t *testing.T) storetest.Store {
			return sqlstore.IndexedBeforeSearch(openSQLite(t, filepath.Join(t.TempDir(), "p.db")))
		})
	})
	t.Run("tail", func(t *testing.T) {
		storetest.RunSearchTests(t, func(t *testing.T) storetest.Store {
			s := openSQLite(t, filepath.Join(t.TempDir(), "p.db"))
			sqlstore.StopSearchIndexer(s)
			return s.Driver()
		})
	})
}

// searchFor returns the ids of the messages of every conversation that
// query finds in s, newest first.
func searchFor(t *testing.T, s *sqlstore.Store, query string) []string {
	t.Helper()
	p, err := search.Parse(query)
	require.NoError(t, err)
	got, more, err := s.Driver().SearchMessages(t.Context(), driver.SearchQuery{Scope: driver.Scope{All: true},
		Window: driver.Window{Limit: 100}, Words: p.Words, Prefix: p.Prefix})
	require.NoError(t, err)
	require.False(t, more)
	out := []string{}
	for _, m := range got {
		out = append(out, m.ID)
	}
	return out
}

// sendText stores a message of who in conv with text.
func sendText(t *testing.T, s *sqlstore.Store, conv string, who messaging.Contact, at time.Time, text string) messaging.Message {
	t.Helper()
	m := messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: conv, Contact: who, Text: text, CreatedAt: at}
	require.NoError(t, s.Driver().CreateMessage(t.Context(), m, nil, nil))
	return m
}

// searchState returns the mark of s's search index, the greatest seq of
// its messages, and the rows of message_search_ids.
func searchState(t *testing.T, s *sqlstore.Store) (mark, last, indexed int64) {
	t.Helper()
	require.NoError(t, s.DB().QueryRowContext(t.Context(), `SELECT (SELECT seq FROM message_search_mark),
		(SELECT COALESCE(MAX(seq), 0) FROM messages), (SELECT COUNT(*) FROM message_search_ids)`).Scan(&mark, &last, &indexed))
	return mark, last, indexed
}

// ftsCount returns how many entries of FTS5 match the FTS5 query q.
func ftsCount(t *testing.T, s *sqlstore.Store, q string) int {
	t.Helper()
	var n int
	require.NoError(t, s.DB().QueryRowContext(t.Context(), "SELECT COUNT(*) FROM message_search WHERE message_search MATCH ?", q).Scan(&n))
	return n
}

// TestSearchIndexerBatches: the messages beyond the mark are found before
// they are indexed; a batch indexes up to its size in seq order, and the
// rest stays in the tail, found the same.
func TestSearchIndexerBatches(t *testing.T) {
	s := openSQLite(t, filepath.Join(t.TempDir(), "p.db"))
	sqlstore.StopSearchIndexer(s)
	alice := putContact(t, s, "alice")
	var want []string
	for i := range 25 {
		m := sendText(t, s, "c"+strconv.Itoa(i%3), alice, sec(i), "lantern "+strconv.Itoa(i))
		want = append([]string{m.ID}, want...)
	}
	mark, last, indexed := searchState(t, s)
	require.Equal(t, []int64{0, 25, 0}, []int64{mark, last, indexed}, "all in the tail")
	assert.Equal(t, want, searchFor(t, s, "lantern"), "the tail is found")
	assert.Equal(t, want, searchFor(t, s, "lant"), "by a prefix the index does not hold")

	more, err := sqlstore.IndexSearchBatch(t.Context(), s, 10)
	require.NoError(t, err)
	assert.True(t, more)
	mark, _, indexed = searchState(t, s)
	assert.Equal(t, []int64{10, 10}, []int64{mark, indexed}, "one batch of 10")
	assert.Equal(t, 10, ftsCount(t, s, "lantern"))
	assert.Equal(t, want, searchFor(t, s, "lantern"), "indexed and tail together, each once")
	assert.Equal(t, want[:3], searchFor(t, s, "lantern 2")[:3])

	require.NoError(t, sqlstore.IndexSearch(t.Context(), s))
	mark, _, indexed = searchState(t, s)
	assert.Equal(t, []int64{25, 25}, []int64{mark, indexed})
	assert.Equal(t, want, searchFor(t, s, "lantern"))
	more, err = sqlstore.IndexSearchBatch(t.Context(), s, 10)
	require.NoError(t, err)
	assert.False(t, more, "nothing left")
}

// TestSearchIndexerRuns: the indexer of an open store indexes what is
// sent, and stops when the store is closed.
func TestSearchIndexerRuns(t *testing.T) {
	s := openSQLite(t, filepath.Join(t.TempDir(), "p.db"))
	alice := putContact(t, s, "alice")
	for i := range 30 {
		sendText(t, s, "c", alice, sec(i), "harbour")
	}
	for deadline := time.Now().Add(time.Minute); ; {
		if mark, last, _ := searchState(t, s); mark == last {
			break
		}
		require.True(t, time.Now().Before(deadline), "not indexed in a minute")
		time.Sleep(20 * time.Millisecond)
	}
	assert.Equal(t, 30, ftsCount(t, s, "harbour"))
	assert.Len(t, searchFor(t, s, "harbour"), 30)

	done := sqlstore.SearchIndexerDone(s)
	require.NotNil(t, done)
	require.NoError(t, s.Close())
	select {
	case <-done:
	default:
		t.Fatal("the indexer runs after Close")
	}
}

// TestSearchEditsAndDeletesAcrossTheMark: an edit or a delete is exact
// whether its message is indexed or in the tail, and after the tail is
// indexed.
func TestSearchEditsAndDeletesAcrossTheMark(t *testing.T) {
	s := openSQLite(t, filepath.Join(t.TempDir(), "p.db"))
	sqlstore.StopSearchIndexer(s)
	alice := putContact(t, s, "alice")
	old := sendText(t, s, "c", alice, sec(1), "alpha indexed")
	require.NoError(t, sqlstore.IndexSearch(t.Context(), s))
	young := sendText(t, s, "c", alice, sec(2), "alpha tail")
	keep := sendText(t, s, "c", alice, sec(3), "alpha kept")
	assert.Equal(t, []string{keep.ID, young.ID, old.ID}, searchFor(t, s, "alpha"))

	edit := func(m messaging.Message, text string) {
		t.Helper()
		_, err := s.Driver().UpdateMessage(t.Context(), m.ID, driver.MessageChange{Text: &text, UpdatedAt: sec(10)})
		require.NoError(t, err)
	}
	edit(old, "beta indexed")
	edit(young, "beta tail")
	for range 2 { // before the tail is indexed, then after
		assert.Equal(t, []string{keep.ID}, searchFor(t, s, "alpha"), "the old words are not found")
		assert.Equal(t, []string{young.ID, old.ID}, searchFor(t, s, "beta"), "the new words are")
		assert.Equal(t, []string{young.ID}, searchFor(t, s, "beta ta"))
		require.NoError(t, sqlstore.IndexSearch(t.Context(), s))
	}
	assert.Equal(t, 0, ftsCount(t, s, "alpha AND (indexed OR tail)"))

	_, err := s.Driver().DeleteMessage(t.Context(), old.ID, nil)
	require.NoError(t, err)
	gone := sendText(t, s, "c", alice, sec(4), "beta gone")
	_, err = s.Driver().DeleteMessage(t.Context(), gone.ID, nil) // in the tail
	require.NoError(t, err)
	assert.Equal(t, []string{young.ID}, searchFor(t, s, "beta"))
	require.NoError(t, sqlstore.IndexSearch(t.Context(), s))
	assert.Equal(t, []string{young.ID}, searchFor(t, s, "beta"))
	assert.Equal(t, 1, ftsCount(t, s, "beta"))
}

// TestSearchMarkAfterTheLastDeleted: when the last message is deleted,
// the next one gets its seq again; it is in the tail, not taken for
// indexed.
func TestSearchMarkAfterTheLastDeleted(t *testing.T) {
	s := openSQLite(t, filepath.Join(t.TempDir(), "p.db"))
	sqlstore.StopSearchIndexer(s)
	alice := putContact(t, s, "alice")
	first := sendText(t, s, "c", alice, sec(1), "gamma one")
	last := sendText(t, s, "c", alice, sec(2), "gamma two")
	require.NoError(t, sqlstore.IndexSearch(t.Context(), s))
	_, err := s.Driver().DeleteMessage(t.Context(), last.ID, nil)
	require.NoError(t, err)
	again := sendText(t, s, "c", alice, sec(3), "gamma three")
	mark, seq, _ := searchState(t, s)
	require.Equal(t, []int64{1, 2}, []int64{mark, seq}, "the seq given again is beyond the mark")
	assert.Equal(t, []string{again.ID, first.ID}, searchFor(t, s, "gamma"))
	require.NoError(t, sqlstore.IndexSearch(t.Context(), s))
	assert.Equal(t, []string{again.ID, first.ID}, searchFor(t, s, "gamma"))
	assert.Equal(t, 2, ftsCount(t, s, "gamma"))
}

// TestSearchTailIsBounded: with no indexer, a send that finds more than
// 2,000 messages in the tail indexes them.
func TestSearchTailIsBounded(t *testing.T) {
	s := openSQLite(t, filepath.Join(t.TempDir(), "p.db"))
	sqlstore.StopSearchIndexer(s)
	alice := putContact(t, s, "alice")
	msgs := make([]messaging.Message, 2500)
	for i := range msgs {
		at := sec(i)
		msgs[i] = messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: "c", Contact: alice, Text: "delta " + strconv.Itoa(i), CreatedAt: at}
	}
	require.NoError(t, importer(s).ImportMessages(t.Context(), msgs))
	mark, last, indexed := searchState(t, s)
	assert.Equal(t, int64(2500), last)
	assert.LessOrEqual(t, last-mark, int64(2000), "the tail")
	assert.Equal(t, mark, indexed)
	sendText(t, s, "c", alice, sec(3000), "delta")
	assert.Len(t, searchFor(t, s, "delta 2499"), 1)
	p, err := search.Parse("delta")
	require.NoError(t, err)
	got, more, err := s.Driver().SearchMessages(t.Context(), driver.SearchQuery{Scope: driver.Scope{All: true},
		Window: driver.Window{Limit: 3}, Words: p.Words, Prefix: p.Prefix})
	require.NoError(t, err)
	assert.True(t, more)
	assert.Equal(t, []string{"delta", "delta 2499", "delta 2498"}, []string{got[0].Text, got[1].Text, got[2].Text})
}

// TestSearchTwoStoresOneFile: two Stores on one file, each with its
// indexer, index every message once, and each finds every message.
func TestSearchTwoStoresOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	a, b := openSQLite(t, path), openSQLite(t, path)
	alice := putContact(t, a, "alice")
	for i := range 200 {
		s := a
		if i%2 == 1 {
			s = b
		}
		sendText(t, s, "c"+strconv.Itoa(i%7), alice, sec(i), "orbit "+strconv.Itoa(i))
	}
	for deadline := time.Now().Add(time.Minute); ; {
		if mark, last, _ := searchState(t, a); mark == last {
			break
		}
		require.True(t, time.Now().Before(deadline), "not indexed in a minute")
		time.Sleep(20 * time.Millisecond)
	}
	_, _, indexed := searchState(t, b)
	assert.Equal(t, int64(200), indexed, "each message once")
	assert.Equal(t, 200, ftsCount(t, a, "orbit"))
	for _, word := range []string{"0", "57", "198", "199"} {
		assert.Len(t, searchFor(t, a, "orbit "+word), 1)
		assert.Equal(t, searchFor(t, a, "orbit "+word), searchFor(t, b, "orbit "+word))
	}
}

// TestSearchIndexerRunsAfterCopy: a copy into SQLite starts the indexer
// as a send does, so that the copied messages are indexed rather than
// left in the tail, which every search scans whole, until the first send.
func TestSearchIndexerRunsAfterCopy(t *testing.T) {
	src := openSQLite(t, filepath.Join(t.TempDir(), "src.db"))
	alice := putContact(t, src, "alice")
	for i := range 30 {
		sendText(t, src, "c", alice, sec(i), "harbour")
	}
	dst := openSQLite(t, filepath.Join(t.TempDir(), "dst.db"))
	_, err := storecopy.Copy(t.Context(), dst, nil, src, nil, nil)
	require.NoError(t, err)
	require.NotNil(t, sqlstore.SearchIndexerDone(dst), "the copy started the indexer")
	for deadline := time.Now().Add(time.Minute); ; {
		if mark, last, _ := searchState(t, dst); mark == last {
			break
		}
		require.True(t, time.Now().Before(deadline), "not indexed in a minute")
		time.Sleep(20 * time.Millisecond)
	}
	assert.Equal(t, 30, ftsCount(t, dst, "harbour"))
	assert.Len(t, searchFor(t, dst, "harbour"), 30)
}
