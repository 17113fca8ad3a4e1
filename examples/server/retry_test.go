package main

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/testnet"
)

// keyed is a request with an Idempotency-Key and its answer.
type keyed struct {
	method, path, key, ctype string
	body                     []byte
	status                   int
	location                 string
	answer                   string
}

// send sends the request to base and returns its answer and whether it was
// marked a replay.
func (k *keyed) send(t *testing.T, base string) (status int, location, answer string, replayed bool) {
	t.Helper()
	req, err := http.NewRequest(k.method, base+k.path, bytes.NewReader(k.body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tok-alice")
	req.Header.Set("Content-Type", k.ctype)
	req.Header.Set("Idempotency-Key", k.key)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header.Get("Location"), string(b), res.Header.Get("Idempotent-Replayed") == "true"
}

// TestKillRestartReplaysRetries sends keyed writes (a message, an upload,
// an edit), kills the server with SIGKILL right after they were
// acknowledged, restarts it on the same data, and retries them: every
// retry replays the first answer's status and Location with the resource
// as it is now, and nothing is stored twice.
func TestKillRestartReplaysRetries(t *testing.T) {
	bin := buildServer(t)

	data := t.TempDir()
	addr := testnet.FreeAddr(t)
	base := "http://" + addr
	args := []string{"-addr", addr, "-data", data, "-tokens", "alice=tok-alice,bob=tok-bob"}
	srv := start(t, bin, args...)

	form := func(v url.Values) []byte { return []byte(v.Encode()) }
	var upload bytes.Buffer
	mw := multipart.NewWriter(&upload)
	require.NoError(t, mw.WriteField("conversation_id", "retries"))
	fw, err := mw.CreateFormFile("file", "notes.txt")
	require.NoError(t, err)
	_, _ = fw.Write([]byte("sent once, stored once"))
	require.NoError(t, mw.Close())

	send := &keyed{method: "POST", path: "/v1/messages", key: "send-after-timeout", ctype: "application/x-www-form-urlencoded",
		body: form(url.Values{"conversation_id": {"retries"}, "message": {"hello once"}})}
	file := &keyed{method: "POST", path: "/v1/attachments", key: "upload-after-timeout", ctype: mw.FormDataContentType(), body: upload.Bytes()}
	requests := []*keyed{send, file}
	for _, k := range requests {
		var replayed bool
		k.status, k.location, k.answer, replayed = k.send(t, base)
		require.Equal(t, http.StatusCreated, k.status, "%s %s: %s", k.method, k.path, k.answer)
		require.False(t, replayed)
	}
	msgID := strings.TrimPrefix(send.location, "/v1/messages/")
	edit := &keyed{method: "PUT", path: send.location, key: "edit-after-timeout", ctype: "application/x-www-form-urlencoded",
		body: form(url.Values{"message": {"hello, edited once"}})}
	edit.status, _, edit.answer, _ = edit.send(t, base)
	require.Equal(t, http.StatusOK, edit.status, edit.answer)
	requests = append(requests, edit)
	// A record keeps the id of its answer, and a replay reads it again:
	// the send's replay shows the message as the edit left it.
	send.answer = edit.answer

	require.NoError(t, srv.Process.Signal(syscall.SIGKILL))
	_, _ = srv.Process.Wait()
	start(t, bin, args...)

	for _, k := range requests {
		status, location, answer, replayed := k.send(t, base)
		assert.Equal(t, k.status, status, "%s %s after the restart", k.method, k.path)
		assert.Equal(t, k.location, location, "%s %s: the same Location", k.method, k.path)
		// A replay shows the resource as it is now: its sender's
		// last_active_at may have moved on since (a second later).
		assert.Equal(t, lastActive.ReplaceAllString(k.answer, ""), lastActive.ReplaceAllString(answer, ""), "%s %s: the same body", k.method, k.path)
		assert.True(t, replayed, "%s %s: marked Idempotent-Replayed", k.method, k.path)
	}

	var page struct {
		Data []struct{ ID, Message string }
	}
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/v1/messages?conversation_id=retries", "tok-bob", nil, &page))
	require.Len(t, page.Data, 1, "one message")
	assert.Equal(t, msgID, page.Data[0].ID)
	assert.Equal(t, "hello, edited once", page.Data[0].Message)
	var atts struct{ Data []struct{ ID string } }
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/v1/attachments?conversation_id=retries", "tok-bob", nil, &atts))
	assert.Len(t, atts.Data, 1, "one attachment")
	objects, err := os.ReadDir(filepath.Join(data, "files", "attachments"))
	require.NoError(t, err)
	assert.Len(t, objects, 1, "one file in the bucket")
	var revs struct{ Data []struct{ Message string } }
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/v1/messages/"+msgID+"/revisions", "tok-bob", nil, &revs))
	require.Len(t, revs.Data, 1, "one edit, one revision")
	assert.Equal(t, "hello once", revs.Data[0].Message)
}
