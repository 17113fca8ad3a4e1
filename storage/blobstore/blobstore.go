package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/blobstore/internal/drivers"
)

// Store is an attachments.BlobStore, driver.Lister and
// driver.URLSigner over a gocloud bucket. It is safe for concurrent
// use.
type Store struct {
	b *blob.Bucket
}

var (
	_ attachments.BlobStore = (*Store)(nil)
	_ driver.Lister         = (*Store)(nil)
	_ driver.URLSigner      = (*Store)(nil)
)

// Open opens the bucket at a gocloud URL, whose scheme the driver package
// the program imports registers (file:// by gocloud.dev/blob/fileblob,
// s3:// by gocloud.dev/blob/s3blob, mem:// by gocloud.dev/blob/memblob,
// …). A scheme no imported package registers gives an error matching
// messaging.ErrUnimplemented that names the package to import. The Store
// owns the bucket: Close closes it.
func Open(ctx context.Context, bucketURL string) (*Store, error) {
	if err := checkScheme(blob.DefaultURLMux(), bucketURL); err != nil {
		return nil, err
	}
	b, err := blob.OpenBucket(ctx, bucketURL)
	if err != nil {
		return nil, fmt.Errorf("blobstore: %w", err)
	}
	return New(b), nil
}

// driverPackages are the packages that register the bucket schemes
// Parley documents, for the error that asks for one.
var driverPackages = map[string]string{
	"file":   "gocloud.dev/blob/fileblob",
	"mem":    "gocloud.dev/blob/memblob",
	"s3":     "github.com/parleychat/parley/storage/blobstore/s3",
	"gs":     "github.com/parleychat/parley/storage/blobstore/gcs",
	"azblob": "github.com/parleychat/parley/storage/blobstore/azure",
}

// checkScheme returns an error that names the driver package to import
// when mux (gocloud's default URL mux, for Open) has no driver for the
// scheme of bucketURL. A URL without a scheme is left to blob.OpenBucket.
func checkScheme(mux *blob.URLMux, bucketURL string) error {
	u, err := url.Parse(bucketURL)
	if err != nil || u.Scheme == "" {
		return nil
	}
	scheme := strings.ToLower(u.Scheme)
	if mux.ValidBucketScheme(scheme) {
		return nil
	}
	msg := fmt.Sprintf("no driver for %s:// buckets", scheme)
	if pkg, ok := driverPackages[scheme]; ok {
		msg += fmt.Sprintf(": import _ %q", pkg)
	} else {
		msg += ": import the gocloud.dev driver package that registers it"
	}
	return &messaging.Error{Kind: messaging.ErrUnimplemented, Op: "blobstore.Open", Message: msg}
}

// New returns a Store over b. Close closes b.
func New(b *blob.Bucket) *Store { return &Store{b: b} }

// Bucket returns the underlying bucket, for what the Store does not offer
// (serving fileblob signed URLs, for example).
func (s *Store) Bucket() *blob.Bucket { return s.b }

// Close closes the bucket.
func (s *Store) Close() error { return s.b.Close() }

// Put streams r into the object key. If r fails or ctx ends before io.EOF,
// the write is aborted and no object is left under key: Put cancels the
// writer's context before it closes the writer, which is how gocloud
// aborts (fileblob removes its temporary file, memblob drops its buffer,
// s3blob aborts the multipart upload). An error of r is returned as it is
// (wrapped); a bucket that cannot be reached gives an error matching
// messaging.ErrUnavailable.
//
// A directory bucket holds only a copy buffer per upload. On S3 the AWS
// transfer manager reads up to 16 MiB before it chooses between a single
// and a multipart upload, then sends 5 MiB parts two at a time: about 32
// MiB at most, whatever the file's size.
func (s *Store) Put(ctx context.Context, key, contentType string, r io.Reader) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.b.NewWriter(wctx, key, &blob.WriterOptions{
		ContentType: contentType,
		// Stored with the object, so that a bucket that serves it (a
		// signed URL whose driver cannot set response headers) never shows
		// a type a browser could run inline.
		ContentDisposition: attachments.ContentDisposition(contentType, ""),
		BufferSize:         partSize,
		MaxConcurrency:     partConcurrency,
	})
	if err != nil {
		return mapError("put", err)
	}
	src := &errReader{r: r}
	// Large writes: a file or an S3 part gets copyBuffer bytes a call rather
	// than the few KiB a request body yields. (onlyWriter hides the
	// Writer's ReadFrom, which would copy through a small buffer.)
	_, err = io.CopyBuffer(onlyWriter{w}, src, make([]byte, copyBuffer))
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		// Cancel before Close: that is how gocloud aborts a write instead
		// of committing what was written so far.
		cancel()
		closeAborted(w)
		if src.err != nil && errors.Is(err, src.err) {
			// The reader's failure (a client's body, a size limit) says
			// nothing about the bucket.
			return fmt.Errorf("blobstore: put %q aborted: %w", key, err)
		}
		return mapError(fmt.Sprintf("put %q aborted", key), err)
	}
	if err := closeWriter(w); err != nil {
		return mapError("put", err)
	}
	return nil
}

// closeAborted closes a writer whose context was canceled, which makes
// gocloud abort the write. The write is aborted all the same; a panic of
// the driver (see closeWriter) is not the caller's.
func closeAborted(w *blob.Writer) { _ = closeWriter(w) }

// closeWriter closes w. gocloud's azureblob (v0.47) can panic in Close
// when its upload failed: the goroutine that saw the failure clears the
// pipe that Close then closes. The write failed all the same, and is
// reported as an error of the bucket, not as a crash of the process.
func closeWriter(w *blob.Writer) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the bucket's driver failed to complete the write: %v", p)
		}
	}()
	return w.Close()
}

// copyBuffer is the size of the writes Put makes.
const copyBuffer = 256 << 10

// onlyWriter is an io.Writer and nothing else.
type onlyWriter struct{ io.Writer }

// errReader remembers the error its reader returned, so that Put can tell
// a failing source from a failing bucket.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}

// Open returns a reader of the object that can seek. A missing object is an
// error matching messaging.ErrNotFound.
func (s *Store) Open(ctx context.Context, key string) (io.ReadSeekCloser, error) {
	r, err := s.b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, mapError("open", err)
	}
	return r, nil
}

// Delete removes the object; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	err := s.b.Delete(ctx, key)
	if err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return mapError("delete", err)
	}
	return nil
}

// List calls fn for every object whose key starts with prefix, in key
// order, stopping at the first error fn returns.
func (s *Store) List(ctx context.Context, prefix string, fn func(driver.Object) error) error {
	it := s.b.List(&blob.ListOptions{Prefix: prefix})
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return mapError("list", err)
		}
		if o.IsDir {
			continue
		}
		if err := fn(driver.Object{Key: o.Key, ModTime: o.ModTime}); err != nil {
			return err
		}
	}
}

// SignedURL returns a GET URL of the object valid for expiry (0 means the
// gocloud default of an hour). Where a registered sign hook knows the
// driver (S3, with storage/blobstore/s3 imported), the URL makes the
// server answer with contentType and
// attachments.ContentDisposition(contentType, filename). Otherwise the
// server answers with what it stored: the type given to Put, and no file
// name. A bucket that cannot sign (memblob, fileblob without a URLSigner)
// gives an error matching messaging.ErrUnimplemented.
//
// A directory bucket signs when it has a URLSigner:
//
//	base, _ := url.Parse("https://files.example.com/signed")
//	b, err := fileblob.OpenBucket("/var/lib/parley/files", &fileblob.Options{
//		URLSigner: fileblob.NewURLSignerHMAC(base, secretKey),
//	})
//	files := blobstore.New(b)
//
// (or the URL form file:///dir?base_url=…&secret_key_path=…). The host
// then serves that base URL itself: URLSignerHMAC.KeyFromURL checks the
// signature and expiry and returns the key, whose bytes Store.Open reads,
// and the host's handler sets the file's type and Content-Disposition
// (attachments.ContentDisposition).
func (s *Store) SignedURL(ctx context.Context, key, filename, contentType string, expiry time.Duration) (string, error) {
	disp := attachments.ContentDisposition(contentType, filename)
	u, err := s.b.SignedURL(ctx, key, &blob.SignedURLOptions{
		Expiry: expiry,
		Method: http.MethodGet,
		BeforeSign: func(as func(any) bool) error {
			for _, h := range drivers.SignHooks() {
				if h(as, contentType, disp) {
					break
				}
			}
			return nil
		},
	})
	if err != nil {
		return "", mapError("sign", err)
	}
	return u, nil
}

// mapError turns the gocloud codes the attachments contract names into its
// kinds, keeping the cause: a missing object is ErrNotFound, an operation
// the bucket cannot do ErrUnimplemented, and a bucket that cannot be
// reached (see unreachable) ErrUnavailable.
func mapError(op string, err error) error {
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		return fmt.Errorf("blobstore: %s: %w: %w", op, messaging.ErrNotFound, err)
	case gcerrors.Unimplemented:
		return fmt.Errorf("blobstore: %s: the bucket cannot do this: %w: %w", op, messaging.ErrUnimplemented, err)
	}
	if unreachable(err) {
		return fmt.Errorf("blobstore: %s: the bucket cannot be reached: %w: %w", op, messaging.ErrUnavailable, err)
	}
	return fmt.Errorf("blobstore: %s: %w", op, err)
}

// unreachable reports whether err says that the bucket could not be
// reached or did not answer in time, as opposed to refusing the request:
// a network error (refused or reset connection, DNS failure, timeout), a
// deadline, the gocloud codes DeadlineExceeded and ResourceExhausted, or an
// HTTP answer of 502, 503 or 504 from the server. A canceled context is
// not: the caller gave up.
func unreachable(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	switch gcerrors.Code(err) {
	case gcerrors.DeadlineExceeded, gcerrors.ResourceExhausted:
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) {
		return true
	}
	if networkError(err) { // *net.OpError, *net.DNSError, *url.Error, …
		return true
	}
	var he interface{ HTTPStatusCode() int } // the AWS SDK's response errors
	if errors.As(err, &he) {
		switch he.HTTPStatusCode() {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
	}
	return false
}

// Writes go in parts of partSize (the smallest S3 allows), partConcurrency
// at a time: an S3 upload then holds about (partConcurrency+1)·partSize in
// memory, plus the 16 MiB the AWS transfer manager reads before it decides
// between a single and a multipart upload. gocloud's defaults (8 MiB, 5)
// hold over 60 MiB per upload.
const (
	partSize        = 5 << 20
	partConcurrency = 2
)

// networkError reports whether err is the failure of a network operation:
// a *net.OpError, or a net.Error other than a bare system call error.
// syscall.Errno has Timeout and Temporary, so it is a net.Error too; but
// one that no *net.OpError wraps is a local failure (a full disk, a file
// that may not be written, an I/O error), which waiting will not mend: it
// is an internal error, not an unavailable backend.
func networkError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) {
		return true
	}
	var ne net.Error
	if !errors.As(err, &ne) {
		return false
	}
	_, local := ne.(syscall.Errno)
	return !local
}
