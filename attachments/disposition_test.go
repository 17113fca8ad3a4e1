package attachments_test

import (
	"mime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/check"
)

func TestContentDisposition(t *testing.T) {
	for _, tc := range []struct {
		ctype, name, want string
	}{
		{"text/plain; charset=utf-8", "a.txt", `inline; filename="a.txt"; filename*=UTF-8''a.txt`},
		{"image/png", "photo 1.png", `inline; filename="photo 1.png"; filename*=UTF-8''photo%201.png`},
		{"text/plain", "résumé.txt", `inline; filename="r_sum_.txt"; filename*=UTF-8''r%C3%A9sum%C3%A9.txt`},
		{"application/pdf", "日本語.pdf", `attachment; filename="___.pdf"; filename*=UTF-8''%E6%97%A5%E6%9C%AC%E8%AA%9E.pdf`},
		{"text/csv", `say "hi"; 100%\.csv`, `attachment; filename="say _hi_; 100__.csv"; filename*=UTF-8''say%20%22hi%22%3B%20100%25%5C.csv`},
		{"video/webm", "clip.webm", `inline; filename="clip.webm"; filename*=UTF-8''clip.webm`},
		{"text/html", "", "attachment"},
	} {
		assert.Equal(t, tc.want, attachments.ContentDisposition(tc.ctype, tc.name), "%q %q", tc.ctype, tc.name)
	}
}

// TestContentDispositionUnsafeTypes: every type a browser could run in the
// server's origin is a download, whatever its name says.
func TestContentDispositionUnsafeTypes(t *testing.T) {
	for _, ctype := range []string{
		"text/html", "text/html; charset=utf-8", "application/xhtml+xml", "image/svg+xml",
		"application/pdf", "text/xml", "application/xml", "text/javascript", "application/javascript",
		"text/css", "application/octet-stream", "", "image/png;;", "image",
	} {
		disp, _, err := mime.ParseMediaType(attachments.ContentDisposition(ctype, "photo.png"))
		require.NoError(t, err, "%q", ctype)
		assert.Equal(t, "attachment", disp, "%q", ctype)
	}
	for _, ctype := range []string{"image/png", "image/jpeg", "text/plain; charset=utf-8", "video/mp4"} {
		disp, _, err := mime.ParseMediaType(attachments.ContentDisposition(ctype, "page.html"))
		require.NoError(t, err, "%q", ctype)
		assert.Equal(t, "inline", disp, "%q", ctype)
	}
}

// FuzzContentDisposition: any name, cleaned as an upload's is, comes back
// whole from mime.ParseMediaType, and the header is one line of printable
// ASCII.
func FuzzContentDisposition(f *testing.F) {
	for _, s := range []string{
		"a.txt", "résumé final.pdf", "日本語.pdf", "emoji 🎉.png", `q"uote\back%25.txt`,
		"semi;colon=eq.txt", "tab\tand\nnewline.txt", "../../etc/passwd", "C:\\dir\\x.txt",
		"'quote'.txt", "=?utf-8?q?encoded?=.txt", strings.Repeat("é", 200), "  spaced  ",
		"\xff\xfeinvalid.txt", "a\u200bb.txt", "*star*", "(paren)<angle>@[br]?.txt",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		name, err := check.Filename("filename", raw)
		if err != nil {
			return
		}
		h := attachments.ContentDisposition("text/plain", name)
		for i := 0; i < len(h); i++ {
			if h[i] < 0x20 || h[i] > 0x7e {
				t.Fatalf("header %q has byte %#x", h, h[i])
			}
		}
		disp, params, err := mime.ParseMediaType(h)
		if err != nil {
			t.Fatalf("ParseMediaType(%q): %v", h, err)
		}
		if disp != "inline" || params["filename"] != name || !utf8.ValidString(params["filename"]) {
			t.Fatalf("ParseMediaType(%q) = %q %q; want inline %q", h, disp, params, name)
		}
	})
}
