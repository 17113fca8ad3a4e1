package memstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// BlobStore is an in-memory attachments.BlobStore and driver.Lister.
// The zero value is not usable; call NewBlobStore.
type BlobStore struct {
	mu      sync.Mutex
	objects map[string]object
}

type object struct {
	data        []byte // never changed once stored
	contentType string
	modTime     time.Time
}

var (
	_ attachments.BlobStore = (*BlobStore)(nil)
	_ driver.Lister         = (*BlobStore)(nil)
)

// NewBlobStore returns an empty BlobStore.
func NewBlobStore() *BlobStore {
	return &BlobStore{objects: make(map[string]object)}
}

// Put reads all of r and stores it under key, replacing any object there.
// If r fails, or ctx is done, before io.EOF, it returns the error and stores
// nothing. An empty key is an error matching messaging.ErrInvalid.
func (b *BlobStore) Put(ctx context.Context, key, contentType string, r io.Reader) error {
	if key == "" {
		return fmt.Errorf("memstore: empty key: %w", messaging.ErrInvalid)
	}
	var buf bytes.Buffer
	chunk := make([]byte, 32<<10)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := r.Read(chunk)
		buf.Write(chunk[:n])
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.objects[key] = object{data: buf.Bytes(), contentType: contentType, modTime: time.Now().UTC()}
	return nil
}

// Open returns a reader over a copy of the object's bytes, or an error
// matching messaging.ErrNotFound.
func (b *BlobStore) Open(ctx context.Context, key string) (io.ReadSeekCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	o, ok := b.objects[key]
	b.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("memstore: no object %q: %w", key, messaging.ErrNotFound)
	}
	return &reader{Reader: bytes.NewReader(bytes.Clone(o.data))}, nil
}

// reader is a bytes.Reader that fails once closed.
type reader struct {
	*bytes.Reader
	closed bool
}

var errClosed = errors.New("memstore: read of a closed object reader")

func (r *reader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, errClosed
	}
	return r.Reader.Read(p)
}

func (r *reader) Seek(offset int64, whence int) (int64, error) {
	if r.closed {
		return 0, errClosed
	}
	return r.Reader.Seek(offset, whence)
}

func (r *reader) Close() error {
	r.closed = true
	return nil
}

// Delete removes the object; deleting a missing key returns nil.
func (b *BlobStore) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.objects, key)
	return nil
}

// List calls fn for every object whose key starts with prefix, in key
// order, and stops at the first error fn returns, returning it. fn sees the
// objects as they were when List began and may call the BlobStore.
func (b *BlobStore) List(ctx context.Context, prefix string, fn func(driver.Object) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	var objs []driver.Object
	for k, o := range b.objects {
		if strings.HasPrefix(k, prefix) {
			objs = append(objs, driver.Object{Key: k, ModTime: o.modTime})
		}
	}
	b.mu.Unlock()
	slices.SortFunc(objs, func(x, y driver.Object) int { return strings.Compare(x.Key, y.Key) })
	for _, o := range objs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}
