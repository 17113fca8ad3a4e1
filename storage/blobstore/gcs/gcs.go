// Package gcs makes blobstore's signed URLs of Google Cloud Storage name
// the file, and registers gocloud's gcsblob driver for gs:// bucket URLs.
// Import it for its effect:
//
//	import _ "github.com/parleychat/parley/storage/blobstore/gcs"
//
//	files, err := blobstore.Open(ctx, "gs://my-bucket")
//
// Credentials come from Google's Application Default Credentials; signing
// needs a service account's key (gcsblob's access_id and private_key_path
// URL parameters, or its credentials file). With STORAGE_EMULATOR_HOST
// set, the bucket is that of a local emulator such as fake-gcs-server.
//
// A URL that blobstore.Store.SignedURL makes then carries
// response-content-type and response-content-disposition (V4 signing), so
// Cloud Storage serves the file with its current type and name, as
// attachments.ContentDisposition words it.
//
// An upload URL (blobstore.Store.SignPut) signs the type and the
// disposition, x-goog-if-generation-match: 0, so that it creates the
// object and never replaces it (a second request is a 412), and
// x-goog-content-length-range of the size, so that it stores no other
// number of bytes (a 400); a client sends these headers, and a bucket's
// CORS rule for browsers must allow them.
package gcs

import (
	"net/url"

	"cloud.google.com/go/storage"
	_ "gocloud.dev/blob/gcsblob" // gs:// URLs

	"github.com/parleychat/parley/storage/blobstore/internal/drivers"
)

func init() { drivers.RegisterSignHook(responseHeaders) }

// responseHeaders sets the response headers of a signed GET.
func responseHeaders(as func(any) bool, contentType, disposition string) bool {
	var o *storage.SignedURLOptions
	if !as(&o) {
		return false
	}
	// The response-* parameters are signed only by the V4 scheme.
	o.Scheme = storage.SigningSchemeV4
	q := url.Values{}
	if contentType != "" {
		q.Set("response-content-type", contentType)
	}
	q.Set("response-content-disposition", disposition)
	o.QueryParameters = q
	return true
}
