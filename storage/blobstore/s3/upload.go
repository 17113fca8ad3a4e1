package s3

import (
	"encoding/base64"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/parleychat/parley/storage/blobstore/internal/drivers"
)

func init() { drivers.RegisterPutSigner(signPut) }

// signPut signs the type, the disposition and the SHA-256 into a PUT URL
// (X-Amz-SignedHeaders=content-disposition;content-type;host;
// x-amz-checksum-sha256): S3 then refuses a request without these headers
// or with other values, and bytes of another digest. The URL signs one
// PutObject: no multipart upload, no other part, no other checksum.
func signPut(as func(any) bool, req drivers.PutRequest) (drivers.PutTerms, bool, error) {
	var in *awss3.PutObjectInput
	if !as(&in) {
		return drivers.PutTerms{}, false, nil
	}
	sum := base64.StdEncoding.EncodeToString(req.SHA256)
	in.ContentType = &req.ContentType
	in.ContentDisposition = &req.ContentDisposition
	in.ChecksumSHA256 = &sum
	return drivers.PutTerms{
		Headers: map[string]string{
			"Content-Type":          req.ContentType,
			"Content-Disposition":   req.ContentDisposition,
			"x-amz-checksum-sha256": sum,
		},
		ChecksumChecked: true,
	}, true, nil
}
