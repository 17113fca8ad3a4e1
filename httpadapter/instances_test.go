package httpadapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/blobstore"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/sqlstore"
)

// instance is one app instance: its own connection pool, services and
// handler, over a database and a bucket that other instances share.
type instance struct {
	url  string
	msgs *messaging.Service
}

func startInstance(t *testing.T, ctx context.Context, dsn, bucketURL string, tokens map[string]string) *instance {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	store, err := sqlstore.Open(ctx, dsn, &sqlstore.Options{Logger: quiet})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	require.NoError(t, store.Migrate(ctx)) // every instance migrates at start
	blobs, err := blobstore.Open(ctx, bucketURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = blobs.Close() })
	msgs := svctest.New(t, store, blobs, &messaging.Options{Logger: quiet, Files: &attachments.Options{Logger: quiet}})
	table := map[string]messaging.Contact{}
	for user, tok := range tokens {
		c, err := msgs.SaveContact(ctx, messaging.Contact{Username: user})
		require.NoError(t, err)
		table[tok] = c
	}
	api, err := httpadapter.New(msgs, &httpadapter.Options{
		Authenticator: httpadapter.StaticTokens(table), Logger: quiet})
	require.NoError(t, err)
	srv := httptest.NewServer(checkAPI(t, api, false))
	t.Cleanup(srv.Close)
	return &instance{url: srv.URL, msgs: msgs}
}

// TestInstancesShareOneDatabase runs two handlers on two connection pools
// over one database and one bucket, as app instances behind a load
// balancer: what is written through one is read through the other, and
// concurrent merges through both lose nothing.
func TestInstancesShareOneDatabase(t *testing.T) {
	for _, engine := range backendtest.SQL(t) {
		t.Run(engine.Name, func(t *testing.T) {
			ctx := context.Background()
			dsn := engine.DSN(t)
			bucket := "file://" + filepath.ToSlash(t.TempDir()) + "?no_tmp_dir=true"
			tokens := map[string]string{}
			for i := range 40 {
				tokens[fmt.Sprintf("user%02d", i)] = fmt.Sprintf("tok%02d", i)
			}
			// Both start at once, as instances of one deployment do: each
			// migrates and makes its contacts.
			var a, b *instance
			var wg sync.WaitGroup
			errs := make(chan error, 2)
			for range 2 {
				wg.Go(func() { errs <- startConcurrently(ctx, dsn, tokens) })
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err, "concurrent start")
			}
			a = startInstance(t, ctx, dsn, bucket, tokens)
			b = startInstance(t, ctx, dsn, bucket, tokens)

			// A message and a file written through a…
			m := send(t, "POST", a.url+"/v1/messages", "tok00", url.Values{"conversation_id": {"shared"}, "message": {"hello"}}, http.StatusCreated)
			id := m["id"].(string)
			att := uploadTo(t, a.url, "tok00", "shared", "notes.txt", "shared bytes")
			send(t, "PUT", a.url+"/v1/messages/"+id, "tok00", url.Values{"attachments[]": {att}}, http.StatusOK)

			// …are read through b, bytes included.
			got := send(t, "GET", b.url+"/v1/messages/"+id, "tok01", nil, http.StatusOK)
			assert.Equal(t, "hello", got["message"])
			atts := got["attachments"].([]any)
			require.Len(t, atts, 1)
			fileURL := atts[0].(map[string]any)["file_url"].(string)
			assert.True(t, strings.HasPrefix(fileURL, b.url), "file_url %s is b's own route", fileURL)
			assert.Equal(t, "shared bytes", fetch(t, fileURL, "tok01"))

			// Reactions from forty callers, half through each instance, at once.
			for i := range 40 {
				inst := a
				if i%2 == 1 {
					inst = b
				}
				user := fmt.Sprintf("user%02d", i)
				wg.Go(func() {
					status, err := trySend("PUT", inst.url+"/v1/messages/"+id, tokens[user], url.Values{"reactions[wave][]": {user}})
					assert.NoError(t, err)
					assert.Equal(t, http.StatusOK, status, "reaction of %s", user)
				})
			}
			wg.Wait()
			got = send(t, "GET", a.url+"/v1/messages/"+id, "tok00", nil, http.StatusOK)
			reactions := got["reactions"].([]any)
			require.Len(t, reactions, 1)
			assert.Len(t, reactions[0].(map[string]any)["wave"], 40)

			// A delete through b is seen by a: the message, the row and the file.
			send(t, "DELETE", b.url+"/v1/messages/"+id, "tok00", nil, http.StatusOK)
			send(t, "GET", a.url+"/v1/messages/"+id, "tok00", nil, http.StatusNotFound)
			send(t, "GET", a.url+"/v1/attachments/"+att, "tok00", nil, http.StatusNotFound)
		})
	}
}

// startConcurrently does what an instance does at start (migrate, make its
// contacts) and stops, returning the first error.
func startConcurrently(ctx context.Context, dsn string, tokens map[string]string) error {
	store, err := sqlstore.Open(ctx, dsn, &sqlstore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	msgs, err := messaging.New(ctx, store, memstore.NewBlobStore(), &messaging.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer msgs.Close()
	for user := range tokens {
		if _, err := msgs.SaveContact(ctx, messaging.Contact{Username: user}); err != nil {
			return err
		}
	}
	return nil
}

// trySend makes a form request from any goroutine and returns the status.
func trySend(method, u, token string, form url.Values) (int, error) {
	req, err := http.NewRequest(method, u, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	return res.StatusCode, err
}

// send makes a form request and decodes the JSON answer, checking the status.
func send(t *testing.T, method, u, token string, form url.Values, want int) map[string]any {
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
	var v map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&v))
	require.Equal(t, want, res.StatusCode, "%s %s: %v", method, u, v)
	return v
}

func uploadTo(t *testing.T, base, token, conv, name, content string) string {
	t.Helper()
	body := multipartBody(field("conversation_id", conv), file(name, "text/plain", content))
	req, err := http.NewRequest("POST", base+"/v1/attachments", strings.NewReader(body.data))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", body.ctype)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var v map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&v))
	require.Equal(t, http.StatusCreated, res.StatusCode, "%v", v)
	return v["id"].(string)
}

func fetch(t *testing.T, u, token string) string {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", b)
	return string(b)
}
