package httpadapter_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/blobstore"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

// Sizes of the benchmark fixture.
const (
	benchConvSize  = 1000    // messages in the listed conversation
	benchDecorated = 10      // newest messages with a reaction and an attachment: the first page
	benchDeep      = 900     // messages newer than the deep cursor
	benchFileSize  = 1 << 20 // bytes of the uploaded and downloaded file
	benchToken     = "bench-token"
)

// benchEnv is the handler over real services on one backend, with a
// conversation of benchConvSize messages whose newest benchDecorated carry
// a reaction and an attachment each, and a file of benchFileSize bytes.
type benchEnv struct {
	h     http.Handler
	files *attachments.Service
	alice messaging.Contact
	conv  string
	first string // the newest message of conv
	deep  string // a message of conv with benchDeep newer ones
	file  messaging.Attachment
}

// benchBackend is a backend to benchmark the adapter on: a store and the
// blob store that goes with it.
type benchBackend struct {
	name string
	new  func(b *testing.B) (storetest.Store, attachments.BlobStore)
}

// benchBackends are memstore (with the in-memory blob store) and every SQL
// engine of backendtest (SQLite always, PostgreSQL and MySQL when their
// variables are set), each with a file:// bucket in a temporary directory.
func benchBackends(b *testing.B) []benchBackend {
	out := []benchBackend{{"memstore", func(*testing.B) (storetest.Store, attachments.BlobStore) {
		return memstore.New().Driver(), memstore.NewBlobStore()
	}}}
	for _, e := range backendtest.SQL(b) {
		out = append(out, benchBackend{e.Name, func(b *testing.B) (storetest.Store, attachments.BlobStore) {
			return e.Open(b).Driver(), fileBucket(b)
		}})
	}
	return out
}

// fileBucket is a blobstore.Store over a file:// bucket in a temporary
// directory.
func fileBucket(tb testing.TB) *blobstore.Store {
	tb.Helper()
	// As examples/server opens its default bucket: no sidecar metadata.
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(tb.TempDir()), RawQuery: "metadata=skip&no_tmp_dir=true"}
	bs, err := blobstore.Open(context.Background(), u.String())
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = bs.Close() })
	return bs
}

// importer is the bulk load of sqlstore.Store, used when a store has it.
type importer interface {
	ImportMessages(ctx context.Context, msgs []messaging.Message) error
}

func newBenchEnv(b *testing.B, store storetest.Store, blobs attachments.BlobStore) *benchEnv {
	b.Helper()
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	msgs := svctest.New(b, storetest.Storage(store), blobs, &messaging.Options{Logger: quiet, Files: &attachments.Options{MaxUploadBytes: 4 * benchFileSize, Logger: quiet}})
	files := msgs.Files()
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice", PhoneNumber: "+15550100"})
	require.NoError(b, err)
	e := &benchEnv{files: files, alice: alice, conv: "bench-conv"}

	// The conversation, oldest first, one millisecond apart, in the past.
	start := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	all := make([]messaging.Message, benchConvSize)
	for i := range all {
		at := start.Add(time.Duration(i) * time.Millisecond)
		all[i] = messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: e.conv, Contact: alice,
			Text: fmt.Sprintf("message number %d of the benchmark conversation", i), CreatedAt: at}
	}
	if imp, ok := store.(importer); ok {
		require.NoError(b, imp.ImportMessages(ctx, all))
	} else {
		for _, m := range all {
			require.NoError(b, store.CreateMessage(ctx, m, nil, nil))
		}
	}
	e.first = all[benchConvSize-1].ID
	e.deep = all[benchConvSize-1-benchDeep].ID
	for _, m := range all[benchConvSize-benchDecorated:] {
		att, err := files.Upload(ctx, alice, attachments.Upload{Filename: "photo.png", ContentType: "image/png",
			ConversationID: e.conv, Body: strings.NewReader(pngData)})
		require.NoError(b, err)
		_, err = msgs.Update(ctx, alice, m.ID, messaging.Update{
			React:       []string{"thumbs_up"},
			Attachments: []string{att.ID},
		})
		require.NoError(b, err)
	}
	e.file, err = files.Upload(ctx, alice, attachments.Upload{Filename: "data.bin", ContentType: "application/x-bench",
		ConversationID: e.conv, Body: io.LimitReader(rand.Reader, benchFileSize)})
	require.NoError(b, err)

	// The first page is what the list benchmarks claim it is.
	page, err := msgs.Messages(ctx, alice, e.conv, messaging.ListOptions{})
	require.NoError(b, err)
	require.Len(b, page.Data, benchDecorated)
	for _, m := range page.Data {
		require.Len(b, m.Reactions, 1)
		require.Len(b, m.Attachments, 1)
	}

	e.h, err = httpadapter.New(msgs, &httpadapter.Options{
		Authenticator: httpadapter.StaticTokens(map[string]messaging.Contact{benchToken: alice}),
		Logger:        quiet,
	})
	require.NoError(b, err)
	return e
}

// benchWriter is a ResponseWriter that keeps the status and the start of
// the body and counts the rest, so that the benchmarks measure the handler
// rather than a recorder's buffer.
type benchWriter struct {
	h      http.Header
	status int
	n      int64
	head   []byte
}

func (w *benchWriter) Header() http.Header { return w.h }

func (w *benchWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *benchWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if room := 4096 - len(w.head); room > 0 {
		w.head = append(w.head, p[:min(room, len(p))]...)
	}
	w.n += int64(len(p))
	return len(p), nil
}

func (w *benchWriter) reset() {
	clear(w.h)
	w.status, w.n, w.head = 0, 0, w.head[:0]
}

// benchRequest is one request, sent again and again.
type benchRequest struct {
	req  *http.Request
	body []byte // sent anew each time
	want int    // expected status
}

func newBenchRequest(method, target, ctype string, body []byte, want int) *benchRequest {
	req := httptest.NewRequest(method, target, nil)
	req.Header.Set("Authorization", "Bearer "+benchToken)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.ContentLength = int64(len(body))
	return &benchRequest{req: req, body: body, want: want}
}

// serve sends the request once through h into w (reset first); a shallow
// copy per call, as the server makes a new request per call.
func (br *benchRequest) serve(b *testing.B, h http.Handler, w *benchWriter) {
	w.reset()
	r := *br.req
	r.Body = http.NoBody
	if br.body != nil {
		r.Body = io.NopCloser(bytes.NewReader(br.body))
	}
	h.ServeHTTP(w, &r)
	if w.status != br.want {
		b.Fatalf("%s %s: status %d, want %d: %s", br.req.Method, br.req.URL, w.status, br.want, w.head)
	}
}

// run measures the request in a loop.
func (br *benchRequest) run(b *testing.B, h http.Handler) {
	w := &benchWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		br.serve(b, h, w)
	}
}

// uploadBody is a multipart/form-data upload of size bytes into conv.
func uploadBody(tb testing.TB, conv string, size int) (body []byte, ctype string) {
	tb.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	require.NoError(tb, mw.WriteField("conversation_id", conv))
	fw, err := mw.CreateFormFile("file", "upload.bin")
	require.NoError(tb, err)
	_, err = io.CopyN(fw, rand.Reader, int64(size))
	require.NoError(tb, err)
	require.NoError(tb, mw.Close())
	return buf.Bytes(), mw.FormDataContentType()
}

// BenchmarkAdapter measures requests through the whole handler (routing,
// authentication, parsing, the services, the store, JSON), in process and
// without a network, on memstore, SQLite with a file:// bucket, and
// PostgreSQL and MySQL when their variables are set. The list benchmarks
// read a conversation of 1,000 messages whose first page (10 messages)
// carries contacts, reactions and attachments. The operations of the
// target table report the process's CPU per request beside wall time
// (runCPU), steadier on a shared machine.
func BenchmarkAdapter(b *testing.B) {
	for _, be := range benchBackends(b) {
		b.Run(be.name, func(b *testing.B) {
			store, blobs := be.new(b)
			e := newBenchEnv(b, store, blobs)
			msgURL := "/v1/messages/" + e.first
			list := "/v1/messages?conversation_id=" + e.conv
			form := "application/x-www-form-urlencoded"

			b.Run("CreateMessage", func(b *testing.B) {
				runCPU(b, e, newBenchRequest("POST", "/v1/messages", form,
					[]byte("conversation_id=bench-create&message=hello+world"), http.StatusCreated), be.name == "postgres")
			})
			b.Run("GetMessage", func(b *testing.B) {
				runCPU(b, e, newBenchRequest("GET", msgURL, "", nil, http.StatusOK), be.name == "postgres")
			})
			b.Run("ListFirstPage", func(b *testing.B) {
				runCPU(b, e, newBenchRequest("GET", list, "", nil, http.StatusOK), be.name == "postgres")
			})
			b.Run("ListDeepCursor", func(b *testing.B) {
				runCPU(b, e, newBenchRequest("GET", list+"&starting_after="+e.deep, "", nil, http.StatusOK), be.name == "postgres")
			})
			b.Run("ListAllConversations", func(b *testing.B) {
				runCPU(b, e, newBenchRequest("GET", "/v1/messages", "", nil, http.StatusOK), be.name == "postgres")
			})
			b.Run("React", func(b *testing.B) {
				runCPU(b, e, newBenchRequest("PUT", msgURL, form, []byte("reactions[thumbs_up][]=alice"), http.StatusOK), be.name == "postgres")
			})
			b.Run("Upload1MiB", func(b *testing.B) {
				body, ctype := uploadBody(b, e.conv, benchFileSize)
				br := newBenchRequest("POST", "/v1/attachments", ctype, body, http.StatusCreated)
				w := &benchWriter{h: http.Header{}}
				ctx := context.Background()
				b.SetBytes(benchFileSize)
				b.ReportAllocs()
				for b.Loop() {
					br.serve(b, e.h, w)
					// Remove the upload, untimed, so that b.N uploads do not
					// pile up in the store.
					b.StopTimer()
					var got struct{ ID string }
					require.NoError(b, json.Unmarshal(w.head, &got), "%s", w.head)
					require.NoError(b, e.files.Delete(ctx, e.alice, got.ID))
					b.StartTimer()
				}
			})
			b.Run("Download1MiB", func(b *testing.B) {
				br := newBenchRequest("GET", "/v1/attachments/"+e.file.ID+"/"+e.file.Filename, "", nil, http.StatusOK)
				w := &benchWriter{h: http.Header{}}
				b.SetBytes(benchFileSize)
				b.ReportAllocs()
				for b.Loop() {
					br.serve(b, e.h, w)
					if w.n != benchFileSize {
						b.Fatalf("downloaded %d bytes, want %d", w.n, benchFileSize)
					}
				}
			})
		})
	}
}
