package memstore_test

import (
	"testing"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

func TestConformance(t *testing.T) {
	storetest.RunConformanceTests(t, func(*testing.T) storetest.Store { return memstore.New().Driver() })
}

func TestBlobConformance(t *testing.T) {
	storetest.RunBlobConformanceTests(t, func(*testing.T) attachments.BlobStore { return memstore.NewBlobStore() })
}

func BenchmarkStore(b *testing.B) {
	storetest.RunBenchmarks(b, func(*testing.B) storetest.Store { return memstore.New().Driver() })
}
