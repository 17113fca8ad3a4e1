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
