package sqlstore

import (
	"context"
	"database/sql"
	"time"
)

// The search index of SQLite is kept behind the sends. A send stores its
// message with its folded words (messages.search_words) and writes
// nothing to FTS5, which writes a new segment at every commit: indexed in
// the send's transaction, a create wrote 19.4–20.0 WAL pages against
// 12.5 and ran at 0.56–0.60 of the speed of one without the index
// (BENCHMARKS.md §11). message_search_mark holds the seq up to which every
// message is indexed, and moving it forward indexes the messages it
// passes (migrations/sqlite, message_search_index): the indexer below
// moves it by up to searchBatch messages a statement, one FTS5 segment a
// batch. A search reads FTS5 for the messages up to the mark and scans
// those beyond it, the tail, as they are (searchSQLite); a send that finds
// more than 2,000 in the tail indexes them itself (messages_search_tail),
// so the tail stays short when no indexer keeps up.
//
// Every process on the file runs an indexer; each batch is one statement
// under the database's write lock, which reads the mark it moves, so two
// never index a message twice.

// searchIndexEvery is how often the indexer looks for messages beyond the
// mark; it goes on at once while a batch leaves more.
const searchIndexEvery = 100 * time.Millisecond

// searchBatch is the most messages the indexer indexes in a statement.
const searchBatch = 1000

// searchIndexer is the goroutine of a Store's indexer.
type searchIndexer struct {
	stop context.CancelFunc
	done chan struct{} // closed when it has stopped
}

// startSearchIndexer starts the indexer of a SQLite store, unless it runs
// (sqliteEngine.start): Open starts it, and Migrate does for a Store made
// by New. Close stops
// it. It runs on the databases of the store as they are now (tests hook
// s.w and s.r later).
func (s *store) startSearchIndexer() {
	s.indexerMu.Lock()
	defer s.indexerMu.Unlock()
	if s.indexer != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	ix := &searchIndexer{stop: cancel, done: make(chan struct{})}
	s.indexer = ix
	r, w, log := s.r.DB, s.w.DB, s.opts.Logger
	go func() {
		defer close(ix.done)
		t := time.NewTicker(searchIndexEvery)
		defer t.Stop()
		for {
			more, err := indexSearch(ctx, r, w, searchBatch)
			if err != nil && ctx.Err() == nil {
				// Not migrated yet, or the database busy: again at the
				// next tick.
				log.DebugContext(ctx, "sqlstore: search index", "err", err)
			}
			if more && err == nil && ctx.Err() == nil {
				continue
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// stopSearchIndexer stops the indexer, if it runs, and waits for it.
func (s *store) stopSearchIndexer() {
	s.indexerMu.Lock()
	ix := s.indexer
	s.indexer = nil
	s.indexerMu.Unlock()
	if ix != nil {
		ix.stop()
		<-ix.done
	}
}

// indexSearch indexes up to batch messages beyond the mark, if there are
// any, and tells whether more are left. It looks on the reader
// first, so that an idle store takes no write lock.
func indexSearch(ctx context.Context, r, w *sql.DB, batch int) (more bool, err error) {
	var pending int
	if err := r.QueryRowContext(ctx, "SELECT COALESCE((SELECT MAX(seq) FROM messages) > seq, 0) FROM message_search_mark").Scan(&pending); err != nil || pending == 0 {
		return false, err
	}
	var mark, last int64
	err = w.QueryRowContext(ctx, `UPDATE message_search_mark SET seq = min(seq + ?, (SELECT MAX(seq) FROM messages))
		WHERE seq < (SELECT MAX(seq) FROM messages) RETURNING seq, (SELECT MAX(seq) FROM messages)`, batch).Scan(&mark, &last)
	if err == sql.ErrNoRows { // another process indexed them
		return false, nil
	}
	return err == nil && mark < last, err
}
