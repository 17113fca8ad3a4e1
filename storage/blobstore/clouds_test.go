package blobstore_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gocloud.dev/blob"

	"github.com/parleychat/parley/attachments"
	_ "github.com/parleychat/parley/storage/blobstore/azure"
	_ "github.com/parleychat/parley/storage/blobstore/gcs"
	"github.com/parleychat/parley/storage/storetest"
)

// TestConformanceAzure runs the blob suite on Azure Blob Storage, or the
// Azurite emulator that .ci/azurite.sh starts (PARLEY_TEST_AZURE).
func TestConformanceAzure(t *testing.T) {
	u := os.Getenv("PARLEY_TEST_AZURE")
	if u == "" {
		t.Skip("PARLEY_TEST_AZURE is not set (an azblob:// URL; see .ci/azurite.sh)")
	}
	ensureBucket(t, u)
	storetest.RunBlobConformanceTests(t, func(t *testing.T) attachments.BlobStore { return openS3(t, u) })
	t.Run("stored_disposition", func(t *testing.T) { testStoredDisposition(t, u) })
}

// TestConformanceGCS runs the blob suite on Google Cloud Storage, or the
// fake-gcs-server that .ci/fakegcs.sh starts (PARLEY_TEST_GCS, with
// STORAGE_EMULATOR_HOST). The emulator cannot sign URLs: that test skips.
func TestConformanceGCS(t *testing.T) {
	u := os.Getenv("PARLEY_TEST_GCS")
	if u == "" {
		t.Skip("PARLEY_TEST_GCS is not set (a gs:// URL; see .ci/fakegcs.sh)")
	}
	ensureBucket(t, u)
	storetest.RunBlobConformanceTests(t, func(t *testing.T) attachments.BlobStore { return openS3(t, u) })
	t.Run("stored_disposition", func(t *testing.T) { testStoredDisposition(t, u) })
}

// ensureBucket creates the bucket or container that u names on an
// emulator, where nothing made it before.
func ensureBucket(t *testing.T, u string) {
	t.Helper()
	ctx := context.Background()
	b, err := blob.OpenBucket(ctx, u)
	require.NoError(t, err)
	defer b.Close()
	var cc *container.Client
	var gc *storage.Client
	switch {
	case b.As(&cc):
		_, err := cc.Create(ctx, nil)
		if bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
			err = nil
		}
		require.NoError(t, err, "create the container of %s", u)
	case b.As(&gc):
		name := strings.TrimPrefix(u, "gs://")
		name, _, _ = strings.Cut(name, "?")
		err := gc.Bucket(name).Create(ctx, "parley-test", nil)
		var exists interface{ HTTPCode() int }
		if err != nil && !errors.As(err, &exists) && !strings.Contains(err.Error(), "409") && !strings.Contains(strings.ToLower(err.Error()), "already") {
			require.NoError(t, err, "create the bucket of %s", u)
		}
	}
}

// testStoredDisposition: objects are stored with the disposition of their
// type, so that the bucket never serves them inline by itself when a
// browser could run them.
func testStoredDisposition(t *testing.T, u string) {
	ctx := context.Background()
	s := openS3(t, u)
	for ct, want := range map[string]string{"text/html": "attachment", "image/svg+xml": "attachment", "text/plain; charset=utf-8": "inline", "image/png": "inline"} {
		key := "attachments/disp-" + strings.ReplaceAll(strings.ReplaceAll(ct, "/", "-"), ";", "")
		require.NoError(t, s.Put(ctx, key, ct, strings.NewReader("x")))
		attrs, err := s.Bucket().Attributes(ctx, key)
		require.NoError(t, err)
		assert.Equal(t, want, attrs.ContentDisposition, ct)
	}
}
