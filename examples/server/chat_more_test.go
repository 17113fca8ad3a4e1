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

// chatServer is the chat page and the API over in-memory storage whose
// bucket is blobs, with the callers alice (token alice-secret) and bob
// (bob-secret).
type chatServer struct {
	url        string
	msgs       *messaging.Service
	files      *attachments.Service
	alice, bob messaging.Contact
}

func newChatServer(t *testing.T, blobs attachments.BlobStore, opts *httpadapter.Options) *chatServer {
	t.Helper()
	return newChatServerWith(t, blobs, opts, chatServerConfig{})
}

// chatServerConfig is what some tests of the page change in its server.
type chatServerConfig struct {
	// now is the services' clock; nil means time.Now.
	now func() time.Time
	// wrap, when set, stands between the server and its handler.
	wrap func(http.Handler) http.Handler
	// uploadOrigins are the bucket's origins the page may send files to.
	uploadOrigins []string
}

func newChatServerWith(t *testing.T, blobs attachments.BlobStore, opts *httpadapter.Options, cfg chatServerConfig) *chatServer {
	t.Helper()
	ctx := t.Context()
	store := memstore.New()
	msgs, err := messaging.New(ctx, store, blobs, &messaging.Options{Now: cfg.now})
	require.NoError(t, err)
	s := &chatServer{msgs: msgs, files: msgs.Files()}
	s.alice, err = s.msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	s.bob, err = s.msgs.SaveContact(ctx, messaging.Contact{Username: "bob"})
	require.NoError(t, err)
	o := *opts
	o.Authenticator = httpadapter.StaticTokens(map[string]messaging.Contact{"alice-secret": s.alice, "bob-secret": s.bob})
	o.Events = true
	api, err := httpadapter.New(s.msgs, &o)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/", api)
	mountChat(mux, o.Authenticator, o.Limit, cfg.uploadOrigins...)
	var h http.Handler = mux
	if cfg.wrap != nil {
		h = cfg.wrap(mux)
	}
	page := httptest.NewServer(h)
	t.Cleanup(func() { _ = msgs.Close(); page.Close() })
	s.url = page.URL
	return s
}

// chatTab starts headless Chromium (PARLEY_TEST_CHROMIUM; the test is
// skipped without it) and signs in to the chat page at base with token in
// a tab, which it returns.
func chatTab(t *testing.T, base, token string) context.Context {
	t.Helper()
	chromium := os.Getenv("PARLEY_TEST_CHROMIUM")
	if chromium == "" {
		t.Skip("set PARLEY_TEST_CHROMIUM to the path of a Chromium binary (apt-get install chromium: /usr/bin/chromium) to run the chat page in a browser")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // as root
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	)...)
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelTab)
	require.NoError(t, chromedp.Do(tab,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#signin-form button")),
		chromedp.WaitVisible(chromedp.CSS("#app")),
	), "sign in")
	return tab
}

// openConversation opens the conversation id in tab.
func openConversation(t *testing.T, tab context.Context, id string) {
	t.Helper()
	require.NoError(t, chromedp.Do(tab,
		chromedp.SendKeys(chromedp.CSS("#open-id"), id),
		chromedp.Click(chromedp.CSS("#open-form button")),
		chromedp.WaitVisible(chromedp.CSS(`#conversations li.current[data-id="`+id+`"]`)),
	), "open "+id)
}

// TestChatPageSignedDownload: with -signed-urls a file_url is the bucket's,
// on another origin; the chat page downloads it without the token (the
// bucket refuses two kinds of authentication) and its Content Security
// Policy does not stop it.
func TestChatPageSignedDownload(t *testing.T) {
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
	s := newChatServer(t, blobs, &httpadapter.Options{SignedURLExpiry: time.Minute})

	att, err := s.files.Upload(ctx, s.alice, attachments.Upload{Filename: "notes.txt", ConversationID: "general", Body: strings.NewReader("the minutes\n")})
	require.NoError(t, err)
	_, err = s.msgs.Create(ctx, s.alice, messaging.NewMessage{ConversationID: "general", Text: "the notes", Attachments: []string{att.ID}})
	require.NoError(t, err)

	tab := chatTab(t, s.url, "alice-secret")
	openConversation(t, tab, "general")
	require.NoError(t, chromedp.Do(tab, chromedp.WaitVisible(chromedp.CSS("#list .download"))))
	downloads := t.TempDir()
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

// TestChatPageHiddenTabKeepsUnread: a message that arrives while the page
// is hidden (another tab in front) stays unread until the page is shown
// again, with the conversation open.
func TestChatPageHiddenTabKeepsUnread(t *testing.T) {
	ctx := t.Context()
	s := newChatServer(t, memstore.NewBlobStore(), &httpadapter.Options{})
	_, err := s.msgs.Create(ctx, s.bob, messaging.NewMessage{ConversationID: "general", Text: "hello"})
	require.NoError(t, err)
	tab := chatTab(t, s.url, "alice-secret")
	openConversation(t, tab, "general")
	unread := func() int64 {
		c, err := s.msgs.Conversation(ctx, s.alice, "general")
		require.NoError(t, err)
		return c.UnreadCount
	}
	require.Eventually(t, func() bool { return unread() == 0 }, 10*time.Second, 20*time.Millisecond, "the open conversation is read")

	// The page is hidden, as when its tab is behind another.
	_, err = chromedp.Run(tab, chromedp.Evaluate[any](`Object.defineProperty(document, "hidden", {configurable: true, get: () => true}); document.dispatchEvent(new Event("visibilitychange"))`))
	require.NoError(t, err)
	_, err = s.msgs.Create(ctx, s.bob, messaging.NewMessage{ConversationID: "general", Text: "are you there?"})
	require.NoError(t, err)
	_, err = chromedp.Run(tab, chromedp.Poll[any](`[...document.querySelectorAll("#list .text")].some(e => e.textContent === "are you there?")`, chromedp.WithPollingInterval(20*time.Millisecond)))
	require.NoError(t, err, "the hidden page shows the new message")
	require.Never(t, func() bool { return unread() == 0 }, time.Second, 50*time.Millisecond, "the message stays unread while the page is hidden")

	_, err = chromedp.Run(tab, chromedp.Evaluate[any](`Object.defineProperty(document, "hidden", {configurable: true, get: () => false}); document.dispatchEvent(new Event("visibilitychange"))`))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return unread() == 0 }, 10*time.Second, 20*time.Millisecond, "shown again, the page marks it read")
}
