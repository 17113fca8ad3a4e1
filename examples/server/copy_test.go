package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/testnet"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/blobstore"
	"github.com/parleychat/parley/storage/sqlstore"
)

// runBin runs the binary to its end and returns its stdout, stderr and
// error.
func runBin(t *testing.T, bin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// fileURL is the file:// bucket URL of a folder, as the server makes it.
func fileURL(dir string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir), RawQuery: "metadata=skip"}).String()
}

// get returns the body of a GET, with the server's own base URL taken out
// of it (file URLs name their host), and the callers' last activity.
func get(t *testing.T, base, path, token string) string {
	t.Helper()
	req, err := http.NewRequest("GET", base+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "GET %s: %s", path, body)
	return lastActive.ReplaceAllString(strings.ReplaceAll(string(body), base, "BASE"), "")
}

// lastActive matches the time a contact was last active, which each
// authenticated request moves.
var lastActive = regexp.MustCompile(`"last_active_at":[0-9]+`)

// The upgrade path as the README gives it, tried as a new user would: a
// server on its defaults (SQLite and a folder) takes writes and stops;
// "server copy" moves it to each engine and a new folder; a server started
// on the copy answers every read as the first did, serves the files, and
// takes writes; a second copy changes nothing, and -verify says so.
func TestCopyCommand(t *testing.T) {
	bin := buildServer(t)
	tokens := "alice=tok-alice,bob=tok-bob"
	data := t.TempDir()
	addr := testnet.FreeAddr(t)
	base := "http://" + addr
	srv := start(t, bin, "-addr", addr, "-data", data, "-tokens", tokens)
	var ids []string
	for i := range 12 {
		var m struct{ ID string }
		require.Equal(t, http.StatusCreated, call(t, "POST", base+"/v1/messages", "tok-alice", url.Values{
			"conversation_id": {"general"}, "message": {fmt.Sprintf("message %d", i)}}, &m))
		ids = append(ids, m.ID)
	}
	require.Equal(t, http.StatusOK, call(t, "PUT", base+"/v1/messages/"+ids[0], "tok-bob", url.Values{"reactions[tada][]": {"bob"}}, nil))
	require.Equal(t, http.StatusOK, call(t, "PUT", base+"/v1/messages/"+ids[1], "tok-alice", url.Values{"message": {"edited"}}, nil))
	att := upload(t, base, "tok-alice", "notes.txt", "the bytes of the notes")
	require.Equal(t, http.StatusOK, call(t, "PUT", base+"/v1/messages/"+ids[2], "tok-alice", url.Values{"attachments[]": {att}}, nil))
	read := func(base string) map[string]string {
		out := map[string]string{}
		for _, p := range []string{
			"/v1/messages?conversation_id=general&limit=5",
			"/v1/messages?conversation_id=general&limit=5&starting_after=" + ids[6],
			"/v1/messages?conversation_id=general&limit=3&ending_before=" + ids[4],
			"/v1/messages/" + ids[1] + "/revisions",
			"/v1/conversations",
			"/v1/conversations/general",
			"/v1/attachments/" + att,
			"/v1/attachments/" + att + "/notes.txt",
		} {
			for _, tok := range []string{"tok-alice", "tok-bob"} {
				out[tok+" "+p] = get(t, base, p, tok)
			}
		}
		return out
	}
	want := read(base)
	require.Contains(t, want["tok-alice /v1/attachments/"+att+"/notes.txt"], "the bytes of the notes")
	require.NoError(t, srv.Process.Signal(syscall.SIGTERM))
	_, _ = srv.Process.Wait()

	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			dsn := e.DSN(t)
			if e.Name == "sqlite" {
				dsn = filepath.Join(t.TempDir(), "copy.db")
			}
			files := filepath.Join(t.TempDir(), "files")
			out, errs, err := runBin(t, bin, "copy", "-data", data, "-to-db", dsn, "-to-bucket", fileURL(files))
			require.NoError(t, err, "%s%s", out, errs)
			assert.Contains(t, out, "12 messages")
			assert.Contains(t, out, "files: 1 (1 copied")
			assert.Contains(t, out, "verified:")
			assert.Contains(t, errs, "copy: rows   messages         12/12 rows", "plain progress lines in a pipe")

			addr := testnet.FreeAddr(t)
			srv := start(t, bin, "-addr", addr, "-db", dsn, "-bucket", fileURL(files), "-tokens", tokens)
			got := read("http://" + addr)
			for k, v := range want {
				assert.Equal(t, v, got[k], "the copy answers %s as its source", k)
			}
			require.Equal(t, http.StatusCreated, call(t, "POST", "http://"+addr+"/v1/messages", "tok-bob", url.Values{
				"conversation_id": {"general"}, "message": {"after the move"}}, nil))
			require.NoError(t, srv.Process.Signal(syscall.SIGTERM))
			_, _ = srv.Process.Wait()

			out, errs, err = runBin(t, bin, "copy", "-data", data, "-to-db", dsn, "-to-bucket", fileURL(files), "-verify")
			require.Error(t, err, "the copy took a message since: %s", out)
			assert.Contains(t, errs, "messages: 12 in the source, 13 in the destination")
		})
	}
}

// A destination that holds another Parley is refused, and nothing of it
// changes.
func TestCopyCommandRefusesAnotherParley(t *testing.T) {
	bin := buildServer(t)
	data, other := t.TempDir(), t.TempDir()
	for _, dir := range []string{data, other} {
		addr := testnet.FreeAddr(t)
		srv := start(t, bin, "-addr", addr, "-data", dir, "-tokens", "alice=tok-alice")
		require.Equal(t, http.StatusCreated, call(t, "POST", "http://"+addr+"/v1/messages", "tok-alice", url.Values{
			"conversation_id": {"general"}, "message": {"hi"}}, nil))
		require.NoError(t, srv.Process.Signal(syscall.SIGTERM))
		_, _ = srv.Process.Wait()
	}
	db := filepath.Join(other, "parley.db")
	before, err := os.ReadFile(db)
	require.NoError(t, err)
	out, errs, err := runBin(t, bin, "copy", "-data", data, "-to-db", db, "-to-bucket", fileURL(filepath.Join(other, "files")))
	require.Error(t, err, out)
	assert.Contains(t, errs, "the destination database holds another store's data")
	assert.Contains(t, errs, "1 contacts, 1 conversations, 1 members, 1 messages")
	after, err := os.ReadFile(db)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the destination is left as it was")

	_, errs, err = runBin(t, bin, "copy", "-data", filepath.Join(data, "nothing"), "-to-db", db, "-to-bucket", fileURL(other))
	require.Error(t, err)
	assert.Contains(t, errs, "no source database at")

	_, errs, err = runBin(t, bin, "copy", "-data", data, "-to-db", data+"/./parley.db", "-to-bucket", fileURL(other))
	require.Error(t, err)
	assert.Contains(t, errs, "-to-db names the source database")
}

// A copy killed with SIGKILL at random moments, then run again, ends
// complete and verified, with nothing twice.
func TestCopyCommandKilledAndResumed(t *testing.T) {
	bin := buildServer(t)
	ctx := context.Background()
	data := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(data, "files"), 0o755))
	src, err := sqlstore.Open(ctx, filepath.Join(data, "parley.db"), nil)
	require.NoError(t, err)
	require.NoError(t, src.Migrate(ctx))
	bucket, err := blobstore.Open(ctx, fileURL(filepath.Join(data, "files")))
	require.NoError(t, err)
	const nMsgs, nFiles = 20000, 300
	require.NoError(t, src.Driver().PutContact(ctx, messaging.Contact{ID: "ctc_1", Username: "alice", CreatedAt: time.Now()}))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var msgs []messaging.Message
	for i := range nMsgs {
		msgs = append(msgs, messaging.Message{ID: fmt.Sprintf("msg_%06d", i), ConversationID: fmt.Sprintf("c%d", i%7),
			Contact: messaging.Contact{ID: "ctc_1"}, Text: strings.Repeat("x", 200), CreatedAt: base.Add(time.Duration(i) * time.Millisecond)})
	}
	require.NoError(t, src.Driver().(driver.MessageImporter).ImportMessages(ctx, msgs))
	// The keys are the source's own: a copy refuses a row whose key is not.
	ins, err := src.Driver().(interface {
		InstallationID(context.Context) (string, error)
	}).InstallationID(ctx)
	require.NoError(t, err)
	for i := range nFiles {
		body := bytes.Repeat([]byte{byte(i)}, 20000+i)
		sum := sha256.Sum256(body)
		a := messaging.Attachment{ID: fmt.Sprintf("att_%04d", i), ConversationID: "c1", UploaderID: "ctc_1", Filename: "f.bin",
			FileType: "application/octet-stream", FileSize: int64(len(body)), SHA256: hex.EncodeToString(sum[:]),
			Key: attachments.KeyPrefix + ins + "/" + fmt.Sprintf("att_%04d", i), CreatedAt: base}
		require.NoError(t, bucket.Put(ctx, a.Key, a.FileType, bytes.NewReader(body)))
		require.NoError(t, src.Driver().CreateAttachment(ctx, a, nil))
	}
	require.NoError(t, bucket.Close())
	require.NoError(t, src.Close())

	dsns := map[string]string{"sqlite": filepath.Join(t.TempDir(), "copy.db")}
	for _, e := range backendtest.SQL(t) {
		if e.Name == "postgres" {
			dsns[e.Name] = e.DSN(t)
		}
	}
	for name, dsn := range dsns {
		t.Run(name, func(t *testing.T) {
			files := fileURL(filepath.Join(t.TempDir(), "files"))
			args := []string{"copy", "-data", data, "-to-db", dsn, "-to-bucket", files, "-batch", "500", "-workers", "2"}
			// How long a whole copy takes, to kill the others at random
			// points of theirs: in the rows, the files or the verification.
			began := time.Now()
			out, errs, err := runBin(t, bin, "copy", "-data", data, "-to-db", filepath.Join(t.TempDir(), "timing.db"),
				"-to-bucket", fileURL(filepath.Join(t.TempDir(), "timing")), "-batch", "500", "-workers", "2")
			require.NoError(t, err, "%s%s", out, errs)
			whole := time.Since(began)
			for kill := range 5 {
				cmd := exec.Command(bin, args...)
				var errb bytes.Buffer
				cmd.Stderr = &errb
				require.NoError(t, cmd.Start())
				time.Sleep(time.Duration(rand.Int64N(int64(whole))))
				require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
				err := cmd.Wait()
				t.Logf("kill %d: %v after: %s", kill, err, lastLine(errb.String()))
			}
			out, errs, err = runBin(t, bin, args...)
			require.NoError(t, err, "%s%s", out, errs)
			assert.Contains(t, out, fmt.Sprintf("%d messages", nMsgs))
			assert.Contains(t, out, fmt.Sprintf("files: %d", nFiles))
			assert.Contains(t, out, "verified:")
			out, errs, err = runBin(t, bin, append(args, "-verify")...)
			require.NoError(t, err, "%s%s", out, errs)
			assert.Contains(t, out, "verified:")
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// The move of issue 30, as a host would make it: "server copy" while the
// source serves, then both servers live at once, each uploading and
// reconciling (at every start, with a grace of a minute that the planted
// files without a row are older than), over the source's own folder (a
// database-only move) or a new one. A copy is an installation of its own:
// neither server moves aside, deletes or loses a file of the other's, made
// before the copy or after it.
//
// The grace is not shorter: reconcile runs while the server serves, and
// an upload whose object is older than the grace and whose row is not yet
// written is one that failed, as far as reconcile can tell.
func TestCopyCommandBothLive(t *testing.T) {
	bin := buildServer(t)
	tokens := "alice=tok-alice"
	for _, databaseOnly := range []bool{true, false} {
		name := map[bool]string{true: "database_only", false: "database_and_bucket"}[databaseOnly]
		t.Run(name, func(t *testing.T) {
			data := t.TempDir()
			files := filepath.Join(data, "files") // the source's default folder
			dstFiles := files
			if !databaseOnly {
				dstFiles = filepath.Join(t.TempDir(), "files")
			}
			dstDB := filepath.Join(t.TempDir(), "copy.db")
			srcArgs := []string{"-data", data, "-tokens", tokens, "-orphan-grace", "1m"}
			dstArgs := []string{"-db", dstDB, "-bucket", fileURL(dstFiles), "-tokens", tokens, "-orphan-grace", "1m"}
			srcAddr, dstAddr := testnet.FreeAddr(t), testnet.FreeAddr(t)
			run := func(addr string, args []string) *exec.Cmd {
				return start(t, bin, append([]string{"-addr", addr}, args...)...)
			}
			stop := func(cmd *exec.Cmd) {
				require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
				_, _ = cmd.Process.Wait()
			}
			installations := func(dir string) []string {
				es, err := os.ReadDir(filepath.Join(dir, attachments.KeyPrefix))
				require.NoError(t, err)
				var names []string
				for _, e := range es {
					names = append(names, e.Name())
				}
				return names
			}

			src := run(srcAddr, srcArgs)
			want := map[string]map[string]string{"src": {}, "dst": {}} // server → attachment → bytes
			put := func(server, addr, content string) {
				want[server][upload(t, "http://"+addr, "tok-alice", "f.txt", content)] = content
			}
			put("src", srcAddr, "before the copy")
			srcIns := installations(files)
			require.Len(t, srcIns, 1)
			out, errs, err := runBin(t, bin, "copy", "-data", data, "-to-db", dstDB, "-to-bucket", fileURL(dstFiles))
			require.NoError(t, err, "%s%s", out, errs)
			for id, content := range want["src"] {
				want["dst"][id] = content // the copy serves what it copied
			}
			dst := run(dstAddr, dstArgs)
			for i := range 3 {
				put("src", srcAddr, fmt.Sprintf("source, after the copy %d", i))
				put("dst", dstAddr, fmt.Sprintf("copy, after the copy %d", i))
			}
			dstIns := slices.DeleteFunc(installations(dstFiles), func(s string) bool { return s == srcIns[0] })
			require.Len(t, dstIns, 1, "the copy writes under an installation id of its own")

			// Each server reconciles at start, twice, in turn. Before each
			// start a file of that server's with no row is planted, as a
			// failed upload leaves one, and the test waits until reconcile
			// has moved it aside: proof that it ran, over both servers'
			// files, before the next step. After a database-only move the
			// source's prefix is handed over, shared and frozen: its stray
			// stays where it is.
			var strays []string
			n := 0
			restart := func(cmd *exec.Cmd, addr string, args []string, dir, ins string, frozen bool) *exec.Cmd {
				stop(cmd)
				n++
				key := attachments.KeyPrefix + ins + "/att_stray" + strconv.Itoa(n)
				planted := filepath.Join(dir, key)
				require.NoError(t, os.WriteFile(planted, []byte("no row"), 0o644))
				past := time.Now().Add(-time.Hour)
				require.NoError(t, os.Chtimes(planted, past, past))
				cmd = run(addr, args)
				aside := filepath.Join(dir, attachments.OrphanPrefix+key)
				movedAside := func() bool { _, err := os.Stat(aside); return err == nil }
				if frozen {
					assert.Never(t, movedAside, time.Second, 20*time.Millisecond, "a frozen prefix is not swept: %s", key)
					return cmd
				}
				require.Eventually(t, movedAside, 30*time.Second, 20*time.Millisecond, "reconcile moves aside %s", key)
				strays = append(strays, aside)
				return cmd
			}
			for range 2 {
				src = restart(src, srcAddr, srcArgs, files, srcIns[0], databaseOnly)
				dst = restart(dst, dstAddr, dstArgs, dstFiles, dstIns[0], false)
			}
			put("dst", dstAddr, "copy, after the reconciles")
			restart(src, srcAddr, srcArgs, files, srcIns[0], databaseOnly)

			for server, addr := range map[string]string{"src": srcAddr, "dst": dstAddr} {
				for id, content := range want[server] {
					body := get(t, "http://"+addr, "/v1/attachments/"+id+"/f.txt", "tok-alice")
					assert.Equal(t, content, body, "%s serves its file %s", server, id)
				}
			}
			var aside []string
			for _, dir := range slices.Compact([]string{files, dstFiles}) {
				_ = filepath.WalkDir(filepath.Join(dir, attachments.OrphanPrefix), func(p string, d os.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						aside = append(aside, p)
					}
					return nil
				})
			}
			assert.ElementsMatch(t, strays, aside, "only the planted files are moved aside")
		})
	}
}
