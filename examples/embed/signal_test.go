package main

import (
	"bufio"
	"context"
	"io"
	"log"
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

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/testnet"
)

// childEnv makes the test binary run the program instead of the tests:
// TestCtrlC starts it so, and signals it as a user's Ctrl-C does.
const childEnv = "PARLEY_EMBED_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(command(strings.Fields(os.Getenv(childEnv)), os.Stderr))
	}
	os.Exit(m.Run())
}

// send posts a message as ann through the running program.
func send(t *testing.T, addr string) {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+addr+"/chat/v1/messages", strings.NewReader("conversation_id=team&message=hi"))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer key-ann")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusCreated, res.StatusCode, "%s", b)
}

// empty asserts that the folder holds nothing: the program's temporary
// folder is gone.
func empty(t *testing.T, dir string) {
	t.Helper()
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	assert.Empty(t, names, "left behind in the temporary directory")
}

// TestRunRemovesItsFolder: run sets up as the README's embedding program
// does: its database claims the files folder, and /chat/v1/events streams
// the caller's events. When its context ends, run ends the open stream,
// stops serving, closes storage and removes its temporary folder, which
// held the database and the files meanwhile.
func TestRunRemovesItsFolder(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	addr := testnet.FreeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, addr, log.New(io.Discard, "", 0)) }()
	waitUp(t, addr)

	// ann's live events, open before she writes.
	req, err := http.NewRequest("GET", "http://"+addr+"/chat/v1/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer key-ann")
	req.Header.Set("Accept", "text/event-stream")
	stream, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer stream.Body.Close()
	require.Equal(t, http.StatusOK, stream.StatusCode)
	require.Contains(t, stream.Header.Get("Content-Type"), "text/event-stream")
	lines := bufio.NewScanner(stream.Body)
	require.True(t, lines.Scan(), "the stream begins") // its opening comment

	send(t, addr)
	var event string
	for event == "" && lines.Scan() {
		if e, ok := strings.CutPrefix(lines.Text(), "event: "); ok {
			event = e
		}
	}
	assert.Equal(t, "message.created", event, "ann's message reaches her stream")

	dirs, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Len(t, dirs, 1, "run keeps its data in one temporary folder")
	assert.FileExists(t, filepath.Join(tmp, dirs[0].Name(), "files", attachments.ClaimKey),
		"the database claims its files folder")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("run did not return after its context ended (with an event stream open)")
	}
	for lines.Scan() {
	}
	empty(t, tmp)
	_, err = net.Dial("tcp", addr)
	assert.Error(t, err, "still listening")
}

// waitUp waits until the address accepts connections.
func waitUp(t *testing.T, addr string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return
		}
		require.True(t, time.Now().Before(deadline), "the program never listened on %s", addr)
	}
}

// TestCtrlC runs the program as a process, as `go run ./examples/embed`
// does, and stops it with SIGINT (what Ctrl-C sends) or SIGTERM: it exits
// 0 and leaves no temporary folder behind.
func TestCtrlC(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			addr := testnet.FreeAddr(t)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"=-addr "+addr, "TMPDIR="+tmp)
			stderr, err := cmd.StderrPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { _ = cmd.Process.Kill() })

			lines := make(chan string, 16)
			go func() {
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			var out []string
			for listening := false; !listening; {
				select {
				case l, ok := <-lines:
					require.True(t, ok, "the program ended before it listened: %s", strings.Join(out, "\n"))
					out = append(out, l)
					listening = strings.Contains(l, "listening on http://"+addr)
				case <-time.After(30 * time.Second):
					t.Fatalf("the program never said it listens: %s", strings.Join(out, "\n"))
				}
			}
			send(t, addr)

			require.NoError(t, cmd.Process.Signal(sig))
			exited := make(chan error, 1)
			go func() {
				for l := range lines {
					out = append(out, l)
				}
				exited <- cmd.Wait()
			}()
			select {
			case err := <-exited:
				require.NoError(t, err, "exit after %v: %s", sig, strings.Join(out, "\n"))
			case <-time.After(30 * time.Second):
				t.Fatalf("the program did not stop on %v", sig)
			}
			empty(t, tmp)
		})
	}
}
