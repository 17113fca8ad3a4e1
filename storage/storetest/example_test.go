package storetest_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

// countingStore is a backend made from another: memstore's, with a count
// of the messages it created. A backend of its own implements
// driver.MessageStore, driver.AttachmentStore and driver.EventStore
// whole, over one storage.
type countingStore struct {
	driver.Store
	created atomic.Int64
}

// CreateMessage stores the message as memstore does, and counts it.
func (s *countingStore) CreateMessage(ctx context.Context, m messaging.Message, attachmentIDs []string, rec driver.Recorder) error {
	if err := s.Store.CreateMessage(ctx, m, attachmentIDs, rec); err != nil {
		return err
	}
	s.created.Add(1)
	return nil
}

// TestCountingStoreConformance is how a backend proves itself: the whole
// suite, each subtest on a fresh, empty store.
func TestCountingStoreConformance(t *testing.T) {
	storetest.RunConformanceTests(t, func(t *testing.T) storetest.Store {
		return &countingStore{Store: memstore.New().Driver()}
	})
}

// A backend runs the suite in a test of its own package, with a function
// that makes a fresh, empty store for each subtest (a SQL backend opens a
// new database or schema there, and drops it with t.Cleanup); a blob store
// runs RunBlobConformanceTests the same way. TestCountingStoreConformance
// in this file runs exactly this (an Example has no *testing.T):
//
//	func TestConformance(t *testing.T) {
//		storetest.RunConformanceTests(t, func(t *testing.T) storetest.Store {
//			return &countingStore{Store: memstore.New().Driver()}
//		})
//	}
//
// A store that passes works under the services as every backend does.
func ExampleRunConformanceTests() {
	ctx := context.Background()
	store := &countingStore{Store: memstore.New().Driver()}
	msgs, err := messaging.New(ctx, storetest.Storage(store), memstore.NewBlobStore(), nil)
	if err != nil {
		panic(err)
	}
	defer msgs.Close()

	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	if err != nil {
		panic(err)
	}
	for _, text := range []string{"one", "two"} {
		if _, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: text}); err != nil {
			panic(err)
		}
	}
	fmt.Println(store.created.Load())
	// Output: 2
}
