//go:build cloud

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/testnet"
)

// TestCloudBuckets runs the server built with -tags cloud on each cloud
// bucket whose emulator .ci/run starts (MinIO for S3, fake-gcs-server for
// GCS, Azurite for Azure; each skipped when its variable is unset), under
// a key prefix of its own, and sends a file through it.
func TestCloudBuckets(t *testing.T) {
	for _, name := range []string{"PARLEY_TEST_S3", "PARLEY_TEST_GCS", "PARLEY_TEST_AZURE"} {
		t.Run(name, func(t *testing.T) {
			bucket := os.Getenv(name)
			if bucket == "" {
				t.Skip(name + " is not set (.ci/run starts its emulator and sets it)")
			}
			var rnd [6]byte
			_, _ = rand.Read(rnd[:])
			sep := "?"
			if strings.Contains(bucket, "?") {
				sep = "&"
			}
			bucket += sep + "prefix=" + url.QueryEscape("server-test-"+hex.EncodeToString(rnd[:])+"/")

			addr := testnet.FreeAddr(t)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, []string{"-addr", addr, "-data", t.TempDir(), "-bucket", bucket}, io.Discard, io.Discard)
			}()
			t.Cleanup(func() {
				cancel()
				require.NoError(t, <-done)
			})
			waitListening(t, addr)
			base := "http://" + addr
			att := upload(t, base, "alice-secret", "notes.txt", "kept in the cloud")
			var a struct {
				FileURL string `json:"file_url"`
			}
			require.Equal(t, http.StatusOK, call(t, "GET", base+"/v1/attachments/"+att, "alice-secret", nil, &a))
			req, err := http.NewRequest("GET", a.FileURL, nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer alice-secret")
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			assert.Equal(t, http.StatusOK, res.StatusCode)
			assert.Equal(t, "kept in the cloud", string(body))
		})
	}
}

// TestCloudSchemesOpen: with the tag, the cloud schemes pass the check
// that the default build fails.
func TestCloudSchemesOpen(t *testing.T) {
	for _, bucket := range []string{"s3://parley?region=eu-west-1", "gs://parley", "azblob://parley"} {
		assert.NoError(t, checkBucket("-bucket", bucket))
	}
}
