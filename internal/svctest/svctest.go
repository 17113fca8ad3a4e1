// Package svctest builds the services of messaging.New for tests.
package svctest

import (
	"context"
	"testing"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// New returns messaging.New's Service over storage and blobs (a new
// memstore.BlobStore when nil), closed when tb ends. It fails tb if New
// fails.
func New(tb testing.TB, storage messaging.Storage, blobs attachments.BlobStore, opts *messaging.Options) *messaging.Service {
	tb.Helper()
	return NewContext(tb, context.Background(), storage, blobs, opts)
}

// NewContext is New with the context messaging.New is given (one that
// carries an eventstest gate, say).
func NewContext(tb testing.TB, ctx context.Context, storage messaging.Storage, blobs attachments.BlobStore, opts *messaging.Options) *messaging.Service {
	tb.Helper()
	if blobs == nil {
		blobs = memstore.NewBlobStore()
	}
	svc, err := messaging.New(ctx, storage, blobs, opts)
	if err != nil {
		tb.Fatalf("messaging.New: %v", err)
	}
	tb.Cleanup(func() { _ = svc.Close() })
	return svc
}
