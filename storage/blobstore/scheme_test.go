package blobstore

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gocloud.dev/blob"

	"github.com/parleychat/parley/messaging"
)

// TestCheckSchemeNamesPackage checks that a bucket URL whose scheme no
// imported package registers gives an error that names the package to
// import, as sqlstore.Open does for DSNs.
func TestCheckSchemeNamesPackage(t *testing.T) {
	empty := new(blob.URLMux) // no driver registered
	for _, tc := range []struct{ url, want string }{
		{"file:///var/lib/parley/files", `blobstore.Open: no driver for file:// buckets: import _ "gocloud.dev/blob/fileblob"`},
		{"mem://", `blobstore.Open: no driver for mem:// buckets: import _ "gocloud.dev/blob/memblob"`},
		{"s3://bucket?region=eu-west-1", `blobstore.Open: no driver for s3:// buckets: import _ "github.com/parleychat/parley/storage/blobstore/s3"`},
		{"GS://bucket", `blobstore.Open: no driver for gs:// buckets: import _ "github.com/parleychat/parley/storage/blobstore/gcs"`},
		{"azblob://container", `blobstore.Open: no driver for azblob:// buckets: import _ "github.com/parleychat/parley/storage/blobstore/azure"`},
		{"nosuch://bucket", `blobstore.Open: no driver for nosuch:// buckets: import the gocloud.dev driver package that registers it`},
	} {
		t.Run(tc.url, func(t *testing.T) {
			err := checkScheme(empty, tc.url)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			assert.True(t, errors.Is(err, messaging.ErrUnimplemented), "matches ErrUnimplemented")
		})
	}
}
