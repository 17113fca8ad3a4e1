package blobstore_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
)

// TestSignedURLS3Headers: an S3 signed URL asks the server to answer with
// the file's type and attachments.ContentDisposition, the header the HTTP
// adapter serves files with. (Signing needs no server.)
func TestSignedURLS3Headers(t *testing.T) {
	s := openS3At(t, "http://127.0.0.1:1")
	for _, tc := range []struct{ filename, ctype string }{
		{"page.html", "text/html"},
		{"photo.png", "image/png"},
		{"résumé final.pdf", "application/pdf"},
		{`say "hi" 100%.txt`, "text/plain; charset=utf-8"},
	} {
		raw, err := s.SignedURL(context.Background(), "attachments/att_1", tc.filename, tc.ctype, time.Minute)
		require.NoError(t, err)
		u, err := url.Parse(raw)
		require.NoError(t, err)
		q := u.Query()
		assert.Equal(t, attachments.ContentDisposition(tc.ctype, tc.filename), q.Get("response-content-disposition"), "%q", tc.filename)
		assert.Equal(t, tc.ctype, q.Get("response-content-type"), "%q", tc.filename)
	}
}
