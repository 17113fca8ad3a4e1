package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// signingBlobs is an in-memory bucket that signs URLs of the bucket server
// at base, as S3 does with -signed-urls.
type signingBlobs struct {
	*memstore.BlobStore
	base string
}

func (b signingBlobs) SignedURL(_ context.Context, key, filename, _ string, _ time.Duration) (string, error) {
	return b.base + "/" + key + "?signature=abc&filename=" + url.QueryEscape(filename), nil
}

// TestChatPageSignedDownload: with -signed-urls a file_url is the bucket's,
// on another origin; the chat page downloads it without the token (the
// bucket refuses two kinds of authentication) and its Content Security
// Policy does not stop it.
func TestChatPageSignedDownload(t *testing.T) {
	chromium := os.Getenv("PARLEY_TEST_CHROMIUM")
	if chromium == "" {
		t.Skip("set PARLEY_TEST_CHROMIUM to the path of a Chromium binary (apt-get install chromium: /usr/bin/chromium) to run the chat page in a browser")
	}
	ctx := t.Context()
	blobs := signingBlobs{BlobStore: memstore.NewBlobStore()}
	bucket := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" || r.URL.Query().Get("signature") != "abc" {
			http.Error(w, "one kind of authentication only", http.StatusBadRequest)
			return
		}
		body, err := blobs.Open(r.Context(), strings.TrimPrefix(r.URL.Path, "/"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer body.Close()
		// A type browsers save rather than show (a text file would open in
		// the new tab).
		w.Header().Set("Content-Disposition", attachments.ContentDisposition("application/octet-stream", r.URL.Query().Get("filename")))
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = io.Copy(w, body)
	}))
	t.Cleanup(bucket.Close)
	blobs.base = bucket.URL

	store := memstore.New()
	msgs := messaging.New(store, nil)
	files := attachments.New(store, blobs, msgs, nil)
	feed, err := events.New(ctx, store, msgs, nil)
	require.NoError(t, err)
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	auth := httpadapter.StaticTokens(map[string]messaging.Contact{"alice-secret": alice})
	api, err := httpadapter.New(msgs, files, &httpadapter.Options{Authenticator: auth, Events: feed, SignedURLExpiry: time.Minute})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/", api)
	mountChat(mux, auth)
	page := httptest.NewServer(mux)
	t.Cleanup(func() { _ = feed.Close(); page.Close() })

	att, err := files.Upload(ctx, alice, attachments.Upload{Filename: "notes.txt", ConversationID: "general", Body: strings.NewReader("the minutes\n")})
	require.NoError(t, err)
	_, err = msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "general", Text: "the notes", Attachments: []string{att.ID}})
	require.NoError(t, err)

	bctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(bctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // as root
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	)...)
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(allocCtx)
	defer cancelTab()
	downloads := t.TempDir()
	require.NoError(t, chromedp.Do(tab,
		chromedp.Navigate(page.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), "alice-secret"),
		chromedp.Click(chromedp.CSS("#signin-form button")),
		chromedp.WaitVisible(chromedp.CSS("#app")),
		chromedp.SendKeys(chromedp.CSS("#open-id"), "general"),
		chromedp.Click(chromedp.CSS("#open-form button")),
		chromedp.WaitVisible(chromedp.CSS("#list .download")),
	), "sign in and open the conversation")
	_, err = chromedp.CallBrowser(tab, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads})
	require.NoError(t, err, "allow downloads")
	// A click of the mouse, as a person's: a page may open a tab only then.
	require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.CSS("#list .download"))), "click the download")
	var got []byte
	ok := assert.Eventually(t, func() bool {
		got, _ = os.ReadFile(filepath.Join(downloads, "notes.txt"))
		return len(got) > 0
	}, 20*time.Second, 50*time.Millisecond, "the browser saves notes.txt from the bucket")
	if !ok {
		shown, _ := chromedp.Run(tab, chromedp.Evaluate[string](`document.getElementById("error").textContent`))
		t.Logf("the page shows the error %q", shown)
	}
	assert.Equal(t, "the minutes\n", string(got))
}
