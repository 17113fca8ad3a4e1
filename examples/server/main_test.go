package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/testnet"
)

// TestKillRestartKeepsAcknowledgedWrites builds the server, drives it over
// HTTP, kills it with SIGKILL right after the writes were acknowledged,
// restarts it on the same data and finds every write.
func TestKillRestartKeepsAcknowledgedWrites(t *testing.T) {
	bin := buildServer(t)

	data := t.TempDir()
	addr := testnet.FreeAddr(t)
	base := "http://" + addr
	tokens := "alice=tok-alice,bob=tok-bob"

	srv := start(t, bin, "-addr", addr, "-data", data, "-tokens", tokens)
	var ids []string
	for i := range 20 {
		var m struct{ ID string }
		status := call(t, "POST", base+"/v1/messages", "tok-alice", url.Values{
			"conversation_id": {"durable"}, "message": {"message " + string(rune('a'+i))},
		}, &m)
		require.Equal(t, http.StatusCreated, status)
		ids = append(ids, m.ID)
	}
	var reacted struct{ Reactions []map[string][]string }
	require.Equal(t, http.StatusOK, call(t, "PUT", base+"/v1/messages/"+ids[0], "tok-bob",
		url.Values{"reactions[tada][]": {"bob"}}, &reacted))
	att := upload(t, base, "tok-alice", "notes.txt", "durable bytes")
	require.Equal(t, http.StatusOK, call(t, "PUT", base+"/v1/messages/"+ids[1], "tok-alice",
		url.Values{"attachments[]": {att}}, nil))

	require.NoError(t, srv.Process.Signal(syscall.SIGKILL))
	_, _ = srv.Process.Wait()

	start(t, bin, "-addr", addr, "-data", data, "-tokens", tokens)
	var page struct {
		HasMore bool `json:"has_more"`
		Data    []struct {
			ID          string
			Reactions   []map[string][]string
			Attachments []struct {
				ID      string
				FileURL string `json:"file_url"`
			}
		}
	}
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/v1/messages?conversation_id=durable&limit=100", "tok-bob", nil, &page))
	require.Len(t, page.Data, 20)
	for i, m := range page.Data {
		assert.Equal(t, ids[len(ids)-1-i], m.ID, "newest first")
	}
	last := page.Data[19]
	assert.Equal(t, []map[string][]string{{"tada": {"bob"}}}, last.Reactions)
	require.Len(t, page.Data[18].Attachments, 1)
	assert.Equal(t, att, page.Data[18].Attachments[0].ID)

	req, _ := http.NewRequest("GET", page.Data[18].Attachments[0].FileURL, nil)
	req.Header.Set("Authorization", "Bearer tok-bob")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "durable bytes", string(body))
}

// TestFirstStartPrintsHowToCall checks the greeting a new user sees.
func TestFirstStartPrintsHowToCall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the server; skipped with -short")
	}
	addr := testnet.FreeAddr(t)
	cmd := exec.Command("go", "run", ".", "-addr", addr, "-data", t.TempDir())
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		_ = cmd.Wait()
	})
	var greeting strings.Builder
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		greeting.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "curl") && strings.Contains(sc.Text(), "GET") || strings.Contains(sc.Text(), "?conversation_id=general") {
			break
		}
	}
	g := greeting.String()
	assert.Contains(t, g, "http://"+addr)
	assert.Contains(t, g, "Bearer alice-secret")
	assert.Contains(t, g, "Bearer bob-secret")
	// The curl line printed works as written.
	var m struct{ Message string }
	assert.Equal(t, http.StatusCreated, call(t, "POST", "http://"+addr+"/v1/messages", "alice-secret",
		url.Values{"conversation_id": {"general"}, "message": {"hello"}}, &m))
	assert.Equal(t, "hello", m.Message)
}

// built is the server binary that buildServer made once for the tests
// of this process, in a folder that TestMain removes.
var built struct {
	once sync.Once
	bin  string
	err  error
}

// buildServer builds this program once for all tests, and returns the
// binary's path (each build linked anew: seconds a test). It skips t under
// -short.
func buildServer(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the server binary; skipped with -short")
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "parley-server-test-")
		if err != nil {
			built.err = err
			return
		}
		built.bin = filepath.Join(dir, "server")
		build := exec.Command("go", "build", "-o", built.bin, ".")
		build.Stderr = os.Stderr
		built.err = build.Run()
	})
	require.NoError(t, built.err, "go build")
	return built.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.bin != "" {
		_ = os.RemoveAll(filepath.Dir(built.bin))
	}
	os.Exit(code)
}

// start runs the binary and waits until it answers.
func start(t testing.TB, bin string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, serverStderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	})
	addr := args[1]
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return cmd
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("server did not start on %s", addr)
	return nil
}

// call sends a form request and decodes the JSON answer into out.
func call(t testing.TB, method, u, token string, form url.Values, out any) int {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	if out != nil {
		require.NoError(t, json.NewDecoder(res.Body).Decode(out))
	}
	return res.StatusCode
}

func upload(t *testing.T, base, token, name, content string) string {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile("file", name)
	require.NoError(t, err)
	_, _ = fw.Write([]byte(content))
	require.NoError(t, mw.Close())
	req, _ := http.NewRequest("POST", base+"/v1/attachments", &buf)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var a struct{ ID string }
	require.NoError(t, json.NewDecoder(res.Body).Decode(&a))
	require.Equal(t, http.StatusCreated, res.StatusCode)
	return a.ID
}

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// URL forms.
		{"postgres://postgres:s3cret@127.0.0.1:5432/parley?sslmode=disable", "postgres://postgres:xxxxx@127.0.0.1:5432/parley?sslmode=disable"},
		{"postgres://u:p%40ss@host/db?password=s3cret&sslmode=disable", "postgres://u:xxxxx@host/db?password=xxxxx&sslmode=disable"},
		{"postgres://u@host/db?sslpassword=s3cret", "postgres://u@host/db?sslpassword=xxxxx"},
		{"postgres://host/db?user=u&Password=s3cret", "postgres://host/db?user=u&Password=xxxxx"},
		{"mysql://root:s3cret@127.0.0.1:3306/test", "mysql://root:xxxxx@127.0.0.1:3306/test"},
		{"mysql://root@127.0.0.1:3306/test", "mysql://root@127.0.0.1:3306/test"},
		{"s3://parley?endpoint=http://127.0.0.1:9000&use_path_style=true&region=us-east-1", "s3://parley?endpoint=http://127.0.0.1:9000&use_path_style=true&region=us-east-1"},
		{"s3://parley?region=us-east-1&secret_access_key=s3cret", "s3://parley?region=us-east-1&secret_access_key=xxxxx"},
		{"postgres://u:s3cret@host:bad/db", "postgres://(hidden: does not parse)"},
		// The MySQL driver's form.
		{"root:s3cret@tcp(127.0.0.1:3306)/db", "root:xxxxx@tcp(127.0.0.1:3306)/db"},
		{"root:s3:c@r/et@tcp(127.0.0.1:3306)/db?parseTime=true", "root:xxxxx@tcp(127.0.0.1:3306)/db?parseTime=true"},
		{"app:s3cret@unix(/run/mysqld/mysqld.sock)/db", "app:xxxxx@unix(/run/mysqld/mysqld.sock)/db"},
		{"root:s3cret@/db", "root:xxxxx@/db"},
		{"root@tcp(127.0.0.1:3306)/test", "root@tcp(127.0.0.1:3306)/test"},
		{"root@tcp(127.0.0.1:3306)/test?password=s3cret", "root@tcp(127.0.0.1:3306)/test?password=xxxxx"},
		// SQLite.
		{"data/parley.db", "data/parley.db"},
		{"/var/lib/parley/parley.db", "/var/lib/parley/parley.db"},
		{"file:parley.db?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)", "file:parley.db?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"},
		{"file:parley.db?_auth_pass=s3cret", "file:parley.db?_auth_pass=xxxxx"},
		{":memory:", ":memory:"},
		{"", ""},
	} {
		got := redact(tc.in)
		assert.Equal(t, tc.want, got, "redact(%q)", tc.in)
		assert.NotContains(t, got, "s3cret", "redact(%q)", tc.in)
	}
}
