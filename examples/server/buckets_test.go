//go:build !cloud

package main

import (
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCloudBucketNeedsTheTag: the default build links no cloud SDK, and a
// -bucket (or a copy's -to-bucket) of S3, GCS or Azure fails at start with
// a message that names the build tag, before anything is created.
func TestCloudBucketNeedsTheTag(t *testing.T) {
	for _, bucket := range []string{"s3://parley?region=eu-west-1", "gs://parley", "azblob://parley"} {
		data := filepath.Join(t.TempDir(), "data")
		err := startErr(t, "-addr", "127.0.0.1:0", "-data", data, "-bucket", bucket)
		assert.Contains(t, err.Error(), "-bucket "+bucket)
		assert.Contains(t, err.Error(), "-tags cloud", "the error says how to build with the driver")
		assert.NoDirExists(t, data, "nothing was created")

		err = runCopy(t.Context(), []string{"-data", data, "-to-db", filepath.Join(t.TempDir(), "copy.db"), "-to-bucket", bucket}, io.Discard, io.Discard)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "-to-bucket "+bucket)
		assert.Contains(t, err.Error(), "-tags cloud")
	}
	err := startErr(t, "-addr", "127.0.0.1:0", "-data", t.TempDir(), "-bucket", "ftp://parley")
	assert.Contains(t, err.Error(), `unknown bucket scheme "ftp"`)
	assert.Contains(t, err.Error(), "file,", "it names the schemes this build opens")
	assert.Contains(t, err.Error(), "s3 (with -tags cloud)")
}

// TestDefaultBuildLinksNoCloudSDK: the default build's dependencies hold
// none of the cloud SDKs (the reason of its fast first build), and those of
// -tags cloud hold each.
func TestDefaultBuildLinksNoCloudSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list; skipped with -short")
	}
	sdks := []string{"github.com/aws/aws-sdk-go-v2/service/s3", "cloud.google.com/go/storage", "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"}
	lean := goListDeps(t)
	full := goListDeps(t, "-tags", "cloud")
	for _, sdk := range sdks {
		assert.NotContains(t, lean, sdk, "the default build links %s", sdk)
		assert.Contains(t, full, sdk, "-tags cloud links %s", sdk)
	}
}

// goListDeps lists the packages this program links, built with args.
func goListDeps(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append(append([]string{"list", "-deps"}, args...), ".")...).Output()
	require.NoError(t, err, "go list -deps %v", args)
	return strings.Fields(string(out))
}
