package attachments_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/parleychat/parley/attachments"
)

func TestInline(t *testing.T) {
	for _, tc := range []struct {
		ctype string
		want  bool
	}{
		{"image/png", true},
		{"image/jpeg", true},
		{"image/gif", true},
		{"image/webp", true},
		{"image/avif", true},
		{"text/plain", true},
		{"text/plain; charset=utf-8", true},
		{"Text/Plain; charset=UTF-8", true},
		{"text/plain; charset=us-ascii", true},
		{"text/plain; charset=\"utf-8\"", true},
		{"text/plain; charset=utf8", true},
		{"text/plain; charset=ASCII", true},
		{"image/png; charset=binary", false}, // a charset that is not UTF-8 or ASCII, on any type

		// Issue 30: a charset a browser may decode into markup (UTF-7
		// hides "<script>" as "+ADw-script+AD4-"), or any other that is not
		// UTF-8 or ASCII, is a download.
		{"text/plain; charset=utf-7", false},
		{"text/plain; charset=UTF-7", false},
		{"text/plain; charset=utf-16be", false}, // what http.DetectContentType gives for a UTF-16 BOM
		{"text/plain; charset=iso-2022-jp", false},
		{"text/plain; charset=windows-1252", false},
		{"text/plain; charset=", false},
		{"audio/mpeg", true},
		{"audio/ogg", true},
		{"video/mp4", true},
		{"video/webm", true},

		{"application/pdf", false},
		{"image/svg+xml", false},
		{"text/html", false},
		{"text/html; charset=utf-8", false},
		{"application/xhtml+xml", false},
		{"text/xml", false},
		{"application/xml", false},
		{"text/javascript", false},
		{"application/javascript", false},
		{"text/css", false},
		{"audio/x-wav", false},
		{"video/quicktime", false},
		{"application/octet-stream", false},
		{"", false},
		{"image/png;;", false}, // malformed
		{"image", false},
	} {
		assert.Equal(t, tc.want, attachments.Inline(tc.ctype), "%q", tc.ctype)
	}
}
