//go:build cloud

package attachments_test

// With the build tag cloud, the tests that run over every bucket also run
// over Azurite and fake-gcs-server when .ci/azurite.sh and .ci/fakegcs.sh
// set their URLs:
//
//	eval "$(bash .ci/azurite.sh)"; eval "$(bash .ci/fakegcs.sh)"
//	go test -tags cloud ./attachments
import (
	_ "github.com/parleychat/parley/storage/blobstore/azure" // azblob:// buckets
	_ "github.com/parleychat/parley/storage/blobstore/gcs"   // gs:// buckets
)

func init() {
	cloudBackends["blobstore_azure"] = "PARLEY_TEST_AZURE"
	cloudBackends["blobstore_gcs"] = "PARLEY_TEST_GCS"
}
