package httpadapter_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

// The fault matrix (issue 10): every write and read of the API is sent
// once for each call it makes to the repository or the bucket, with that
// call failing in each way a backend fails. The answer must be the
// request's own or the README's error (500 with a request id, 503 with
// Retry-After, within the request's deadline), the cause must be logged
// once with that request id, and store and bucket must stay consistent:
// no row without its object at any time, and no object without its row
// once Reconcile has run.

type faultMode int

const (
	failBefore  faultMode = iota + 1 // an error, nothing done
	unavailable                      // the backend cannot be reached
	hang                             // no answer until the context ends
	failAfter                        // done, then an error (a commit whose answer is lost)
)

func (m faultMode) String() string {
	return [...]string{"", "fail", "unavailable", "hang", "fail-after-done"}[m]
}

var errFault = errors.New("injected fault")

// fault counts the calls of both seams and fails the at-th one.
type fault struct {
	mode  faultMode
	at    int64
	armed atomic.Bool
	calls atomic.Int64
	mu    sync.Mutex
	names []string // the calls while armed, for messages
	hit   string
}

func (f *fault) arm(mode faultMode, at int64) {
	f.mode, f.at = mode, at
	f.calls.Store(0)
	f.mu.Lock()
	f.names, f.hit = nil, ""
	f.mu.Unlock()
	f.armed.Store(true)
}

// do runs call, or fails it as armed.
func (f *fault) do(ctx context.Context, name string, call func() error) error {
	if !f.armed.Load() {
		return call()
	}
	n := f.calls.Add(1)
	f.mu.Lock()
	f.names = append(f.names, name)
	if n == f.at {
		f.hit = name
	}
	f.mu.Unlock()
	if n != f.at {
		return call()
	}
	switch f.mode {
	case failBefore:
		return fmt.Errorf("%s: %w", name, errFault)
	case unavailable:
		return fmt.Errorf("%s: %w: %w", name, messaging.ErrUnavailable, errFault)
	case hang:
		<-ctx.Done()
		// As a backend reports a call cut by its deadline.
		return fmt.Errorf("%s: %w: %w", name, messaging.ErrUnavailable, ctx.Err())
	default:
		if err := call(); err != nil {
			return err
		}
		return fmt.Errorf("%s (done): %w", name, errFault)
	}
}

// faultStore is a store whose every call goes through a fault.
type faultStore struct {
	storetest.Store
	f *fault
}

func (s faultStore) PutContact(ctx context.Context, c messaging.Contact) error {
	return s.f.do(ctx, "PutContact", func() error { return s.Store.PutContact(ctx, c) })
}
func (s faultStore) GetContact(ctx context.Context, id string) (c messaging.Contact, err error) {
	err = s.f.do(ctx, "GetContact", func() (err error) { c, err = s.Store.GetContact(ctx, id); return })
	return
}
func (s faultStore) ContactByUsername(ctx context.Context, u string) (c messaging.Contact, err error) {
	err = s.f.do(ctx, "ContactByUsername", func() (err error) { c, err = s.Store.ContactByUsername(ctx, u); return })
	return
}
func (s faultStore) TouchContact(ctx context.Context, id string, at time.Time) error {
	return s.f.do(ctx, "TouchContact", func() error { return s.Store.TouchContact(ctx, id, at) })
}
func (s faultStore) CreateMessage(ctx context.Context, m messaging.Message, atts []string, rec driver.Recorder) error {
	return s.f.do(ctx, "CreateMessage", func() error { return s.Store.CreateMessage(ctx, m, atts, rec) })
}
func (s faultStore) GetMessage(ctx context.Context, id string) (m messaging.Message, err error) {
	err = s.f.do(ctx, "GetMessage", func() (err error) { m, err = s.Store.GetMessage(ctx, id); return })
	return
}
func (s faultStore) ListMessages(ctx context.Context, q driver.MessageQuery) (ms []messaging.Message, more bool, err error) {
	err = s.f.do(ctx, "ListMessages", func() (err error) { ms, more, err = s.Store.ListMessages(ctx, q); return })
	return
}
func (s faultStore) UpdateMessage(ctx context.Context, id string, ch driver.MessageChange) (m messaging.Message, err error) {
	err = s.f.do(ctx, "UpdateMessage", func() (err error) { m, err = s.Store.UpdateMessage(ctx, id, ch); return })
	return
}
func (s faultStore) DeleteMessage(ctx context.Context, id string, rec driver.Recorder) (as []messaging.Attachment, err error) {
	err = s.f.do(ctx, "DeleteMessage", func() (err error) { as, err = s.Store.DeleteMessage(ctx, id, rec); return })
	return
}
func (s faultStore) GetAttachment(ctx context.Context, id string) (a messaging.Attachment, err error) {
	err = s.f.do(ctx, "GetAttachment", func() (err error) { a, err = s.Store.GetAttachment(ctx, id); return })
	return
}
func (s faultStore) GetConversation(ctx context.Context, id, viewer string) (c messaging.Conversation, err error) {
	err = s.f.do(ctx, "GetConversation", func() (err error) { c, err = s.Store.GetConversation(ctx, id, viewer); return })
	return
}
func (s faultStore) ListConversations(ctx context.Context, q driver.ConversationQuery) (cs []messaging.Conversation, more bool, err error) {
	err = s.f.do(ctx, "ListConversations", func() (err error) { cs, more, err = s.Store.ListConversations(ctx, q); return })
	return
}
func (s faultStore) MarkRead(ctx context.Context, conv, contact, msg string, rec driver.Recorder) error {
	return s.f.do(ctx, "MarkRead", func() error { return s.Store.MarkRead(ctx, conv, contact, msg, rec) })
}
func (s faultStore) AddMember(ctx context.Context, conv, contact string, at time.Time) error {
	return s.f.do(ctx, "AddMember", func() error { return s.Store.AddMember(ctx, conv, contact, at) })
}
func (s faultStore) RemoveMember(ctx context.Context, conv, contact string) error {
	return s.f.do(ctx, "RemoveMember", func() error { return s.Store.RemoveMember(ctx, conv, contact) })
}
func (s faultStore) IsMember(ctx context.Context, conv, contact string) (ok bool, err error) {
	err = s.f.do(ctx, "IsMember", func() (err error) { ok, err = s.Store.IsMember(ctx, conv, contact); return })
	return
}
func (s faultStore) ListMembers(ctx context.Context, q driver.MemberQuery) (ms []messaging.Member, more bool, err error) {
	err = s.f.do(ctx, "ListMembers", func() (err error) { ms, more, err = s.Store.ListMembers(ctx, q); return })
	return
}
func (s faultStore) CreateAttachment(ctx context.Context, a messaging.Attachment, rec driver.Recorder) error {
	return s.f.do(ctx, "CreateAttachment", func() error { return s.Store.CreateAttachment(ctx, a, rec) })
}
func (s faultStore) ListAttachments(ctx context.Context, q driver.AttachmentQuery) (as []messaging.Attachment, more bool, err error) {
	err = s.f.do(ctx, "ListAttachments", func() (err error) { as, more, err = s.Store.ListAttachments(ctx, q); return })
	return
}
func (s faultStore) RenameAttachment(ctx context.Context, id, name string, rec driver.Recorder) (a messaging.Attachment, err error) {
	err = s.f.do(ctx, "RenameAttachment", func() (err error) { a, err = s.Store.RenameAttachment(ctx, id, name, rec); return })
	return
}
func (s faultStore) DeleteAttachment(ctx context.Context, id string, rec driver.Recorder) (a messaging.Attachment, err error) {
	err = s.f.do(ctx, "DeleteAttachment", func() (err error) { a, err = s.Store.DeleteAttachment(ctx, id, rec); return })
	return
}
func (s faultStore) PendingDeletions(ctx context.Context, limit int) (ks []string, err error) {
	err = s.f.do(ctx, "PendingDeletions", func() (err error) { ks, err = s.Store.PendingDeletions(ctx, limit); return })
	return
}
func (s faultStore) ForgetDeletion(ctx context.Context, key string) error {
	return s.f.do(ctx, "ForgetDeletion", func() error { return s.Store.ForgetDeletion(ctx, key) })
}
func (s faultStore) KeysInUse(ctx context.Context, keys []string) (m map[string]bool, err error) {
	err = s.f.do(ctx, "KeysInUse", func() (err error) { m, err = s.Store.KeysInUse(ctx, keys); return })
	return
}

// The optional interfaces pass through, unfaulted.
func (s faultStore) InstallationID(ctx context.Context) (string, error) {
	return s.Store.(driver.Installation).InstallationID(ctx)
}
func (s faultStore) Epoch(ctx context.Context) (int64, error) {
	return s.Store.(driver.Installation).Epoch(ctx)
}
func (s faultStore) AdvanceEpoch(ctx context.Context) (int64, error) {
	return s.Store.(driver.Installation).AdvanceEpoch(ctx)
}
func (s faultStore) AttachmentKeys(ctx context.Context, after string, limit int) ([]string, error) {
	return s.Store.(driver.KeyLister).AttachmentKeys(ctx, after, limit)
}

// faultBucket is a blob store whose every call goes through a fault.
type faultBucket struct {
	listingBlobs
	f *fault
}

func (b faultBucket) Put(ctx context.Context, key, ct string, r io.Reader) error {
	return b.f.do(ctx, "Put", func() error { return b.listingBlobs.Put(ctx, key, ct, r) })
}
func (b faultBucket) Open(ctx context.Context, key string) (rc io.ReadSeekCloser, err error) {
	err = b.f.do(ctx, "Open", func() (err error) { rc, err = b.listingBlobs.Open(ctx, key); return })
	if err != nil && rc != nil {
		rc.Close()
		rc = nil
	}
	return
}
func (b faultBucket) Delete(ctx context.Context, key string) error {
	return b.f.do(ctx, "Delete", func() error { return b.listingBlobs.Delete(ctx, key) })
}
func (b faultBucket) List(ctx context.Context, prefix string, fn func(driver.Object) error) error {
	return b.f.do(ctx, "List", func() error { return b.listingBlobs.List(ctx, prefix, fn) })
}

// faultClock is the attachments Service's Now, which the test moves past
// the orphans' grace period before it reconciles.
type faultClock struct{ offset atomic.Int64 }

func (c *faultClock) now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// requestDeadline is the deadline the host gives each request.
const requestDeadline = 300 * time.Millisecond

func TestFaultMatrix(t *testing.T) {
	requests := []struct {
		name, method, path string
		body               func() *reqBody
		status             int // healthy
	}{
		{"create a message with a file", "POST", "/v1/messages", bodyFn(form("conversation_id={conv}&message=hi&attachments[]={attA}")), 201},
		{"react", "PUT", "/v1/messages/{msgB}", bodyFn(form("reactions[tada][]=alice")), 200},
		{"link a file", "PUT", "/v1/messages/{msgA}", bodyFn(form("attachments[]={attA}")), 200},
		{"mark read", "PUT", "/v1/conversations/{conv}", bodyFn(form("read_through={msgB}")), 200},
		{"delete a message with a file", "DELETE", "/v1/messages/{msgA}", nil, 200},
		{"upload", "POST", "/v1/attachments", func() *reqBody {
			return multipartBody(field("conversation_id", "{conv}"), file("up.txt", "text/plain", "uploaded"))
		}, 201},
		{"upload into a message", "POST", "/v1/attachments", func() *reqBody {
			return multipartBody(field("message_id", "{msgA}"), file("up.txt", "text/plain", "uploaded"))
		}, 201},
		{"rename a file", "PUT", "/v1/attachments/{attA}", bodyFn(form("filename=renamed.txt")), 200},
		{"delete a file", "DELETE", "/v1/attachments/{attA}", nil, 200},
		{"get a message", "GET", "/v1/messages/{msgA}", nil, 200},
		{"list messages", "GET", "/v1/messages?conversation_id={conv}", nil, 200},
		{"download a file", "GET", "/v1/attachments/{attA}/a.txt", nil, 200},
		{"remove a reaction", "DELETE", "/v1/messages/{msgB}/reactions/thumbs_up", nil, 200},
		{"get a file", "GET", "/v1/attachments/{attA}", nil, 200},
		{"list files", "GET", "/v1/attachments?conversation_id={conv}", nil, 200},
		{"get a conversation", "GET", "/v1/conversations/{conv}", nil, 200},
		{"list conversations", "GET", "/v1/conversations", nil, 200},
	}
	modes := []faultMode{failBefore, unavailable, hang, failAfter}
	backends := []backendtest.Backend{backendtest.All(t)[0]} // memstore
	if sql := backendtest.SQL(t); !testing.Short() {
		backends = append(backends, backendtest.Backend{Name: "sqlite", New: func(tb testing.TB) storetest.Store { return sql[0].Open(tb).Driver() }})
	}
	injected, scenarios := 0, 0
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			for _, rq := range requests {
				// A fresh store for each request: each scenario compares
				// every row and object, which would otherwise pile up.
				f := &fault{}
				clk := &faultClock{}
				var logs syncLog
				bucket := memstore.NewBlobStore()
				e := newEnv(t, withBlobs{Store: b.New(t), blobs: bucket}, envConfig{
					store: func(s storetest.Store) storetest.Store { return faultStore{Store: s, f: f} },
					blobs: func(l listingBlobs) attachments.BlobStore { return faultBucket{listingBlobs: l, f: f} },
					files: attachments.Options{Now: clk.now, FinishTimeout: requestDeadline, Logger: slog.New(slog.NewTextHandler(&logs, nil))},
					opts:  httpadapterOptions(&logs),
					wrap: func(h http.Handler) http.Handler {
						return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
							// The short deadline ends a hung call; other requests get
							// a long one, which a loaded machine does not reach.
							d := 10 * requestDeadline
							if f.armed.Load() && f.mode == hang {
								d = requestDeadline
							}
							ctx, cancel := context.WithTimeout(r.Context(), d)
							defer cancel()
							h.ServeHTTP(w, r.WithContext(ctx))
						})
					},
				})
				// How many calls the request makes when nothing fails.
				fx := e.fixture(t)
				f.arm(0, -1)
				res := e.do(t, rq.method, fx.vars.Replace(rq.path), "tok-alice", fillBody(rq.body, fx))
				f.armed.Store(false)
				require.Equal(t, rq.status, res.StatusCode, "%s healthy: %s", rq.name, res.body)
				calls := f.calls.Load()
				for at := int64(1); at <= calls; at++ {
					for _, mode := range modes {
						t.Run(fmt.Sprintf("%s/call%d/%s", rq.name, at, mode), func(t *testing.T) {
							scenarios++
							fx := e.fixture(t)
							logs.reset()
							f.arm(mode, at)
							start := time.Now()
							res := e.do(t, rq.method, fx.vars.Replace(rq.path), "tok-alice", fillBody(rq.body, fx))
							took := time.Since(start)
							f.armed.Store(false)
							f.mu.Lock()
							hit, names := f.hit, slices.Clone(f.names)
							f.mu.Unlock()
							if hit == "" {
								t.Skipf("the request made fewer calls this time: %v", names)
							}
							injected++
							t.Logf("fault %s at call %d (%s) of %v: %d", mode, at, hit, names, res.StatusCode)

							switch res.StatusCode {
							case rq.status: // the call did not matter (logged), or the Service recovered
							case 500:
								assertError(t, res, 500, wantErr{"api_error", "internal_error", ""})
							case 503:
								assertError(t, res, 503, wantErr{"api_error", "unavailable", ""})
								assert.Equal(t, "5", res.Header.Get("Retry-After"))
							case 404:
								// The failed call was the one that looked the item up;
								// a backend that says "not found" for a failure is not
								// what this injects.
								t.Fatalf("404 for a failure: %s", res.body)
							default:
								t.Fatalf("status %d: %s", res.StatusCode, res.body)
							}
							assert.Less(t, took, requestDeadline+2*time.Second, "answered within the request's deadline")
							if res.StatusCode >= 500 {
								id := res.Header.Get("Request-Id")
								require.NotEmpty(t, id)
								assert.Equal(t, 1, strings.Count(logs.String(), id), "the cause is logged once with the request id:\n%s", logs.String())
								assert.Contains(t, logs.String(), hit, "the log names the failed call")
							}
							assertConsistent(t, e, bucket, clk)
						})
					}
				}
			}
		})
	}
	t.Logf("fault matrix: %d requests, %d scenarios, %d faults injected", len(requests), scenarios, injected)
}

func bodyFn(b *reqBody) func() *reqBody { return func() *reqBody { return b } }

func fillBody(body func() *reqBody, fx *fixture) *reqBody {
	if body == nil {
		return nil
	}
	b := body()
	return &reqBody{b.ctype, fx.vars.Replace(b.data)}
}

// assertConsistent checks that every row has its object, then reconciles
// (past the grace period) and checks that the bucket holds exactly the
// rows' objects and nothing is pending.
func assertConsistent(t *testing.T, e *env, bucket *memstore.BlobStore, clk *faultClock) {
	t.Helper()
	rows := func() []string {
		var keys []string
		for _, c := range e.users {
			atts, _, err := e.store.ListAttachments(e.ctx, driver.AttachmentQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 10000}, UploaderID: c.ID})
			require.NoError(t, err)
			for _, a := range atts {
				keys = append(keys, a.Key)
			}
		}
		slices.Sort(keys)
		return slices.Compact(keys)
	}
	objects := func() []string {
		var keys []string
		require.NoError(t, bucket.List(e.ctx, attachments.KeyPrefix, func(o driver.Object) error {
			keys = append(keys, o.Key)
			return nil
		}))
		return keys
	}
	objs := objects()
	for _, k := range rows() {
		assert.Contains(t, objs, k, "a row without its object")
	}
	clk.offset.Add(int64(2 * time.Hour))
	rep, err := e.files.Reconcile(e.ctx)
	require.NoError(t, err)
	assert.Zero(t, rep.Missing+rep.Failed+rep.Unowned, "%+v", rep)
	assert.Equal(t, rows(), objects(), "objects and rows after Reconcile")
	pending, err := e.store.PendingDeletions(e.ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, pending)
}

// syncLog is a log buffer for concurrent writers.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *syncLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Reset()
}

func httpadapterOptions(w io.Writer) httpadapter.Options {
	return httpadapter.Options{Logger: slog.New(slog.NewTextHandler(w, nil))}
}
