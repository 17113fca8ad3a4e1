package blobstore_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gocloud.dev/blob/s3blob"

	"github.com/parleychat/parley/internal/testnet"
	"github.com/parleychat/parley/messaging"
	pdriver "github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/blobstore"
)

// s3Env makes the AWS SDK of this test use dummy credentials and no shared
// config files.
func s3Env(tb testing.TB) {
	tb.Helper()
	dir := tb.TempDir()
	tb.Setenv("AWS_ACCESS_KEY_ID", "test")
	tb.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
	tb.Setenv("AWS_SESSION_TOKEN", "")
	tb.Setenv("AWS_PROFILE", "")
	tb.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	tb.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	tb.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// openS3At opens an S3 bucket whose endpoint is the server at endpoint,
// with one attempt per request. (A bucket opened from an s3:// URL makes
// three, with a jittered backoff of up to 1 s and 2 s between them: a few
// seconds per failing operation.)
func openS3At(tb testing.TB, endpoint string) *blobstore.Store {
	tb.Helper()
	client := s3.New(s3.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(endpoint),
		UsePathStyle:     true,
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test-secret", ""),
		RetryMaxAttempts: 1,
	})
	b, err := s3blob.OpenBucket(context.Background(), client, "parley", nil)
	require.NoError(tb, err)
	s := blobstore.New(b)
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// assertUnavailable runs every operation of the Store against s, each
// bounded by timeout, and checks that it fails with an error matching
// messaging.ErrUnavailable whose cause is kept and passes check.
func assertUnavailable(t *testing.T, s *blobstore.Store, timeout time.Duration, check func(t *testing.T, err error)) {
	t.Helper()
	ops := []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"Put", func(ctx context.Context) error {
			return s.Put(ctx, "attachments/a", "text/plain", strings.NewReader("hello"))
		}},
		{"Open", func(ctx context.Context) error {
			r, err := s.Open(ctx, "attachments/a")
			if err == nil {
				r.Close()
			}
			return err
		}},
		{"Delete", func(ctx context.Context) error { return s.Delete(ctx, "attachments/a") }},
		{"List", func(ctx context.Context) error {
			return s.List(ctx, "", func(pdriver.Object) error { return nil })
		}},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			err := op.do(ctx)
			require.Error(t, err)
			assert.ErrorIs(t, err, messaging.ErrUnavailable)
			assert.NotErrorIs(t, err, messaging.ErrNotFound)
			check(t, err)
		})
	}
}

// TestUnreachableBucket: a bucket whose server refuses connections is
// unavailable, not an internal error.
func TestUnreachableBucket(t *testing.T) {
	refused := func(t *testing.T, err error) {
		t.Helper()
		var oe *net.OpError
		assert.ErrorAs(t, err, &oe, "the cause is kept")
		assert.NotErrorIs(t, err, context.DeadlineExceeded, "refused, not timed out")
	}
	endpoint := "http://" + testnet.ClosedAddr(t)
	assertUnavailable(t, openS3At(t, endpoint), 20*time.Second, refused)

	// Opened from a URL, as a program does (with the SDK's retries).
	s3Env(t)
	s := openStore(t, "s3://parley?endpoint="+endpoint+"&use_path_style=true&region=us-east-1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := s.Put(ctx, "attachments/a", "text/plain", strings.NewReader("hello"))
	require.Error(t, err)
	assert.ErrorIs(t, err, messaging.ErrUnavailable)
	refused(t, err)
}

// TestBucketServerUnavailable: a server that answers 503 (S3's SlowDown,
// a proxy whose backend is down) is unavailable too.
func TestBucketServerUnavailable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>ServiceUnavailable</Code><Message>down</Message></Error>`))
	}))
	t.Cleanup(srv.Close)
	s := openS3At(t, srv.URL)
	assertUnavailable(t, s, 20*time.Second, func(*testing.T, error) {})
}

// TestBucketTimeout: a server that does not answer before the context's
// deadline is unavailable; a context the caller canceled is not.
func TestBucketTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	s := openS3At(t, srv.URL)
	assertUnavailable(t, s, 200*time.Millisecond, func(t *testing.T, err error) {
		assert.ErrorIs(t, err, context.DeadlineExceeded, "the cause is kept")
	})

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	err := s.Put(ctx, "attachments/a", "text/plain", strings.NewReader("hello"))
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, messaging.ErrUnavailable, "the caller gave up; the bucket is fine")
}

// timeoutError is a network timeout, as reading a slow client's body gives.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

var _ net.Error = timeoutError{}

// TestPutReaderNetworkError: a network error of the reader (the client's
// upload) is the reader's failure, not an unavailable bucket.
func TestPutReaderNetworkError(t *testing.T) {
	s := openStore(t, "mem://")
	err := s.Put(context.Background(), "attachments/a", "text/plain", &failingReader{data: []byte("partial"), err: timeoutError{}})
	require.Error(t, err)
	var ne net.Error
	assert.True(t, errors.As(err, &ne), "the reader's error is kept: %v", err)
	assert.NotErrorIs(t, err, messaging.ErrUnavailable)
	assert.Empty(t, keys(t, s))
}
