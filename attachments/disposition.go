package attachments

import "strings"

// ContentDisposition returns the Content-Disposition header with which a
// file of contentType named filename is served: inline for the types Inline
// accepts, attachment (a download) for every other type, so that a file a
// browser could run in the server's origin (HTML, SVG, PDF, scripts) never
// opens in it.
//
// The name is given twice, as RFC 6266 advises: a quoted filename
// parameter for old clients, in which every character other than printable
// ASCII (and ", \ and %, which some clients misread) is an underscore, and
// filename* with the exact name in UTF-8 (RFC 8187, which obsoletes RFC
// 5987), which browsers and mime.ParseMediaType prefer:
//
//	inline; filename="r_sum_.txt"; filename*=UTF-8''r%C3%A9sum%C3%A9.txt
//
// An empty filename gives the disposition type alone. The HTTP adapter
// serves files with this header, and a URLSigner's URLs should make the
// bucket answer with it (storage/blobstore's do on S3).
func ContentDisposition(contentType, filename string) string {
	disp := "attachment"
	if Inline(contentType) {
		disp = "inline"
	}
	if filename == "" {
		return disp
	}
	var b strings.Builder
	b.WriteString(disp)
	b.WriteString(`; filename="`)
	for _, c := range filename {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '%' {
			c = '_'
		}
		b.WriteRune(c)
	}
	b.WriteString(`"; filename*=UTF-8''`)
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(filename); i++ {
		c := filename[i]
		if attrChar(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// attrChar reports whether c may stand unescaped in an RFC 8187 value.
func attrChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("!#$&+-.^_`|~", c) >= 0
}
