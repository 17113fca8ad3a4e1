package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/internal/testnet"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/blobstore"
	"github.com/parleychat/parley/storage/sqlstore"
)

var crashCycles = flag.Int("crash.cycles", 3, "SIGKILL cycles per engine of TestCrashUnderLoad")

// TestCrashUnderLoad is the crash test on every engine (issue 10): the
// server runs under a load of messages, reactions and uploads from
// concurrent clients and is killed with SIGKILL at a random moment, then
// restarted on the same database and folder, -crash.cycles times. After
// each restart every write that got a 2xx must be there exactly once, and
// nothing may be half-made: every attachment row has its whole file (size
// and SHA-256), and once Reconcile has run past the grace period no object
// is left without its row.
func TestCrashUnderLoad(t *testing.T) {
	bin := buildServer(t)

	var totalAcked, totalLost, totalCycles atomic.Int64
	for _, eng := range backendtest.SQL(t) {
		t.Run(eng.Name, func(t *testing.T) {
			data := t.TempDir()
			dsn := filepath.Join(data, "parley.db")
			if eng.Name != "sqlite" {
				dsn = eng.DSN(t)
			}
			w := &ledger{msgs: map[string]string{}, files: map[string]string{}}
			for cycle := range *crashCycles {
				addr := testnet.FreeAddr(t)
				srv := startServer(t, bin, addr, data, dsn)
				load(t, "http://"+addr, w, time.Duration(300+mrand.IntN(700))*time.Millisecond)
				require.NoError(t, srv.Process.Signal(syscall.SIGKILL))
				_, _ = srv.Process.Wait()
				totalCycles.Add(1)

				addr = testnet.FreeAddr(t)
				srv = startServer(t, bin, addr, data, dsn)
				lost := w.verify(t, "http://"+addr)
				totalLost.Add(int64(lost))
				t.Logf("cycle %d: %d messages, %d reactions, %d files acknowledged so far; %d lost", cycle+1, len(w.msgs), len(w.reactions), len(w.files), lost)
				require.NoError(t, srv.Process.Signal(syscall.SIGTERM))
				_, _ = srv.Process.Wait()
				assertNothingHalfMade(t, data, dsn)
			}
			totalAcked.Add(int64(len(w.msgs) + len(w.reactions) + len(w.files)))
		})
	}
	t.Logf("crash test: %d SIGKILL cycles, %d acknowledged writes checked, %d lost", totalCycles.Load(), totalAcked.Load(), totalLost.Load())
}

// startServer runs the binary and waits until it answers.
func startServer(t *testing.T, bin, addr, data, dsn string) *exec.Cmd {
	t.Helper()
	return start(t, bin, "-addr", addr, "-data", data, "-db", dsn, "-tokens", "alice=tok-alice,bob=tok-bob")
}

// ledger records the writes the server acknowledged.
type ledger struct {
	mu        sync.Mutex
	msgs      map[string]string // message id → text
	reactions []reaction
	files     map[string]string // attachment id → SHA-256 of the bytes sent
}

type reaction struct{ msg, name, user string }

// load drives the server from 6 clients for d, recording what succeeds.
// Requests cut by the kill fail; those are not recorded.
func load(t *testing.T, base string, w *ledger, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	client := &http.Client{Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	for g := range 6 {
		user := []string{"alice", "bob"}[g%2]
		wg.Go(func() {
			var own []string
			for i := 0; ctx.Err() == nil; i++ {
				switch op := mrand.IntN(4); {
				case op < 2 || len(own) == 0:
					text := fmt.Sprintf("%s-%d-%d-%s", user, g, i, rand.Text()[:6])
					var m struct{ ID string }
					if crashPost(client, base+"/v1/messages", user, "application/x-www-form-urlencoded",
						url.Values{"conversation_id": {"crash"}, "message": {text}}.Encode(), &m) {
						w.mu.Lock()
						w.msgs[m.ID] = text
						w.mu.Unlock()
						own = append(own, m.ID)
					}
				case op == 2:
					msg := own[mrand.IntN(len(own))]
					name := fmt.Sprintf("r%d", mrand.IntN(5))
					if crashPut(client, base+"/v1/messages/"+msg, user, url.Values{"reactions[" + name + "][]": {user}}.Encode()) {
						w.mu.Lock()
						w.reactions = append(w.reactions, reaction{msg, name, user})
						w.mu.Unlock()
					}
				default:
					data := make([]byte, 1+mrand.IntN(96<<10))
					_, _ = rand.Read(data)
					var body bytes.Buffer
					mw := multipart.NewWriter(&body)
					_ = mw.WriteField("conversation_id", "crash")
					if mrand.IntN(2) == 0 {
						_ = mw.WriteField("message_id", own[mrand.IntN(len(own))])
					}
					fw, _ := mw.CreateFormFile("file", "f.bin")
					_, _ = fw.Write(data)
					_ = mw.Close()
					var a struct{ ID string }
					if crashPost(client, base+"/v1/attachments", user, mw.FormDataContentType(), body.String(), &a) {
						sum := sha256.Sum256(data)
						w.mu.Lock()
						w.files[a.ID] = hex.EncodeToString(sum[:])
						w.mu.Unlock()
					}
				}
			}
		})
	}
	wg.Wait()
}

func crashPost(c *http.Client, u, user, ctype, body string, out any) bool {
	req, _ := http.NewRequest("POST", u, bytes.NewReader([]byte(body)))
	req.Header.Set("Authorization", "Bearer tok-"+user)
	req.Header.Set("Content-Type", ctype)
	res, err := c.Do(req)
	if err != nil {
		return false
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode/100 != 2 {
		return false
	}
	return json.Unmarshal(b, out) == nil
}

func crashPut(c *http.Client, u, user, form string) bool {
	req, _ := http.NewRequest("PUT", u, bytes.NewReader([]byte(form)))
	req.Header.Set("Authorization", "Bearer tok-"+user)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := c.Do(req)
	if err != nil {
		return false
	}
	defer res.Body.Close()
	if _, err := io.ReadAll(res.Body); err != nil {
		return false
	}
	return res.StatusCode == http.StatusOK
}

// verify checks every acknowledged write against the restarted server and
// returns how many are lost.
func (w *ledger) verify(t *testing.T, base string) int {
	t.Helper()
	type msgJSON struct {
		ID        string
		Message   string
		Reactions []map[string][]string
	}
	var all []msgJSON
	after := ""
	for {
		var page struct {
			Data    []msgJSON
			HasMore bool `json:"has_more"`
		}
		u := base + "/v1/messages?conversation_id=crash&limit=100"
		if after != "" {
			u += "&starting_after=" + after
		}
		require.Equal(t, http.StatusOK, call(t, "GET", u, "tok-alice", nil, &page))
		all = append(all, page.Data...)
		if !page.HasMore {
			break
		}
		after = page.Data[len(page.Data)-1].ID
	}
	byID := map[string]msgJSON{}
	texts := map[string]int{}
	for _, m := range all {
		byID[m.ID] = m
		texts[m.Message]++
	}
	lost := 0
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, text := range w.msgs {
		m, ok := byID[id]
		if !assert.True(t, ok, "acknowledged message %s is gone", id) {
			lost++
			continue
		}
		assert.Equal(t, text, m.Message)
		assert.Equal(t, 1, texts[text], "message %q is there %d times", text, texts[text])
	}
	for _, r := range w.reactions {
		found := false
		for _, rs := range byID[r.msg].Reactions {
			found = found || slices.Contains(rs[r.name], r.user)
		}
		if !assert.True(t, found, "acknowledged reaction %s of %s on %s is gone", r.name, r.user, r.msg) {
			lost++
		}
	}
	// Every file the server lists is whole, acknowledged or not.
	for after := ""; ; {
		var page struct {
			Data    []struct{ ID string }
			HasMore bool `json:"has_more"`
		}
		u := base + "/v1/attachments?conversation_id=crash&limit=100"
		if after != "" {
			u += "&starting_after=" + after
		}
		require.Equal(t, http.StatusOK, call(t, "GET", u, "tok-alice", nil, &page))
		for _, a := range page.Data {
			status, _ := download(t, base, a.ID)
			assert.Equal(t, http.StatusOK, status, "file %s is listed but cannot be read", a.ID)
		}
		if !page.HasMore {
			break
		}
		after = page.Data[len(page.Data)-1].ID
	}
	for id, sum := range w.files {
		status, got := download(t, base, id)
		if !assert.Equal(t, http.StatusOK, status, "acknowledged file %s", id) {
			lost++
			continue
		}
		assert.Equal(t, sum, got, "the bytes of file %s", id)
	}
	return lost
}

// download returns the status of a file's download and the SHA-256 of its
// bytes, after checking them against the row's.
func download(t *testing.T, base, id string) (int, string) {
	t.Helper()
	var a struct {
		FileURL string `json:"file_url"`
		SHA256  string
	}
	if status := call(t, "GET", base+"/v1/attachments/"+id, "tok-alice", nil, &a); status != http.StatusOK {
		return status, ""
	}
	req, _ := http.NewRequest("GET", a.FileURL, nil)
	req.Header.Set("Authorization", "Bearer tok-alice")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	h := sha256.New()
	_, err = io.Copy(h, res.Body)
	require.NoError(t, err)
	sum := hex.EncodeToString(h.Sum(nil))
	assert.Equal(t, a.SHA256, sum, "file %s: its bytes are not those its row names", id)
	return res.StatusCode, sum
}

// assertNothingHalfMade opens the stopped server's database and folder:
// every attachment row's object is whole, and once Reconcile has run past
// the grace period, the objects are exactly the rows'.
func assertNothingHalfMade(t *testing.T, data, dsn string) {
	t.Helper()
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	store, err := sqlstore.Open(ctx, dsn, &sqlstore.Options{Logger: quiet})
	require.NoError(t, err)
	defer store.Close()
	abs, _ := filepath.Abs(filepath.Join(data, "files"))
	blobs, err := blobstore.Open(ctx, (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: "metadata=skip&no_tmp_dir=true"}).String())
	require.NoError(t, err)
	defer blobs.Close()
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	files := svctest.New(t, store, blobs, &messaging.Options{Logger: quiet, Files: &attachments.Options{Now: later, Logger: quiet}}).Files()
	rep, err := files.Reconcile(ctx)
	require.NoError(t, err)
	assert.Zero(t, rep.Missing, "rows without their object")
	assert.Zero(t, rep.Unowned+rep.Failed, "%+v", rep)
	var rows []string
	for after := ""; ; {
		keys, err := store.Driver().(driver.KeyLister).AttachmentKeys(ctx, after, 500)
		require.NoError(t, err)
		rows = append(rows, keys...)
		if len(keys) < 500 {
			break
		}
		after = keys[len(keys)-1]
	}
	var objects []string
	require.NoError(t, blobs.List(ctx, attachments.KeyPrefix, func(o driver.Object) error {
		objects = append(objects, o.Key)
		return nil
	}))
	slices.Sort(rows)
	slices.Sort(objects)
	assert.Equal(t, rows, objects, "after Reconcile the objects are exactly the rows'")
}
