package readme

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// embedProgram returns the first Go block of the README's "Embedding"
// section.
func embedProgram(t *testing.T, readme string) string {
	t.Helper()
	_, sec, ok := strings.Cut(readme, "\n## Embedding\n")
	require.True(t, ok, "README has an Embedding section")
	_, code, ok := strings.Cut(sec, "```go\n")
	require.True(t, ok, "the section has a Go block")
	code, _, ok = strings.Cut(code, "```")
	require.True(t, ok)
	return code
}

// TestEmbeddingProgram pastes the README's embedding program into a fresh
// module that requires this one, builds it with the drivers it imports,
// runs it (its paths and address moved into a temporary folder and a free
// port) and sends a message through it.
func TestEmbeddingProgram(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	code := embedProgram(t, string(readme))

	// The program says what a reader must do first: store the contacts
	// the authenticator names, and let the files folder be made.
	save, auth := strings.Index(code, "msgs.SaveContact("), strings.Index(code, "Authenticator:")
	require.True(t, save >= 0 && auth > save, "the contact is saved before the authenticator names it")
	assert.Contains(t, code, "save your users\n\t// as contacts first")
	assert.Contains(t, code, "create_dir=true")

	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	for old, repl := range map[string]string{
		`"chat.db"`:                              `"` + filepath.Join(dir, "chat.db") + `"`,
		`"file:///var/lib/chat?create_dir=true"`: `"file://` + filepath.ToSlash(filepath.Join(dir, "files")) + `?create_dir=true"`,
		`"127.0.0.1:8080"`:                       `"` + addr + `"`,
	} {
		require.Contains(t, code, old, "the program names %s", old)
		code = strings.Replace(code, old, repl, 1)
	}
	mod := filepath.Join(dir, "mod")
	require.NoError(t, os.MkdirAll(mod, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(mod, "main.go"), []byte(code), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/chat\n\ngo 1.26\n\n"+
		"require github.com/parleychat/parley v0.0.0\n\nreplace github.com/parleychat/parley => "+root+"\n"), 0o644))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.sum"), sum, 0o644))

	bin := filepath.Join(dir, "chat")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = mod
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build of the README's program:\n%s", out)

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// The program's output goes to a file, read only when a check fails.
	logs, err := os.Create(filepath.Join(dir, "logs"))
	require.NoError(t, err)
	defer logs.Close()
	logged := func() string { b, _ := os.ReadFile(logs.Name()); return string(b) }
	run := exec.CommandContext(ctx, bin)
	run.Stdout, run.Stderr = logs, logs
	require.NoError(t, run.Start())
	t.Cleanup(func() { _ = run.Process.Kill(); _ = run.Wait() })

	base := "http://" + addr + "/chat/v1"
	post := func() (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/messages", strings.NewReader("conversation_id=general&message=hello"))
		req.Header.Set("Authorization", "Bearer alice-secret")
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return http.DefaultClient.Do(req)
	}
	var res *http.Response
	for {
		if res, err = post(); err == nil {
			break
		}
		require.NoError(t, ctx.Err(), "the program never answered: %v\n%s", err, logged())
		time.Sleep(50 * time.Millisecond)
	}
	res.Body.Close()
	if !assert.Equal(t, http.StatusCreated, res.StatusCode) {
		t.Log(logged())
	}
	assert.FileExists(t, filepath.Join(dir, "chat.db"))
	assert.DirExists(t, filepath.Join(dir, "files"))
}
