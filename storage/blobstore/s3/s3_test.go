package s3

import (
	"testing"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResponseHeaders(t *testing.T) {
	in := &awss3.GetObjectInput{}
	as := func(i any) bool {
		p, ok := i.(**awss3.GetObjectInput)
		if ok {
			*p = in
		}
		return ok
	}
	require.True(t, responseHeaders(as, "image/png", "inline; filename=a.png"))
	assert.Equal(t, "image/png", *in.ResponseContentType)
	assert.Equal(t, "inline; filename=a.png", *in.ResponseContentDisposition)

	in = &awss3.GetObjectInput{}
	require.True(t, responseHeaders(as, "", "attachment"))
	assert.Nil(t, in.ResponseContentType, "no type: the stored one")

	assert.False(t, responseHeaders(func(any) bool { return false }, "image/png", "inline"), "another driver")
}
