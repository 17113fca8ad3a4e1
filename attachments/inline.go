package attachments

import "mime"

// inlineTypes are the media types that Inline accepts.
var inlineTypes = map[string]bool{
	"image/png":  true,
	"image/jpeg": true,
	"image/gif":  true,
	"image/webp": true,
	"image/avif": true,
	"text/plain": true,
	"audio/mpeg": true,
	"audio/ogg":  true,
	"video/mp4":  true,
	"video/webm": true,
}

// Inline reports whether a file of contentType (parameters such as charset
// allowed) may be shown inline by a browser from the API's origin, that is
// served with Content-Disposition: inline. Those are the types a browser
// renders without running scripts: image/png, image/jpeg, image/gif,
// image/webp, image/avif, text/plain, audio/mpeg, audio/ogg, video/mp4 and
// video/webm. Every other type is served as a download: HTML, SVG, XML and
// scripts, application/pdf (a PDF can carry scripts), and any unknown or
// malformed type.
//
// ContentDisposition decides with Inline; the HTTP adapter and
// storage/blobstore's signed URLs both serve files with its header.
func Inline(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && inlineTypes[mt]
}
