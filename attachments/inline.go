package attachments

import (
	"mime"
	"strings"
)

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
// video/webm, with no charset or a charset of UTF-8 or US-ASCII (also
// spelled utf8 and ascii). Every other type is served as a download: HTML,
// SVG, XML and scripts, application/pdf (a PDF can carry scripts), any
// unknown or malformed type, and any type with another charset, which a
// browser may decode into markup that no check of the bytes saw (UTF-7
// writes "<script>" as "+ADw-script+AD4-").
//
// ContentDisposition decides with Inline; the HTTP adapter and
// storage/blobstore's signed URLs both serve files with its header.
func Inline(contentType string) bool {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || !inlineTypes[mt] {
		return false
	}
	cs, ok := params["charset"]
	return !ok || inlineCharsets[strings.ToLower(cs)]
}

// inlineCharsets are the charsets (lower case) of the files Inline accepts.
var inlineCharsets = map[string]bool{
	"utf-8":    true,
	"utf8":     true,
	"us-ascii": true,
	"ascii":    true,
}
