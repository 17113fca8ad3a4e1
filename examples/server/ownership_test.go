package main

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/testnet"
)

// These tests hold defect 1 of issue 10 at the level a user meets it: the
// reconciler of a server started over files that are not its database's
// deleted every one of them older than an hour.

// logBuffer collects a server's log.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// server is a run of the server in this process.
type server struct {
	base string
	logs *logBuffer
	stop func() error
}

// launch runs the server with args (plus -addr and demo tokens) until it
// listens and has reconciled once, or until it returns an error, which
// launch returns.
func launch(t *testing.T, args ...string) (*server, error) {
	t.Helper()
	addr := testnet.FreeAddr(t)
	logs := &logBuffer{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	args = append([]string{"-addr", addr, "-tokens", "alice=tok-alice,bob=tok-bob"}, args...)
	go func() { done <- run(ctx, args, io.Discard, logs) }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("the server did not stop")
			return nil
		}
	}
	t.Cleanup(func() { _ = stop() })
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			stopped = true
			cancel()
			return nil, err
		default:
		}
		if strings.Contains(logs.String(), "reconcile") {
			return &server{base: "http://" + addr, logs: logs, stop: stop}, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the server neither reconciled nor failed; log:\n%s", logs)
	return nil, nil
}

// files returns the paths of the files under dir, relative to it.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// attachmentFiles returns the files of attachments under a files folder.
func attachmentFiles(t *testing.T, filesDir string) []string {
	t.Helper()
	var out []string
	for _, f := range files(t, filesDir) {
		if strings.HasPrefix(f, "attachments/") {
			out = append(out, f)
		}
	}
	return out
}

// age sets the modification time of every file under dir to two hours
// ago: past the reconciler's grace period for files without a row.
func age(t *testing.T, dir string) {
	t.Helper()
	old := time.Now().Add(-2 * time.Hour)
	for _, f := range files(t, dir) {
		require.NoError(t, os.Chtimes(filepath.Join(dir, f), old, old))
	}
}

// fetch downloads an attachment's bytes through the API.
func fetch(t *testing.T, base, id string) (int, string) {
	t.Helper()
	var a struct {
		FileURL string `json:"file_url"`
	}
	if status := call(t, "GET", base+"/v1/attachments/"+id, "tok-alice", nil, &a); status != http.StatusOK {
		return status, ""
	}
	req, _ := http.NewRequest("GET", a.FileURL, nil)
	req.Header.Set("Authorization", "Bearer tok-alice")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// seed starts a server on data, uploads n files and stops it.
func seed(t *testing.T, data string, n int, args ...string) []string {
	t.Helper()
	srv, err := launch(t, append([]string{"-data", data}, args...)...)
	require.NoError(t, err)
	var ids []string
	for i := range n {
		ids = append(ids, upload(t, srv.base, "tok-alice", "f.txt", "file "+string(rune('a'+i))))
	}
	require.NoError(t, srv.stop())
	return ids
}

// assertAllThere restarts the owner of data and reads every file back.
func assertAllThere(t *testing.T, data string, ids []string) {
	t.Helper()
	srv, err := launch(t, "-data", data)
	require.NoError(t, err)
	defer srv.stop()
	for i, id := range ids {
		status, body := fetch(t, srv.base, id)
		assert.Equal(t, http.StatusOK, status, "file %s", id)
		assert.Equal(t, "file "+string(rune('a'+i)), body, "file %s", id)
	}
}

// TestSecondDatabaseOverSameFiles: the README's quick start (SQLite in
// ./data) and then its PostgreSQL or MariaDB command give a second
// database over the same files folder. The server refuses to start, and
// touches no file.
func TestSecondDatabaseOverSameFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs servers; skipped with -short")
	}
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			data := t.TempDir()
			ids := seed(t, data, 3)
			filesDir := filepath.Join(data, "files")
			before := attachmentFiles(t, filesDir)
			require.Len(t, before, 3)
			age(t, filesDir)

			srv, err := launch(t, "-data", data, "-db", e.DSN(t))
			if srv != nil {
				_ = srv.stop()
			}
			require.Error(t, err, "a second database over the same files must not start")
			assert.Contains(t, err.Error(), filesDir, "the error names the folder at fault")
			assert.Equal(t, before, attachmentFiles(t, filesDir), "no file was touched")
			assertAllThere(t, data, ids)
		})
	}
}

// TestMistypedDatabasePath: a mistyped -db path must not become a new,
// empty SQLite database over the files of -data.
func TestMistypedDatabasePath(t *testing.T) {
	if testing.Short() {
		t.Skip("runs servers; skipped with -short")
	}
	data := t.TempDir()
	ids := seed(t, data, 3)
	filesDir := filepath.Join(data, "files")
	before := attachmentFiles(t, filesDir)
	age(t, filesDir)

	typo := filepath.Join(data, "parly.db")
	srv, err := launch(t, "-data", data, "-db", typo)
	if srv != nil {
		_ = srv.stop()
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refusing to create a new database")
	assert.NoFileExists(t, typo, "no empty database is left behind")
	assert.Equal(t, before, attachmentFiles(t, filesDir))

	// Also with the folder named as a bucket: the claim refuses it.
	srv, err = launch(t, "-data", t.TempDir(), "-db", typo, "-bucket", "file://"+filepath.ToSlash(filesDir))
	if srv != nil {
		_ = srv.stop()
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "belongs to another Parley database")
	assert.NoFileExists(t, typo)
	assert.Equal(t, before, attachmentFiles(t, filesDir))
	assertAllThere(t, data, ids)
}

// TestRestoredBackupKeepsNewerFiles: a database restored from an older
// backup knows fewer files than the folder holds; the server starts, and
// its reconciler keeps the files it no longer knows.
func TestRestoredBackupKeepsNewerFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs servers; skipped with -short")
	}
	data := t.TempDir()
	db := filepath.Join(data, "parley.db")
	old := seed(t, data, 3)
	backup, err := os.ReadFile(db) // stopped cleanly: the WAL is checkpointed
	require.NoError(t, err)
	seed(t, data, 3)
	filesDir := filepath.Join(data, "files")
	require.Len(t, attachmentFiles(t, filesDir), 6)

	for _, suffix := range []string{"-wal", "-shm"} {
		_ = os.Remove(db + suffix)
	}
	require.NoError(t, os.WriteFile(db, backup, 0o644))
	age(t, filesDir)

	srv, err := launch(t, "-data", data)
	require.NoError(t, err, "a restored database still serves")
	assert.Len(t, attachmentFiles(t, filesDir), 6, "the reconciler removed the files the restored database does not know")
	assert.Contains(t, srv.logs.String(), "restored from a backup", "the reconciler says why it left them")
	for i, id := range old {
		status, body := fetch(t, srv.base, id)
		assert.Equal(t, http.StatusOK, status)
		assert.Equal(t, "file "+string(rune('a'+i)), body)
	}
}
