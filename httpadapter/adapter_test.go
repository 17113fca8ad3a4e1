package httpadapter_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/blobstore"
	"github.com/parleychat/parley/storage/storetest"
)

// TestAdapter runs the adapter suite over every backend: memstore and
// sqlite always, PostgreSQL and MySQL when PARLEY_TEST_POSTGRES and
// PARLEY_TEST_MYSQL are set.
func TestAdapter(t *testing.T) {
	t.Parallel()
	for _, b := range backendtest.All(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel() // each backend's stores are its own
			runAdapterTests(t, func(t *testing.T) storetest.Store { return b.New(t) })
		})
	}
}

// TestAdapterPgBouncer runs the adapter suite on PostgreSQL through
// PgBouncer in transaction pooling mode (PARLEY_TEST_PGBOUNCER, which
// .ci/run sets), in the pooler-safe mode the sqlstore package gives: the
// concurrent reactions, renames and deletes of its cases among them.
func TestAdapterPgBouncer(t *testing.T) {
	t.Parallel()
	e, ok := backendtest.PgBouncer(t)
	if !ok {
		t.Skipf("%s or %s is not set: PgBouncer not tested (.ci/pgbouncer.sh starts one)", backendtest.EnvPgBouncer, backendtest.EnvPostgres)
	}
	runAdapterTests(t, func(t *testing.T) storetest.Store { return e.Open(t).Driver() })
}

// TestAdapterS3 runs the adapter suite with files in an S3-compatible
// bucket (each test under its own key prefix) and rows in SQLite.
func TestAdapterS3(t *testing.T) {
	t.Parallel()
	bucketURL := os.Getenv("PARLEY_TEST_S3")
	if bucketURL == "" {
		t.Skip("PARLEY_TEST_S3 is not set (an s3:// bucket URL; .ci/run starts MinIO and sets it)")
	}
	sqlite := backendtest.SQL(t)[0]
	runAdapterTests(t, func(t *testing.T) storetest.Store {
		return withBlobs{Store: sqlite.Open(t).Driver(), blobs: s3Blobs(t, bucketURL)}
	})
}

// s3Blobs opens the bucket under a fresh key prefix, emptied at the end.
func s3Blobs(t *testing.T, bucketURL string) *blobstore.Store {
	t.Helper()
	ctx := context.Background()
	b, err := blob.OpenBucket(ctx, bucketURL)
	require.NoError(t, err, "PARLEY_TEST_S3=%s", bucketURL)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	prefix := "adapter-test-" + hex.EncodeToString(rnd[:]) + "/"
	s := blobstore.New(blob.PrefixedBucket(b, prefix)) // takes over b
	t.Cleanup(func() {
		_ = s.List(ctx, "", func(o driver.Object) error { return s.Delete(ctx, o.Key) })
		_ = s.Close()
	})
	return s
}

// runAdapterTests drives every test of the HTTP adapter over stores made by
// newStore (fresh and empty for each call), with an in-memory blob store.
func runAdapterTests(t *testing.T, newStore func(t *testing.T) storetest.Store) {
	t.Run("Table", func(t *testing.T) {
		for _, group := range []struct {
			name  string
			cases []apiCase
			cfg   envConfig
		}{
			{"Auth", authCases, envConfig{}},
			{"CrossOrigin", crossOriginCases, envConfig{cookies: true}},
			{"Routing", routingCases, envConfig{}},
			{"CreateMessage", createMessageCases, envConfig{}},
			{"GetMessage", getMessageCases, envConfig{}},
			{"UpdateMessage", updateMessageCases, envConfig{}},
			{"RemoveReaction", removeReactionCases, envConfig{}},
			{"DeleteMessage", deleteMessageCases, envConfig{}},
			{"Upload", uploadCases, envConfig{}},
			{"GetAttachment", getAttachmentCases, envConfig{}},
			{"RenameAttachment", renameAttachmentCases, envConfig{}},
			{"DeleteAttachment", deleteAttachmentCases, envConfig{}},
			{"ListParams", listParamCases, envConfig{}},
			{"File", fileCases, envConfig{}},
		} {
			t.Run(group.name, func(t *testing.T) {
				// A fresh store every few cases keeps the snapshots that
				// each rejection compares small.
				var e *env
				for i, tc := range group.cases {
					if i%casesPerStore == 0 {
						e = newEnv(t, newStore(t), group.cfg)
					}
					t.Run(tc.name, func(t *testing.T) { tc.run(t, e) })
				}
			})
		}
	})
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, newStore func(t *testing.T) storetest.Store)
	}{
		{"AuthenticatorErrors", testAuthenticatorErrors},
		{"NoAuthenticator", testNoAuthenticator},
		{"Touch", testTouch},
		{"MessagePaging", testMessagePaging},
		{"Search", testSearch},
		{"AttachmentPaging", testAttachmentPaging},
		{"ListVisibility", testListVisibility},
		{"Conversations", testConversations},
		{"Threads", testThreads},
		{"ThreadTombstoneWrites", testTombstoneWrites},
		{"ThreadTombstoneReadThrough", testTombstoneReadThrough},
		{"Mount", testMount},
		{"CookieSessions", testCookieSessions},
		{"BaseURL", testBaseURL},
		{"ForwardedProto", testForwardedProto},
		{"SignedURLs", testSignedURLs},
		{"OldFileURLs", testOldFileURLs},
		{"UploadFlow", testUploadFlow},
		{"InlineTypes", testInlineTypes},
		{"UploadLimits", testUploadLimits},
		{"UploadQuota", testUploadQuota},
		{"BackendFailures", testBackendFailures},
		{"ConcurrentReactions", testConcurrentReactions},
		{"RateLimit", testRateLimit},
		{"RetriedPOST", testRetriedPOST},
		{"RetriedAtOnce", testRetriedAtOnce},
		{"KeyReusedOtherBody", testKeyReusedOtherBody},
		{"RetryWhileRunning", testRetryWhileRunning},
		{"UploadRetried", testUploadRetried},
		{"EditsRetried", testEditsRetried},
		{"RevisionPages", testRevisionPages},
		{"MalformedKeys", testMalformedKeys},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore) })
	}
}

// casesPerStore is how many table cases share a store.
const casesPerStore = 8

// apiCase is one request against a fresh fixture, and what it must answer.
// Placeholders like {msgA} in path and body name the fixture's resources.
// A case that expects a 4xx also checks that nothing stored changed.
type apiCase struct {
	name       string
	as         string // user: alice when empty; "-" sends no Authorization
	auth       string // a raw Authorization header, overriding as
	method     string
	path       string
	body       *reqBody
	hdr        []string // extra header name, value pairs
	wantStatus int
	wantErr    *wantErr
	want       map[string]any // dotted JSON paths; string values take placeholders
	check      func(t *testing.T, e *env, fx *fixture, res *response)
}

func (tc apiCase) run(t *testing.T, e *env) {
	fx := e.fixture(t)
	var body *reqBody
	if tc.body != nil {
		body = &reqBody{ctype: tc.body.ctype, data: fx.vars.Replace(tc.body.data)}
	}
	before := e.snapshot(t)
	hdr := tc.hdr
	tok := ""
	switch {
	case tc.auth != "":
		hdr = append([]string{"Authorization", tc.auth}, hdr...)
	case tc.as == "-":
	case tc.as == "":
		tok = "tok-alice"
	default:
		tok = "tok-" + tc.as
	}
	res := e.do(t, tc.method, fx.vars.Replace(tc.path), tok, body, hdr...)
	require.Equal(t, tc.wantStatus, res.StatusCode, "body: %s", res.body)
	if tc.wantErr != nil {
		assertError(t, res, tc.wantStatus, *tc.wantErr)
	}
	if tc.want != nil {
		var v any
		require.NoError(t, json.Unmarshal(res.body, &v), "body: %s", res.body)
		for path, want := range tc.want {
			got, ok := lookup(v, path)
			if !assert.True(t, ok, "%s missing from %s", path, res.body) {
				continue
			}
			switch w := want.(type) {
			case notNullT:
				assert.NotNil(t, got, "%s in %s", path, res.body)
			case string:
				assert.Equal(t, fx.vars.Replace(w), got, "%s in %s", path, res.body)
			case int:
				assert.Equal(t, float64(w), got, "%s in %s", path, res.body)
			default:
				assert.Equal(t, want, got, "%s in %s", path, res.body)
			}
		}
	}
	if tc.wantStatus >= 400 && tc.wantStatus < 500 {
		e.assertUnchanged(t, before)
	}
	if tc.check != nil {
		tc.check(t, e, fx, res)
	}
}

// TestDownloadRedirectS3: with DownloadRedirectExpiry over an S3 bucket,
// a client that follows file_url with its credentials gets the bytes from
// the bucket, with the file's type and name.
func TestDownloadRedirectS3(t *testing.T) {
	bucketURL := os.Getenv("PARLEY_TEST_S3")
	if bucketURL == "" {
		t.Skip("PARLEY_TEST_S3 is not set (an s3:// bucket URL; .ci/run starts MinIO and sets it)")
	}
	store := withBlobs{Store: backendtest.SQL(t)[0].Open(t).Driver(), blobs: s3Blobs(t, bucketURL)}
	e := newEnv(t, store, envConfig{opts: httpadapter.Options{DownloadRedirectExpiry: time.Minute}})
	id := e.upload(t, "alice", "c", "résumé 1.txt", "text/plain", "bytes from the bucket")
	fileURL := e.as(t, "alice", "GET", "/v1/attachments/"+id, nil).json(t)["file_url"].(string)
	// The API under another host name than the bucket's, as in
	// production: a client drops the credentials on a redirect to another
	// host (the bucket refuses a request with two kinds of authentication).
	fileURL = strings.Replace(fileURL, "127.0.0.1", "localhost", 1)

	var hops []string
	client := *e.srv.Client()
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		hops = append(hops, req.URL.Host)
		return nil
	}
	req, err := http.NewRequest("GET", fileURL, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tok-alice")
	res, err := client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, 200, res.StatusCode, "body: %s", body)
	assert.Equal(t, "bytes from the bucket", string(body))
	assert.Equal(t, "text/plain", res.Header.Get("Content-Type"))
	assert.Contains(t, res.Header.Get("Content-Disposition"), "filename*=UTF-8''r%C3%A9sum%C3%A9%201.txt")
	require.Len(t, hops, 1, "one redirect")
	assert.NotContains(t, hops[0], "localhost", "to the bucket")
}
