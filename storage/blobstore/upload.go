package blobstore

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"gocloud.dev/blob"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/blobstore/internal/drivers"
)

// Uploads straight to the bucket: a client sends an object's bytes to a
// signed PUT URL of the bucket, and the server then checks what was stored
// (Stat, ReadHead, SHA256) without the bytes passing through it.

// ErrCannotSign is returned (wrapped) by SignPut for a bucket that cannot
// sign upload URLs: a directory or memory bucket, a driver no package
// under storage/blobstore supports, or a bucket opened without the
// credentials that signing needs. It matches messaging.ErrUnimplemented.
// The caller then takes the bytes itself (Put).
var ErrCannotSign = fmt.Errorf("blobstore: the bucket cannot sign upload URLs: %w", messaging.ErrUnimplemented)

// PutOptions say what a signed PUT URL lets a client store.
type PutOptions struct {
	// ContentType is the type the object is stored with. Required.
	ContentType string
	// SHA256 is the digest of the bytes the client will send, 32 bytes.
	// Required. On S3 and S3-compatible servers the bucket refuses bytes
	// of another digest.
	SHA256 []byte
	// Size is the number of bytes the client will send (0 for an empty
	// file). On Google Cloud Storage the bucket refuses a request of
	// another size.
	Size int64
	// Expiry is how long the URL may be used; 0 means an hour.
	Expiry time.Duration
}

// A SignedPut is a URL of the bucket to which a client sends an object's
// bytes, and how.
type SignedPut struct {
	URL    string
	Method string // PUT
	// Headers are the headers the client sends with the request, exactly
	// as given (the API's upload_headers); the bucket refuses the request
	// or stores the object otherwise.
	Headers map[string]string
	// ChecksumChecked reports whether the bucket itself refuses bytes
	// whose SHA-256 is not PutOptions.SHA256: true on S3 and
	// S3-compatible servers (x-amz-checksum-sha256, signed into the URL).
	// Where it is false (Google Cloud Storage, Azure), nothing but the
	// digest of the stored bytes (Store.SHA256) shows what was sent.
	ChecksumChecked bool
	// Expires is when the URL stops working.
	Expires time.Time
}

// SignPut returns a URL to which a client PUTs the bytes of the object
// key itself, stored with opts.ContentType and, where the driver stores
// what the client sends, attachments.ContentDisposition of that type.
//
//   - S3 and S3-compatible servers (storage/blobstore/s3): the type, the
//     disposition and the SHA-256 (x-amz-checksum-sha256) are signed into
//     the URL: the client must send them, and the bucket refuses bytes of
//     another digest.
//   - Google Cloud Storage (storage/blobstore/gcs, a bucket opened with a
//     signing key): the type, the disposition, the precondition that the
//     object does not exist (x-goog-if-generation-match: 0) and the size
//     (x-goog-content-length-range) are signed; the digest is not checked.
//   - Azure (storage/blobstore/azure): the URL has the create permission
//     alone; the client sends the blob type, the type and the disposition
//     as headers, which the signature does not cover, so the client may
//     store others (Stat shows them: attachments' Complete refuses such
//     an object); neither the size nor the digest is checked.
//
// The URL works until it expires but never replaces an object stored
// under key: on S3 it takes only the bytes of the digest; on GCS and Azure
// a request while the object exists is refused (412, 403). A client
// cannot change an object the server has checked.
//
// A bucket that cannot sign gives an error matching ErrCannotSign and
// messaging.ErrUnimplemented; one that cannot be reached,
// messaging.ErrUnavailable.
func (s *Store) SignPut(ctx context.Context, key string, opts PutOptions) (*SignedPut, error) {
	if opts.ContentType == "" {
		return nil, errors.New("blobstore: sign put: no content type")
	}
	if len(opts.SHA256) != sha256.Size {
		return nil, fmt.Errorf("blobstore: sign put: a SHA-256 is %d bytes, not %d", sha256.Size, len(opts.SHA256))
	}
	if opts.Size < 0 {
		return nil, fmt.Errorf("blobstore: sign put: a size of %d bytes", opts.Size)
	}
	if opts.Expiry <= 0 {
		opts.Expiry = time.Hour
	}
	req := drivers.PutRequest{
		ContentType:        opts.ContentType,
		ContentDisposition: attachments.ContentDisposition(opts.ContentType, ""),
		SHA256:             opts.SHA256,
		Size:               opts.Size,
	}
	var terms drivers.PutTerms
	known := false
	expires := time.Now().Add(opts.Expiry)
	u, err := s.b.SignedURL(ctx, key, &blob.SignedURLOptions{
		Expiry: opts.Expiry,
		Method: http.MethodPut,
		BeforeSign: func(as func(any) bool) error {
			for _, sign := range drivers.PutSigners() {
				t, ok, err := sign(as, req)
				if err != nil {
					return err
				}
				if ok {
					terms, known = t, true
					return nil
				}
			}
			// No package knows the driver: what the client would have to
			// send is unknown, so the URL would be of no use.
			return ErrCannotSign
		},
	})
	switch {
	case errors.Is(err, ErrCannotSign):
		return nil, fmt.Errorf("blobstore: sign put %q: %w", key, err)
	case err != nil:
		err = mapError("sign put", err)
		if errors.Is(err, messaging.ErrUnimplemented) {
			return nil, fmt.Errorf("%w: %w", ErrCannotSign, err)
		}
		return nil, err
	case !known:
		// The driver signed without calling BeforeSign (fileblob with a
		// URLSigner does): a URL of the host's, not of a bucket that
		// takes the bytes.
		return nil, fmt.Errorf("blobstore: sign put %q: %w", key, ErrCannotSign)
	}
	return &SignedPut{URL: u, Method: http.MethodPut, Headers: terms.Headers, ChecksumChecked: terms.ChecksumChecked, Expires: expires}, nil
}

// ObjectInfo is what the bucket says of a stored object.
type ObjectInfo struct {
	Size               int64
	ContentType        string
	ContentDisposition string
	ModTime            time.Time
	ETag               string
}

// Stat returns what the bucket says of the object key, without reading its
// bytes (a HEAD). A missing object is an error matching
// messaging.ErrNotFound.
func (s *Store) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	a, err := s.b.Attributes(ctx, key)
	if err != nil {
		return ObjectInfo{}, mapError("stat", err)
	}
	return ObjectInfo{
		Size:               a.Size,
		ContentType:        a.ContentType,
		ContentDisposition: a.ContentDisposition,
		ModTime:            a.ModTime,
		ETag:               a.ETag,
	}, nil
}

// ReadHead returns the first n bytes of the object key (all of them when
// it is shorter), by a range read: enough to sniff its type
// (http.DetectContentType reads 512) or to read an image's header. A
// missing object is an error matching messaging.ErrNotFound.
func (s *Store) ReadHead(ctx context.Context, key string, n int) ([]byte, error) {
	r, err := s.b.NewRangeReader(ctx, key, 0, int64(n), nil)
	if err != nil {
		return nil, mapError("read head", err)
	}
	defer r.Close()
	head, err := io.ReadAll(r)
	if err != nil {
		return nil, mapError("read head", err)
	}
	return head, nil
}

// SHA256 reads the object key once and returns the SHA-256 of its bytes
// and their number: what shows that a client sent the bytes it said on a
// bucket that does not check (Google Cloud Storage, Azure). The bytes
// stream through a small buffer. A missing object is an error matching
// messaging.ErrNotFound.
func (s *Store) SHA256(ctx context.Context, key string) (sum []byte, size int64, err error) {
	r, err := s.b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, 0, mapError("sha256", err)
	}
	defer r.Close()
	h := sha256.New()
	size, err = io.CopyBuffer(h, onlyReader{r}, make([]byte, copyBuffer))
	if err != nil {
		return nil, 0, mapError("sha256", err)
	}
	return h.Sum(nil), size, nil
}

// onlyReader is an io.Reader and nothing else (blob.Reader's WriteTo
// would copy through a buffer of its own choosing).
type onlyReader struct{ io.Reader }

var _ driver.UploadSigner = (*Store)(nil)

// SignUpload is SignPut for attachments.Service (driver.UploadSigner).
func (s *Store) SignUpload(ctx context.Context, key string, req driver.UploadRequest) (driver.SignedUpload, error) {
	p, err := s.SignPut(ctx, key, PutOptions{ContentType: req.ContentType, SHA256: req.SHA256, Size: req.Size, Expiry: req.Expiry})
	if err != nil {
		return driver.SignedUpload{}, err
	}
	return driver.SignedUpload{URL: p.URL, Method: p.Method, Headers: p.Headers, ChecksumChecked: p.ChecksumChecked}, nil
}

// Attributes returns the size, type and disposition of the object key
// from Stat (driver.UploadSigner).
func (s *Store) Attributes(ctx context.Context, key string) (driver.ObjectAttributes, error) {
	info, err := s.Stat(ctx, key)
	return driver.ObjectAttributes{Size: info.Size, ContentType: info.ContentType, ContentDisposition: info.ContentDisposition}, err
}
