package driver

import (
	"context"
	"io"
	"time"
)

// BlobStore stores the bytes of attachments under keys that the Service
// makes. Implementations must be safe for concurrent use.
type BlobStore interface {
	// Put writes all of r under key. If r returns an error, or ctx is done,
	// before io.EOF, Put must return an error and leave no object under key.
	Put(ctx context.Context, key, contentType string, r io.Reader) error

	// Open returns a reader of the object's bytes that can seek (for Range
	// requests). If there is no object, it must return an error for which
	// errors.Is(err, ErrNotFound) is true.
	Open(ctx context.Context, key string) (io.ReadSeekCloser, error)

	// Delete removes the object. Deleting a key that does not exist returns
	// nil or an error matching ErrNotFound.
	Delete(ctx context.Context, key string) error
}

// Object describes one object of a blob store, for reconciliation.
type Object struct {
	// Key is the object's key.
	Key string
	// ModTime is when the object was last written.
	ModTime time.Time
}

// Lister is an optional interface of a BlobStore that can list its
// objects; Reconcile needs it to find orphaned objects.
type Lister interface {
	// List calls fn for every object whose key starts with prefix, stopping
	// at the first error fn returns.
	List(ctx context.Context, prefix string, fn func(Object) error) error
}

// URLSigner is an optional interface of a BlobStore that can make signed,
// expiring URLs of its objects.
type URLSigner interface {
	// SignedURL returns a URL that serves the object for expiry, with
	// Content-Type contentType and Content-Disposition
	// ContentDisposition(contentType, filename) in its response headers
	// where the store supports it.
	SignedURL(ctx context.Context, key, filename, contentType string, expiry time.Duration) (string, error)
}
