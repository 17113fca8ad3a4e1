package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/memstore"
)

// requestLog records the method and path of every request a server
// answers, and holds the requests for thumbnails while held is open.
type requestLog struct {
	mu      sync.Mutex
	seen    []string
	release chan struct{} // closed: thumbnails are served
}

func newRequestLog() *requestLog { return &requestLog{release: make(chan struct{})} }

func (l *requestLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.seen = append(l.seen, r.Method+" "+r.URL.Path)
		l.mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/thumbnail") {
			select {
			case <-l.release:
			case <-r.Context().Done():
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// has reports whether a request of this method and path was answered
// (a path ending in * stands for any path with that prefix).
func (l *requestLog) has(method, path string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.seen {
		if prefix, ok := strings.CutSuffix(method+" "+path, "*"); ok && strings.HasPrefix(s, prefix) || s == method+" "+path {
			return true
		}
	}
	return false
}

// testPNG writes a 640 × 480 PNG of bands of colour into a temporary
// folder and returns its path.
func testPNG(t *testing.T, name string) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 640, 480))
	for y := range 480 {
		for x := range 640 {
			img.Set(x, y, color.RGBA{uint8(x / 3), uint8(y / 2), uint8((x + y) / 5), 255})
		}
	}
	path := filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, png.Encode(f, img))
	require.NoError(t, f.Close())
	return path
}

// TestChatPageDirectUploadAndPreview (issue 33): alice attaches a PNG; the
// page sends it as a direct upload (reserve, the bytes to the upload_url
// the reservation answers, complete), not as a multipart POST
// /v1/attachments; the server has the image, with its size. bob, in
// another tab, sees its preview (the small thumbnail) in a box of the
// image's proportions that is the same size before the thumbnail comes
// (held back by the server) and after, and a click shows the large one.
func TestChatPageDirectUploadAndPreview(t *testing.T) {
	browser := chatBrowser(t)
	photo := testPNG(t, "view.png")
	for _, width := range chatWidths {
		t.Run(width.name, func(t *testing.T) {
			ctx := t.Context()
			log := newRequestLog()
			s := newChatServerWith(t, memstore.NewBlobStore(), &httpadapter.Options{}, chatServerConfig{wrap: log.wrap})
			alice := openTab(t, browser, s.url, "alice-secret", width)
			bob := openTab(t, browser, s.url, "bob-secret", width)
			alice.open("general")
			bob.open("general")

			alice.do("attach the photo", chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{photo}))
			alice.until("the file is shown as attached", `document.getElementById("file-name").textContent === "view.png"`)
			alice.do("write", chromedp.SendKeys(chromedp.CSS("#text"), "the view"))
			alice.press("Enter")
			alice.until("the message shows with its file", item("the view")+`?.querySelector(".download")?.textContent.includes("view.png")`)

			// On the server: the image, with its size, made by a direct upload.
			page, err := s.msgs.Messages(ctx, s.bob, "general", messaging.ListOptions{Limit: 10})
			require.NoError(t, err)
			require.Len(t, page.Data, 1)
			require.Len(t, page.Data[0].Attachments, 1)
			att := page.Data[0].Attachments[0]
			assert.Equal(t, "view.png", att.Filename)
			assert.Equal(t, "image/png", att.FileType)
			assert.Equal(t, [2]int{640, 480}, [2]int{att.ImageWidth, att.ImageHeight})
			assert.True(t, log.has("POST", "/v1/uploads"), "the upload was reserved")
			assert.True(t, log.has("PUT", "/v1/uploads/*"), "its bytes went to the upload_url")
			assert.True(t, log.has("POST", "/v1/uploads/*"), "and it was completed")
			assert.False(t, log.has("POST", "/v1/attachments"), "no multipart upload")

			// bob sees the preview's box before the thumbnail comes, then the
			// thumbnail in the same box.
			img := item("the view") + `?.querySelector(".image-preview img")`
			bob.until("bob sees the preview's box", "!!"+img)
			assert.Equal(t, fmt.Sprintf("/v1/attachments/%s/thumbnail?size=small", att.ID), bob.str(img+`.dataset.src`))
			box := func() string {
				return bob.str(`(() => { const r = ` + img + `.getBoundingClientRect(); return r.width + "x" + r.height; })()`)
			}
			assert.Equal(t, "false", bob.str(`String(`+img+`.complete && `+img+`.naturalWidth > 0)`), "the thumbnail is held back")
			before := box()
			assert.Equal(t, "240x180", before, "the box has the image's proportions before the thumbnail comes")
			close(log.release)
			bob.until("the thumbnail loads", img+`.complete && `+img+`.naturalWidth > 0`)
			assert.Equal(t, "256", bob.str(`String(`+img+`.naturalWidth)`), "the small thumbnail (fit within 256 px)")
			assert.Equal(t, before, box(), "nothing moved as it loaded")
			assert.True(t, log.has("GET", "/v1/attachments/"+att.ID+"/thumbnail"))
			bob.shot("33-image-preview")

			// A click shows the large preview.
			bob.js("show it", img+`.closest("button").click()`)
			bob.until("the large preview shows", `document.getElementById("viewer").open && document.getElementById("viewer-img").complete && document.getElementById("viewer-img").naturalWidth === 640`)
			bob.shot("33-image-large")
			bob.do("close it", chromedp.Click(chromedp.CSS("#viewer-close")))
			bob.until("it closes", `!document.getElementById("viewer").open`)
		})
	}
}

// uploadSigningBlobs is an in-memory bucket that signs upload URLs of the
// bucket server at base, on another origin than the page's, as S3 does:
// the URL carries its authorization, and the headers the client must send
// name the type, the disposition and the SHA-256 the bucket checks.
type uploadSigningBlobs struct {
	*memstore.BlobStore
	base string

	mu      sync.Mutex
	headers map[string]http.Header // the headers each object was sent with
}

func (b *uploadSigningBlobs) SignUpload(_ context.Context, key string, req driver.UploadRequest) (driver.SignedUpload, error) {
	return driver.SignedUpload{URL: b.base + "/" + key + "?signature=abc", Method: http.MethodPut, Headers: map[string]string{
		"Content-Type":          req.ContentType,
		"Content-Disposition":   attachments.ContentDisposition(req.ContentType, ""),
		"X-Amz-Checksum-Sha256": base64.StdEncoding.EncodeToString(req.SHA256),
	}}, nil
}

// stored keeps the object of a PUT, with its headers.
func (b *uploadSigningBlobs) stored(ctx context.Context, key string, h http.Header, body []byte) error {
	if err := b.Put(ctx, key, h.Get("Content-Type"), bytes.NewReader(body)); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.headers == nil {
		b.headers = map[string]http.Header{}
	}
	b.headers[key] = h.Clone()
	return nil
}

func (b *uploadSigningBlobs) Attributes(ctx context.Context, key string) (driver.ObjectAttributes, error) {
	r, err := b.Open(ctx, key)
	if err != nil {
		return driver.ObjectAttributes{}, err
	}
	defer r.Close()
	size, err := r.Seek(0, io.SeekEnd)
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.headers[key]
	return driver.ObjectAttributes{Size: size, ContentType: h.Get("Content-Type"), ContentDisposition: h.Get("Content-Disposition")}, err
}

func (b *uploadSigningBlobs) ReadHead(ctx context.Context, key string, n int) ([]byte, error) {
	r, err := b.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(io.LimitReader(r, int64(n)))
}

// TestChatPageUploadToSignedURL (issue 33): where the bucket signs upload
// URLs, the page sends a file's bytes to the bucket itself, on another
// origin (which its Content Security Policy names), with the headers the
// reservation gives and without the caller's token; the API server sees
// the reservation and the completion only, and the image's preview shows.
func TestChatPageUploadToSignedURL(t *testing.T) {
	browser := chatBrowser(t)
	photo := testPNG(t, "view.png")
	width := chatWidths[0]
	blobs := &uploadSigningBlobs{BlobStore: memstore.NewBlobStore()}
	var puts atomic.Int32
	bucket := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodOptions { // the browser's preflight
			h.Set("Access-Control-Allow-Methods", "PUT")
			h.Set("Access-Control-Allow-Headers", "content-type, content-disposition, x-amz-checksum-sha256")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if r.Method != http.MethodPut || r.URL.Query().Get("signature") != "abc" || r.Header.Get("Authorization") != "" {
			http.Error(w, "a signed PUT, with one kind of authentication only", http.StatusForbidden)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		sum := sha256.Sum256(body)
		if r.Header.Get("X-Amz-Checksum-Sha256") != base64.StdEncoding.EncodeToString(sum[:]) {
			http.Error(w, "the checksum does not match", http.StatusBadRequest)
			return
		}
		if err := blobs.stored(r.Context(), strings.TrimPrefix(r.URL.Path, "/"), r.Header, body); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		puts.Add(1)
	}))
	t.Cleanup(bucket.Close)
	blobs.base = bucket.URL

	log := newRequestLog()
	close(log.release)
	s := newChatServerWith(t, blobs, &httpadapter.Options{}, chatServerConfig{wrap: log.wrap, uploadOrigins: []string{bucket.URL}})
	alice := openTab(t, browser, s.url, "alice-secret", width)
	alice.open("general")
	alice.do("attach the photo", chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{photo}))
	alice.until("the file is shown as attached", `document.getElementById("file-name").textContent === "view.png"`)
	alice.do("send it alone", chromedp.Click(chromedp.CSS("#send")))
	last := `document.querySelector("#list > li:last-child")`
	alice.until("the file shows", last+`?.querySelector(".download")?.textContent.includes("view.png")`)

	assert.EqualValues(t, 1, puts.Load(), "the bytes went to the bucket")
	assert.True(t, log.has("POST", "/v1/uploads"), "the upload was reserved")
	assert.True(t, log.has("POST", "/v1/uploads/*"), "and completed")
	assert.False(t, log.has("PUT", "/v1/uploads/*"), "no byte went through the API server")
	assert.False(t, log.has("POST", "/v1/attachments"), "no multipart upload")
	page, err := s.msgs.Messages(t.Context(), s.alice, "general", messaging.ListOptions{Limit: 10})
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	require.Len(t, page.Data[0].Attachments, 1)
	att := page.Data[0].Attachments[0]
	assert.Equal(t, [2]int{640, 480}, [2]int{att.ImageWidth, att.ImageHeight})

	img := last + `?.querySelector(".image-preview img")`
	alice.until("the preview loads", img+`?.complete && `+img+`.naturalWidth > 0`)
	assert.Empty(t, alice.str(`document.getElementById("error").textContent`))
}

// TestChatPageUploadFallsBackToMultipart: on a server without direct
// uploads (POST /v1/uploads answers 404, as before them), the page sends
// the file as one multipart POST /v1/attachments, and asks no more to
// reserve.
func TestChatPageUploadFallsBackToMultipart(t *testing.T) {
	browser := chatBrowser(t)
	log := newRequestLog()
	close(log.release)
	older := func(h http.Handler) http.Handler {
		return log.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/v1/uploads") {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, `{"error": {"type": "invalid_request_error", "code": "resource_missing", "message": "no such route"}}`)
				return
			}
			h.ServeHTTP(w, r)
		}))
	}
	s := newChatServerWith(t, memstore.NewBlobStore(), &httpadapter.Options{}, chatServerConfig{wrap: older})
	alice := openTab(t, browser, s.url, "alice-secret", chatWidths[0])
	alice.open("general")
	file := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(file, []byte("the minutes\n"), 0o644))
	for _, text := range []string{"first file", "second file"} {
		alice.do("attach a file", chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{file}))
		alice.until("the file is shown as attached", `document.getElementById("file-name").textContent === "notes.txt"`)
		alice.do("write", chromedp.SendKeys(chromedp.CSS("#text"), text))
		alice.press("Enter")
		alice.until("the message shows with its file", item(text)+`?.querySelector(".download")?.textContent.includes("notes.txt")`)
		alice.until("the composer is empty again", `document.getElementById("text").value === ""`)
	}
	assert.Empty(t, alice.str(`document.getElementById("error").textContent`))
	assert.True(t, log.has("POST", "/v1/attachments"), "sent as multipart")
	log.mu.Lock()
	reserves := 0
	for _, s := range log.seen {
		if s == "POST /v1/uploads" {
			reserves++
		}
	}
	log.mu.Unlock()
	assert.Equal(t, 1, reserves, "the page asked once, and remembered the answer")
	atts, err := s.files.Attachments(t.Context(), s.alice, "general", messaging.ListOptions{Limit: 10})
	require.NoError(t, err)
	assert.Len(t, atts.Data, 2)
}
