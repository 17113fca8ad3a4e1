package httpadapter_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// readCounter counts the bytes read from r.
type readCounter struct {
	r io.Reader
	n int64
}

func (c *readCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// zeroBytes reads as endless zero bytes.
type zeroBytes struct{}

func (zeroBytes) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// bigUploadEnv is a handler whose uploads may be 32 MiB, over memstore,
// with alice's token "tok-alice", and a message of alice's with as many
// attachments as a message may have (two).
func bigUploadEnv(t *testing.T, files *attachments.Options) (h http.Handler, alice messaging.Contact, fullMsg string) {
	t.Helper()
	ctx := context.Background()
	store := memstore.New()
	fo := attachments.Options{}
	if files != nil {
		fo = *files
	}
	fo.MaxUploadBytes = 32 << 20
	msgs := svctest.New(t, store, memstore.NewBlobStore(), &messaging.Options{MaxAttachments: 2, Files: &fo})
	svc := msgs.Files()
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	m, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "c", Text: "full"})
	require.NoError(t, err)
	for range 2 {
		_, err := svc.Upload(ctx, alice, attachments.Upload{Filename: "a.txt", MessageID: m.ID, Body: strings.NewReader("a")})
		require.NoError(t, err)
	}
	h, err = httpadapter.New(msgs, &httpadapter.Options{Authenticator: httpadapter.StaticTokens(map[string]messaging.Contact{"tok-alice": alice})})
	require.NoError(t, err)
	return h, alice, m.ID
}

// bigUpload sends alice's upload of size zero bytes, after the fields
// given (name, value pairs), to h, and returns the answer and how much of
// the body the handler read.
func bigUpload(t *testing.T, h http.Handler, size int64, fields ...string) (*httptest.ResponseRecorder, int64) {
	t.Helper()
	var head strings.Builder
	for i := 0; i+1 < len(fields); i += 2 {
		head.WriteString("--xyz\r\nContent-Disposition: form-data; name=\"" + fields[i] + "\"\r\n\r\n" + fields[i+1] + "\r\n")
	}
	head.WriteString("--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\nContent-Type: application/x-big\r\n\r\n")
	tail := "\r\n--xyz--\r\n"
	body := &readCounter{r: io.MultiReader(strings.NewReader(head.String()), io.LimitReader(zeroBytes{}, size), strings.NewReader(tail))}
	req := httptest.NewRequest("POST", "/v1/attachments", body)
	req.ContentLength = int64(head.Len()) + size + int64(len(tail))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=xyz")
	req.Header.Set("Authorization", "Bearer tok-alice")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec, body.n
}

// errorOf returns the error object of an answer.
func errorOf(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var v struct{ Error map[string]any }
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &v), "%s", rec.Body.Bytes())
	return v.Error
}

// TestUploadToFullMessageReadsLittle: issue 30 found a 20 MB upload to a
// message with its most attachments read whole, then refused. With
// message_id before the file part it is refused before the file is read:
// the handler reads the fields and what its buffers take ahead (at most
// 128 KiB and 4 KiB), not the file.
func TestUploadToFullMessageReadsLittle(t *testing.T) {
	h, _, msg := bigUploadEnv(t, nil)
	rec, read := bigUpload(t, h, 20<<20, "message_id", msg)
	require.Equal(t, http.StatusBadRequest, rec.Code, "%s", rec.Body.Bytes())
	e := errorOf(t, rec)
	assert.Equal(t, "parameter_invalid", e["code"])
	assert.Equal(t, "message_id", e["param"])
	assert.Less(t, read, int64(256<<10), "bytes of the 20 MiB upload read before its refusal")
	t.Logf("read %d bytes of %d", read, 20<<20)
}

// TestUploadQuotaFullReadsLittle: a caller whose files fill its quota is
// refused (413 upload_quota_exceeded) before its upload's file is read.
func TestUploadQuotaFullReadsLittle(t *testing.T) {
	h, _, _ := bigUploadEnv(t, &attachments.Options{UploadQuota: 2}) // its two files of one byte fill it
	rec, read := bigUpload(t, h, 20<<20)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, "%s", rec.Body.Bytes())
	e := errorOf(t, rec)
	assert.Equal(t, "upload_quota_exceeded", e["code"])
	assert.Equal(t, "file", e["param"])
	assert.Less(t, read, int64(256<<10), "bytes of the 20 MiB upload read before its refusal")
}
