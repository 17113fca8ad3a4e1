package gcs

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/gcp"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/storage/blobstore"
)

func TestResponseHeaders(t *testing.T) {
	o := &storage.SignedURLOptions{}
	as := func(i any) bool {
		p, ok := i.(**storage.SignedURLOptions)
		if ok {
			*p = o
		}
		return ok
	}
	require.True(t, responseHeaders(as, "text/html", `attachment; filename="a.html"`))
	assert.Equal(t, storage.SigningSchemeV4, o.Scheme)
	assert.Equal(t, "text/html", o.QueryParameters.Get("response-content-type"))
	assert.Equal(t, `attachment; filename="a.html"`, o.QueryParameters.Get("response-content-disposition"))

	assert.False(t, responseHeaders(func(any) bool { return false }, "", "inline"), "another driver's request")
}

// TestSignedURLNamesTheFile signs with a service account's key (offline:
// the emulator cannot sign) and checks that the URL asks Cloud Storage for
// the file's type and disposition, under the signature.
func TestSignedURLNamesTheFile(t *testing.T) {
	ctx := context.Background()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	b, err := gcsblob.OpenBucket(ctx, &gcp.HTTPClient{Client: *http.DefaultClient}, "parley", &gcsblob.Options{GoogleAccessID: "parley@example.iam.gserviceaccount.com", PrivateKey: pemKey})
	require.NoError(t, err)
	s := blobstore.New(b)
	t.Cleanup(func() { _ = s.Close() })

	raw, err := s.SignedURL(ctx, "attachments/ins_a/att_1", "page.html", "text/html", time.Minute)
	require.NoError(t, err)
	u, err := url.Parse(raw)
	require.NoError(t, err)
	q := u.Query()
	assert.Equal(t, "GOOG4-RSA-SHA256", q.Get("X-Goog-Algorithm"), "V4 signing")
	assert.Equal(t, "text/html", q.Get("response-content-type"))
	assert.Equal(t, attachments.ContentDisposition("text/html", "page.html"), q.Get("response-content-disposition"))
	assert.NotEmpty(t, q.Get("X-Goog-Signature"))
}

// TestSignedPutCreatesOnly: an upload URL signs the precondition that the
// object does not exist yet (x-goog-if-generation-match: 0), which the
// client must send as the URL's headers say: Cloud Storage then answers a
// second request to the URL 412 and keeps the object, so that a client
// cannot replace a file the server has checked. (fake-gcs-server checks
// neither signatures nor preconditions: signed offline, as above.)
func TestSignedPutCreatesOnly(t *testing.T) {
	ctx := context.Background()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	b, err := gcsblob.OpenBucket(ctx, &gcp.HTTPClient{Client: *http.DefaultClient}, "parley", &gcsblob.Options{GoogleAccessID: "parley@example.iam.gserviceaccount.com", PrivateKey: pemKey})
	require.NoError(t, err)
	s := blobstore.New(b)
	t.Cleanup(func() { _ = s.Close() })

	p, err := s.SignPut(ctx, "attachments/ins_a/att_1", blobstore.PutOptions{ContentType: "text/plain", SHA256: make([]byte, 32), Expiry: time.Minute})
	require.NoError(t, err)
	assert.Equal(t, "0", p.Headers["x-goog-if-generation-match"], "the client sends the precondition")
	u, err := url.Parse(p.URL)
	require.NoError(t, err)
	assert.Contains(t, strings.Split(u.Query().Get("X-Goog-SignedHeaders"), ";"), "x-goog-if-generation-match", "under the signature")
}

// TestSignedPutBoundsSize: an upload URL signs the size the client said
// (x-goog-content-length-range), which the client must send as the URL's
// headers say: Cloud Storage then refuses a request of any other size
// with a 400 and stores nothing, so that a client cannot store more than
// it reserved. (fake-gcs-server checks no such header: signed offline.)
func TestSignedPutBoundsSize(t *testing.T) {
	ctx := context.Background()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	b, err := gcsblob.OpenBucket(ctx, &gcp.HTTPClient{Client: *http.DefaultClient}, "parley", &gcsblob.Options{GoogleAccessID: "parley@example.iam.gserviceaccount.com", PrivateKey: pemKey})
	require.NoError(t, err)
	s := blobstore.New(b)
	t.Cleanup(func() { _ = s.Close() })

	for _, size := range []int64{0, 1234} {
		p, err := s.SignPut(ctx, "attachments/ins_a/att_1", blobstore.PutOptions{ContentType: "text/plain", SHA256: make([]byte, 32), Size: size, Expiry: time.Minute})
		require.NoError(t, err)
		want := strconv.FormatInt(size, 10) + "," + strconv.FormatInt(size, 10)
		assert.Equal(t, want, p.Headers["x-goog-content-length-range"], "the client sends the size, exactly")
		u, err := url.Parse(p.URL)
		require.NoError(t, err)
		assert.Contains(t, strings.Split(u.Query().Get("X-Goog-SignedHeaders"), ";"), "x-goog-content-length-range", "under the signature")
	}
}

// TestSignedPutStoresTheDisposition: an upload URL signs the disposition
// of the type (attachments.ContentDisposition), which the client must
// send, so that the object is stored with it as every object is and
// Complete, which checks it, takes the object.
func TestSignedPutStoresTheDisposition(t *testing.T) {
	ctx := context.Background()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	b, err := gcsblob.OpenBucket(ctx, &gcp.HTTPClient{Client: *http.DefaultClient}, "parley", &gcsblob.Options{GoogleAccessID: "parley@example.iam.gserviceaccount.com", PrivateKey: pemKey})
	require.NoError(t, err)
	s := blobstore.New(b)
	t.Cleanup(func() { _ = s.Close() })

	for _, ctype := range []string{"text/html", "image/png"} {
		p, err := s.SignPut(ctx, "attachments/ins_a/att_1", blobstore.PutOptions{ContentType: ctype, SHA256: make([]byte, 32), Expiry: time.Minute})
		require.NoError(t, err)
		assert.Equal(t, attachments.ContentDisposition(ctype, ""), p.Headers["Content-Disposition"])
		u, err := url.Parse(p.URL)
		require.NoError(t, err)
		assert.Contains(t, strings.Split(u.Query().Get("X-Goog-SignedHeaders"), ";"), "content-disposition", "under the signature")
	}
}
