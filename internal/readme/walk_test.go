package readme

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/testnet"
)

// readme returns the README's text and the repository's root.
func readme(t *testing.T) (text, root string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	return string(b), root
}

// shBlocks returns the sh blocks of the README's section of this title.
func shBlocks(t *testing.T, text, title string) []string {
	t.Helper()
	_, sec, ok := strings.Cut(text, "\n## "+title+"\n")
	require.True(t, ok, "README has a section %q", title)
	sec, _, _ = strings.Cut(sec, "\n## ")
	var blocks []string
	for {
		var ok bool
		_, sec, ok = strings.Cut(sec, "```sh\n")
		if !ok {
			return blocks
		}
		var code string
		code, sec, ok = strings.Cut(sec, "```")
		require.True(t, ok)
		blocks = append(blocks, code)
	}
}

// need skips the test when a command the README asks the reader for is
// not installed.
func need(t *testing.T, cmds ...string) {
	t.Helper()
	for _, c := range cmds {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s is not installed: the README's walk needs it", c)
		}
	}
}

// bash runs script with bash in dir and returns its output (stdout and
// stderr), failing the test if bash fails.
func bash(t *testing.T, ctx context.Context, dir, script string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the script failed:\n%s\noutput:\n%s", script, out)
	return string(out)
}

// TestWalk pastes the README's walk into bash against the example server
// (built from this repository and started on a free port with a fresh
// -data), with bob's event stream, the walk's first block, running in the
// background; every step must answer without an error object, the
// downloads must give the file, and the stream must show the walk's
// changes.
func TestWalk(t *testing.T) {
	need(t, "bash", "curl", "jq")
	text, root := readme(t)
	blocks := shBlocks(t, text, "A walk through the API")
	require.Len(t, blocks, 2, "the events stream, then the walk")
	events, walk := strings.TrimSpace(blocks[0]), blocks[1]
	require.NotContains(t, walk, "curl -N", "the walk never blocks on a stream")

	dir := t.TempDir()
	bin := filepath.Join(dir, "server")
	build := exec.Command("go", "build", "-o", bin, "./examples/server")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build ./examples/server:\n%s", out)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	addr := testnet.FreeAddr(t)
	srv := exec.CommandContext(ctx, bin, "-addr", addr, "-data", filepath.Join(dir, "data"))
	logs, err := os.Create(filepath.Join(dir, "server.log"))
	require.NoError(t, err)
	defer logs.Close()
	srv.Stdout, srv.Stderr = logs, logs
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	logged := func() string { b, _ := os.ReadFile(logs.Name()); return string(b) }
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		res, err := http.Get("http://" + addr + "/v1/openapi.json")
		if err == nil {
			res.Body.Close()
			break
		}
		require.True(t, time.Now().Before(deadline), "the server never answered:\n%s", logged())
	}

	local := func(s string) string { return strings.ReplaceAll(s, "127.0.0.1:8080", addr) }
	require.Contains(t, walk, "API=http://127.0.0.1:8080/v1")
	work := filepath.Join(dir, "shell")
	require.NoError(t, os.Mkdir(work, 0o755))

	// Bob's stream, as pasted into the second shell.
	stream := exec.CommandContext(ctx, "bash", "-c", local(events))
	pr, pw := io.Pipe()
	stream.Stdout = pw
	require.NoError(t, stream.Start())
	t.Cleanup(func() { _ = stream.Process.Kill(); _ = stream.Wait() })
	types := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if typ, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				types <- typ
			}
		}
	}()
	// The stream starts live: before the walk, send messages elsewhere
	// until one shows up on it.
	for live := false; !live; {
		req, err := http.NewRequest("POST", "http://"+addr+"/v1/messages", strings.NewReader("conversation_id=warm-up&message=hi"))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer alice-secret")
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusCreated, res.StatusCode)
		select {
		case typ := <-types:
			live = typ == "message.created"
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("bob's stream never opened")
		}
	}
	for len(types) > 0 { // the warm-up's other events
		<-types
	}

	got := bash(t, ctx, work, local(walk))
	assert.NotContains(t, got, `"error"`, "a step of the walk failed:\n%s", got)
	assert.Equal(t, 2, strings.Count(got, "meeting notes"), "the download and the download through the old file_url:\n%s", got)
	assert.Contains(t, got, `"message":"Hello, Bob!"`)
	assert.Contains(t, got, `"deleted":true`)

	want := map[string]bool{"message.created": false, "message.updated": false, "attachment.created": false,
		"attachment.updated": false, "attachment.deleted": false, "conversation.read": false, "message.deleted": false}
	for seen := 0; seen < len(want); {
		select {
		case typ := <-types:
			if done, ok := want[typ]; ok && !done {
				want[typ] = true
				seen++
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("bob's stream lacks events of the walk: %v", want)
		}
	}
}

// TestSignedURLDownload runs the walk's download lines against a stand-in
// API whose file_url is either its own route (which takes the token) or a
// signed bucket URL, served by a bucket that refuses, as MinIO and S3 do, a
// request that carries an Authorization header besides its signature.
func TestSignedURLDownload(t *testing.T) {
	need(t, "bash", "curl", "jq")
	text, _ := readme(t)
	walk := shBlocks(t, text, "A walk through the API")[1]
	var lines []string
	for l := range strings.Lines(walk) {
		if strings.HasPrefix(l, "URL=$(") || strings.HasPrefix(l, `case "$URL"`) {
			lines = append(lines, l)
		}
	}
	require.Len(t, lines, 2, "the walk's download: the URL, then the fetch")

	const token = "Bearer bob-secret"
	bucket := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			http.Error(w, "<Error><Code>InvalidArgument</Code><Message>Only one auth mechanism allowed</Message></Error>", http.StatusBadRequest)
			return
		}
		if r.URL.Query().Get("X-Amz-Signature") == "" {
			http.Error(w, "AccessDenied", http.StatusForbidden)
			return
		}
		_, _ = io.WriteString(w, "signed notes")
	}))
	t.Cleanup(bucket.Close)
	var fileURL atomic.Value // the file_url the API answers, set per case
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != token {
			http.Error(w, `{"error":{"type":"authentication_error"}}`, http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/v1/attachments/att_1":
			_, _ = io.WriteString(w, `{"id":"att_1","object":"attachment","file_url":"`+fileURL.Load().(string)+`"}`)
		case "/v1/attachments/att_1/notes.txt":
			_, _ = io.WriteString(w, "routed notes")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(api.Close)

	script := "B='Authorization: " + token + "'; API=" + api.URL + "/v1; ATT=att_1\n" + strings.Join(lines, "")
	for _, tc := range []struct{ name, url, want string }{
		{"signed", bucket.URL + "/attachments/ins_1/att_1?X-Amz-Signature=abc&X-Amz-Expires=600", "signed notes"},
		{"the API's route", api.URL + "/v1/attachments/att_1/notes.txt", "routed notes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fileURL.Store(tc.url)
			assert.Equal(t, tc.want, bash(t, t.Context(), t.TempDir(), script))
		})
	}
}
