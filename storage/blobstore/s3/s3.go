// Package s3 makes blobstore's signed URLs of Amazon S3 and S3-compatible
// servers (MinIO, R2, …) name the file, and registers gocloud's s3blob
// driver for s3:// bucket URLs. Import it for its effect:
//
//	import _ "github.com/parleychat/parley/storage/blobstore/s3"
//
//	files, err := blobstore.Open(ctx, "s3://my-bucket?region=eu-west-1")
//
// Credentials come from the usual AWS sources (environment, shared files,
// instance role). For an S3-compatible server add endpoint and
// use_path_style to the URL:
// s3://parley?endpoint=http://127.0.0.1:9000&use_path_style=true&region=us-east-1.
//
// A URL that blobstore.Store.SignedURL makes then carries
// response-content-type and response-content-disposition, so S3 serves
// the file with its current type and name, as
// attachments.ContentDisposition words it (inline only for the types
// attachments.Inline accepts). Without this package (s3blob imported on its
// own) the URLs still work, but S3 answers with the type stored at upload
// and no file name.
package s3

import (
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	_ "gocloud.dev/blob/s3blob" // s3:// URLs

	"github.com/parleychat/parley/storage/blobstore/internal/drivers"
)

func init() { drivers.RegisterSignHook(responseHeaders) }

// responseHeaders sets the response headers of a signed S3 GET.
func responseHeaders(as func(any) bool, contentType, disposition string) bool {
	var in *awss3.GetObjectInput
	if !as(&in) {
		return false
	}
	if contentType != "" {
		in.ResponseContentType = &contentType
	}
	in.ResponseContentDisposition = &disposition
	return true
}
