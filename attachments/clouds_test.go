//go:build cloud

package attachments_test

// With the build tag cloud, the tests that run over every bucket also run
// over Azurite and fake-gcs-server when .ci/azurite.sh and .ci/fakegcs.sh
// set their URLs:
//
//	eval "$(bash .ci/azurite.sh)"; eval "$(bash .ci/fakegcs.sh)"
//	go test -tags cloud ./attachments
import (
	"context"
	"strings"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/stretchr/testify/require"
	"gocloud.dev/blob"

	_ "github.com/parleychat/parley/storage/blobstore/azure" // azblob:// buckets
	_ "github.com/parleychat/parley/storage/blobstore/gcs"   // gs:// buckets
)

func init() {
	cloudBackends["blobstore_azure"] = "PARLEY_TEST_AZURE"
	cloudBackends["blobstore_gcs"] = "PARLEY_TEST_GCS"
	ensureBucket = createBucket
}

// createBucket creates the container or bucket u names on its emulator,
// where nothing made it before.
func createBucket(tb testing.TB, u string) {
	tb.Helper()
	ctx := context.Background()
	b, err := blob.OpenBucket(ctx, u)
	require.NoError(tb, err)
	defer b.Close()
	var cc *container.Client
	var gc *storage.Client
	switch {
	case b.As(&cc):
		_, err := cc.Create(ctx, nil)
		if bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
			err = nil
		}
		require.NoError(tb, err, "create the container of %s", u)
	case b.As(&gc):
		name, _, _ := strings.Cut(strings.TrimPrefix(u, "gs://"), "?")
		err := gc.Bucket(name).Create(ctx, "parley-test", nil)
		if err != nil && !strings.Contains(err.Error(), "409") && !strings.Contains(strings.ToLower(err.Error()), "already") {
			require.NoError(tb, err, "create the bucket of %s", u)
		}
	}
}
