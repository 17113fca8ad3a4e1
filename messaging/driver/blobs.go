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
	// before io.EOF, Put must return an error and store none of r's bytes:
	// no object under key, or the one that was there before, as it was.
	Put(ctx context.Context, key, contentType string, r io.Reader) error

	// Open returns a reader of the object's bytes that can seek (for Range
	// requests); Seek(0, io.SeekEnd) gives the object's size without
	// reading its bytes. If there is no object, it must return an error for
	// which errors.Is(err, ErrNotFound) is true.
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

// UploadRequest is what a signed upload URL lets a client store.
type UploadRequest struct {
	// ContentType is the type the object is stored with.
	ContentType string
	// SHA256 is the digest of the bytes the client will send, 32 bytes.
	SHA256 []byte
	// Size is the number of bytes the client will send.
	Size int64
	// Expiry is how long the URL may be used.
	Expiry time.Duration
}

// SignedUpload is a URL of the blob store to which a client sends an
// object's bytes itself, and how.
type SignedUpload struct {
	URL    string
	Method string // PUT
	// Headers are the headers the client must send, exactly as given.
	Headers map[string]string
	// ChecksumChecked reports whether the store itself refuses bytes whose
	// SHA-256 is not UploadRequest.SHA256.
	ChecksumChecked bool
}

// ObjectAttributes are what a blob store says of an object without
// reading its bytes.
type ObjectAttributes struct {
	// Size is the number of bytes.
	Size int64
	// ContentType and ContentDisposition are the headers stored with the
	// object, "" for none: those with which a store whose signed URLs set
	// no headers of their own serves it.
	ContentType, ContentDisposition string
}

// UploadSigner is an optional interface of a BlobStore that signs URLs to
// which clients send objects' bytes themselves (direct uploads), and
// reads what was stored without reading it whole.
type UploadSigner interface {
	// SignUpload returns a URL to which a client sends the bytes of the
	// object key, stored with req.ContentType and the Content-Disposition
	// of that type with no file name (in package attachments:
	// ContentDisposition(req.ContentType, "")), as every object is: the
	// Service refuses an object stored with others (Attributes), which a
	// client can do where the signature does not cover these headers
	// (Azure's). A store that cannot sign (a bucket without the means)
	// must return an error matching ErrUnimplemented.
	SignUpload(ctx context.Context, key string, req UploadRequest) (SignedUpload, error)
	// Attributes returns what the store says of the object without
	// reading its bytes (a HEAD). If there is no object, it must return an
	// error matching ErrNotFound.
	Attributes(ctx context.Context, key string) (ObjectAttributes, error)
	// ReadHead returns the first n bytes of the object (all of them when
	// it is shorter), by a range read.
	ReadHead(ctx context.Context, key string, n int) ([]byte, error)
}
