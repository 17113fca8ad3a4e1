package sqlstore

import (
	"context"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// IndexSearch indexes every message of st beyond the mark of its search
// index (SQLite), in batches as the indexer does.
func IndexSearch(ctx context.Context, st *Store) error {
	for {
		more, err := IndexSearchBatch(ctx, st, searchBatch)
		if err != nil || !more {
			return err
		}
	}
}

// IndexSearchBatch indexes up to n messages of st beyond the mark, and
// tells whether more are left.
func IndexSearchBatch(ctx context.Context, st *Store, n int) (more bool, err error) {
	return indexSearch(ctx, st.s.r.DB, st.s.w.DB, n)
}

// StopSearchIndexer stops the search indexer of st, so that its messages
// stay in the tail until IndexSearch or a send that finds it too long.
func StopSearchIndexer(st *Store) { st.s.stopSearchIndexer() }

// SearchIndexerDone returns the channel that st's search indexer closes
// when it stops, or nil when none runs.
func SearchIndexerDone(st *Store) <-chan struct{} {
	st.s.indexerMu.Lock()
	defer st.s.indexerMu.Unlock()
	if st.s.indexer == nil {
		return nil
	}
	return st.s.indexer.done
}

// IndexedBeforeSearch returns the driver of st with every message indexed
// before each search, which then reads FTS5 alone.
func IndexedBeforeSearch(st *Store) driver.Store { return indexedBeforeSearch{st.s} }

type indexedBeforeSearch struct{ *store }

func (s indexedBeforeSearch) SearchMessages(ctx context.Context, q driver.SearchQuery) ([]messaging.Message, bool, error) {
	if err := IndexSearch(ctx, &Store{s.store}); err != nil {
		return nil, false, err
	}
	return s.store.SearchMessages(ctx, q)
}
