package httpadapter_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gocloud.dev/blob/s3blob"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/internal/testnet"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/blobstore"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

// TestUnreachableBucket: with the bucket's server down, an upload and a
// download answer 503 with Retry-After, not 500.
func TestUnreachableBucket(t *testing.T) {
	client := s3.New(s3.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String("http://" + testnet.ClosedAddr(t)),
		UsePathStyle:     true,
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test-secret", ""),
		RetryMaxAttempts: 1,
	})
	b, err := s3blob.OpenBucket(context.Background(), client, "parley", nil)
	require.NoError(t, err)
	down := blobstore.New(b)
	t.Cleanup(func() { _ = down.Close() })

	store := memstore.New()
	e := newEnv(t, store.Driver(), envConfig{blobs: func(listingBlobs) attachments.BlobStore { return down }})
	assert503 := func(t *testing.T, res *response) {
		t.Helper()
		assertError(t, res, http.StatusServiceUnavailable, wantErr{"api_error", "unavailable", ""})
		assert.Equal(t, "5", res.Header.Get("Retry-After"))
		assert.NotContains(t, string(res.body), "127.0.0.1")
	}

	res := e.as(t, "alice", "POST", "/v1/attachments", multipartBody(field("conversation_id", "c"), file("a.txt", "text/plain", "hello")))
	assert503(t, res)

	// A row whose object is in the unreachable bucket.
	now := time.Now().UTC().Truncate(time.Second)
	att := messaging.Attachment{ID: "att_01jzzzzzzzzzzzzzzzzzzzzzzz", ConversationID: "c", UploaderID: e.users["alice"].ID,
		Filename: "a.txt", FileType: "text/plain", FileSize: 5, Key: "attachments/att_01jzzzzzzzzzzzzzzzzzzzzzzz", CreatedAt: now}
	require.NoError(t, store.Driver().CreateAttachment(e.ctx, att, nil))
	res = e.as(t, "alice", "GET", "/v1/attachments/"+att.ID+"/a.txt", nil)
	assert503(t, res)
}

// levelRecorder is a slog.Handler that keeps the level and message of
// every record.
type levelRecorder struct {
	mu      sync.Mutex
	records []string // "LEVEL message"
}

func (h *levelRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *levelRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Level.String()+" "+r.Message)
	return nil
}

func (h *levelRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *levelRecorder) WithGroup(string) slog.Handler      { return h }

func (h *levelRecorder) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = nil
}

func (h *levelRecorder) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.records...)
}

// TestClientHangUp: a request whose client hangs up while the server works
// on it ends in context.Canceled; that is logged at Debug, not as a failed
// request at Error level. A context.Canceled while the client still waits
// is an unexpected error (500, logged with a request id).
func TestClientHangUp(t *testing.T) {
	logs := &levelRecorder{}
	started := make(chan struct{}, 1)
	var cancelOwn atomic.Bool
	e := newEnv(t, memstore.New().Driver(), envConfig{
		opts: httpadapter.Options{Logger: slog.New(logs)},
		auth: func(httpadapter.Authenticator) httpadapter.Authenticator {
			return httpadapter.AuthenticatorFunc(func(r *http.Request) (messaging.Contact, error) {
				ctx := r.Context()
				if cancelOwn.Load() {
					// Some work of the server canceled on its own.
					return messaging.Contact{}, fmt.Errorf("lookup: %w", context.Canceled)
				}
				started <- struct{}{}
				<-ctx.Done() // the lookup waits until the client is gone
				return messaging.Contact{}, fmt.Errorf("lookup: %w", ctx.Err())
			})
		},
	})

	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", e.url+"/v1/messages", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tok-alice")
	go func() {
		<-started
		cancel()
	}()
	_, err = e.srv.Client().Do(req)
	require.Error(t, err)
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	assert.Eventually(t, func() bool {
		return len(logs.all()) > 0
	}, 5*time.Second, 10*time.Millisecond, "the handler logs when it ends")
	assert.Equal(t, []string{"DEBUG httpadapter: request canceled by the client"}, logs.all())

	cancelOwn.Store(true)
	res := e.as(t, "alice", "GET", "/v1/messages", nil)
	assertError(t, res, http.StatusInternalServerError, wantErr{"api_error", "internal_error", ""})
	assert.NotEmpty(t, res.Header.Get("Request-Id"))
	assert.Equal(t, []string{"DEBUG httpadapter: request canceled by the client", "ERROR httpadapter: request failed"}, logs.all())
}

// TestClientHangUpDuringCommit: a client that hangs up while a PostgreSQL
// transaction commits made the driver report "transaction has already been
// committed or rolled back" (sql.ErrTxDone), logged as a failed request
// (issue 10, defect 6). It is the client's hang-up, logged at Debug.
func TestClientHangUpDuringCommit(t *testing.T) {
	logs := &levelRecorder{}
	started := make(chan struct{}, 1)
	armed := &atomic.Bool{}
	e := newEnv(t, memstore.New().Driver(), envConfig{
		opts: httpadapter.Options{Logger: slog.New(logs)},
		store: func(s storetest.Store) storetest.Store {
			return commitAfterHangUp{Store: s, started: started, armed: armed}
		},
	})
	fx := e.fixture(t)
	logs.reset()
	armed.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "PUT", e.url+"/v1/messages/"+fx.msgB, strings.NewReader("reactions[tada][]=alice"))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tok-alice")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	go func() {
		<-started
		cancel()
	}()
	_, err = e.srv.Client().Do(req)
	require.Error(t, err)
	assert.Eventually(t, func() bool { return len(logs.all()) > 0 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{"DEBUG httpadapter: request canceled by the client"}, logs.all())
}

// commitAfterHangUp is a store whose UpdateMessage waits for the caller to
// go, then fails as database/sql does when the context ends during a
// commit.
type commitAfterHangUp struct {
	storetest.Store
	started chan struct{}
	armed   *atomic.Bool
}

func (s commitAfterHangUp) UpdateMessage(ctx context.Context, id string, ch driver.MessageChange) (messaging.Message, error) {
	if !s.armed.Load() {
		return s.Store.UpdateMessage(ctx, id, ch)
	}
	s.started <- struct{}{}
	<-ctx.Done()
	return messaging.Message{}, fmt.Errorf("sqlstore.UpdateMessage: commit: %w", sql.ErrTxDone)
}
