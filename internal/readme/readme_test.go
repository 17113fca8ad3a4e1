package readme

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// embeddingSection returns the README's "Embedding" section.
func embeddingSection(t *testing.T) (root, sec string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	_, sec, ok := strings.Cut(string(readme), "\n## Embedding\n")
	require.True(t, ok, "README has an Embedding section")
	sec, _, _ = strings.Cut(sec, "\n## ")
	return root, sec
}

// goBlocks returns the Go blocks of a README section, in order.
func goBlocks(t *testing.T, sec string) []string {
	t.Helper()
	var blocks []string
	for {
		_, rest, ok := strings.Cut(sec, "```go\n")
		if !ok {
			return blocks
		}
		code, after, ok := strings.Cut(rest, "```")
		require.True(t, ok, "a Go block ends")
		blocks = append(blocks, code)
		sec = after
	}
}

// program is the README's embedding program, pasted into a fresh module,
// with its paths and address moved into a temporary folder and a free
// port.
type program struct {
	dir, addr, code string
}

func newProgram(t *testing.T, code string) *program {
	t.Helper()
	p := &program{dir: t.TempDir()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p.addr = ln.Addr().String()
	require.NoError(t, ln.Close())
	for old, repl := range map[string]string{
		`"chat.db"`:                              `"` + filepath.Join(p.dir, "chat.db") + `"`,
		`"file:///var/lib/chat?create_dir=true"`: `"file://` + filepath.ToSlash(filepath.Join(p.dir, "files")) + `?create_dir=true"`,
		`"127.0.0.1:8080"`:                       `"` + p.addr + `"`,
	} {
		require.Contains(t, code, old, "the program names %s", old)
		code = strings.Replace(code, old, repl, 1)
	}
	p.code = code
	return p
}

// build writes the program into a module that requires this one (root)
// and builds it with the drivers it imports; it returns the binary.
func (p *program) build(t *testing.T, root string) string {
	t.Helper()
	mod := filepath.Join(p.dir, "mod")
	require.NoError(t, os.MkdirAll(mod, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(mod, "main.go"), []byte(p.code), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/chat\n\ngo 1.26\n\n"+
		"require github.com/parleychat/parley v0.0.0\n\nreplace github.com/parleychat/parley => "+root+"\n"), 0o644))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.sum"), sum, 0o644))
	bin := filepath.Join(p.dir, "chat")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = mod
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build of the README's program:\n%s", out)
	return bin
}

// TestEmbeddingProgram pastes the README's embedding program into a fresh
// module that requires this one, builds it, runs it, sends a message
// through it and receives its event on an open event stream (and in the
// handler's log); then stops it with SIGTERM while ten streams are open,
// which it must survive by exiting within a second (issue 29).
func TestEmbeddingProgram(t *testing.T) {
	root, sec := embeddingSection(t)
	blocks := goBlocks(t, sec)
	require.NotEmpty(t, blocks)
	code := blocks[0]

	// The program says what a reader must do first: store the contacts
	// the authenticator names, and let the files folder be made.
	save, auth := strings.Index(code, "msgs.SaveContact("), strings.Index(code, "Authenticator:")
	require.True(t, save >= 0 && auth > save, "the contact is saved before the authenticator names it")
	assert.Contains(t, code, "save your users\n\t// as contacts first")
	assert.Contains(t, code, "create_dir=true")
	assert.Contains(t, code, "msgs.Files().Claim(ctx)")

	p := newProgram(t, code)
	bin := p.build(t, root)

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// The program's output goes to a file, read only when a check fails.
	logs, err := os.Create(filepath.Join(p.dir, "logs"))
	require.NoError(t, err)
	defer logs.Close()
	logged := func() string { b, _ := os.ReadFile(logs.Name()); return string(b) }
	run := exec.CommandContext(ctx, bin)
	run.Stdout, run.Stderr = logs, logs
	require.NoError(t, run.Start())
	exited := make(chan error, 1)
	go func() { exited <- run.Wait() }()
	t.Cleanup(func() {
		_ = run.Process.Kill()
		<-exited
	})

	base := "http://" + p.addr + "/chat/v1"
	do := func(ctx context.Context, method, path, body string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer alice-secret")
		if path == "/events" {
			req.Header.Set("Accept", "text/event-stream") // a stream, not a page of events
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		return http.DefaultClient.Do(req)
	}
	// Wait for the program to answer, with the first of its streams.
	var first *http.Response
	for {
		if first, err = do(ctx, "GET", "/events", ""); err == nil {
			break
		}
		require.NoError(t, ctx.Err(), "the program never answered: %v\n%s", err, logged())
		time.Sleep(50 * time.Millisecond)
	}
	defer first.Body.Close()
	require.Equal(t, http.StatusOK, first.StatusCode, logged())
	require.Contains(t, first.Header.Get("Content-Type"), "text/event-stream")

	res, err := do(ctx, "POST", "/messages", "conversation_id=general&message=hello")
	require.NoError(t, err)
	res.Body.Close()
	if !assert.Equal(t, http.StatusCreated, res.StatusCode) {
		t.Log(logged())
	}
	assert.FileExists(t, filepath.Join(p.dir, "chat.db"))
	assert.DirExists(t, filepath.Join(p.dir, "files"))

	// The message's event reaches the open stream.
	lines := bufio.NewScanner(first.Body)
	var event, data string
	for event == "" && lines.Scan() {
		if e, ok := strings.CutPrefix(lines.Text(), "event: "); ok && lines.Scan() {
			event, data = e, lines.Text()
		}
	}
	require.NoError(t, lines.Err(), logged())
	assert.Equal(t, "message.created", event)
	assert.Contains(t, data, `"message":"hello"`)
	// And the host's handler.
	require.Eventually(t, func() bool { return strings.Contains(logged(), "message.created in general") },
		10*time.Second, 20*time.Millisecond, "the handler logs the event:\n%s", logged())

	// Nine more streams: ten open, the most one caller may hold.
	for range 9 {
		res, err := do(ctx, "GET", "/events", "")
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
		b := make([]byte, 1)
		_, err = res.Body.Read(b) // the stream has begun
		require.NoError(t, err)
	}
	start := time.Now()
	require.NoError(t, run.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		assert.NoError(t, err, "the program exits cleanly:\n%s", logged())
		took := time.Since(start)
		t.Logf("stopped %v after SIGTERM, with ten streams open", took.Round(time.Millisecond))
		assert.Less(t, took, time.Second, "the program stops within a second with ten streams open")
	case <-time.After(5 * time.Second):
		t.Fatalf("the program did not stop within 5 s of SIGTERM with ten streams open:\n%s", logged())
	}
}

// TestEventsAcrossInstances puts the README's pub/sub lines in place of
// the embedding program's messaging.New and builds it: the lines paste.
// (examples/server runs the same wiring against NATS, -pubsub.)
func TestEventsAcrossInstances(t *testing.T) {
	root, sec := embeddingSection(t)
	blocks := goBlocks(t, sec)
	require.Len(t, blocks, 2, "the program and its pub/sub lines")
	code, frag := blocks[0], blocks[1]
	const newLine = "msgs, err := messaging.New(ctx, store, blobs, nil)\n"
	require.Contains(t, code, newLine)
	require.Contains(t, frag, "in place of messaging.New(ctx, store, blobs, nil)")
	code = strings.Replace(code, "\t"+newLine, indent(frag), 1)
	code = strings.Replace(code, "import (\n", "import (\n\t\"gocloud.dev/pubsub\"\n\t_ \"gocloud.dev/pubsub/natspubsub\"\n"+
		"\t\"github.com/parleychat/parley/events\"\n", 1)
	p := newProgram(t, code)
	p.build(t, root)
}

// indent indents each line of code by a tab.
func indent(code string) string {
	var b strings.Builder
	for line := range strings.Lines(code) {
		if line != "\n" {
			b.WriteString("\t")
		}
		b.WriteString(line)
	}
	return b.String()
}
