package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/testnet"
)

// TestChatPageEndToEnd drives the chat page in headless Chromium, as two
// people in two tabs: alice and bob sign in with their tokens, chat with
// each other live, bob's unread count rises and clears, alice edits and bob
// reacts and takes the reaction back, alice uploads a file that bob
// downloads, and bob pages back through a long conversation by scrolling
// up. It saves screenshots along the way (into PARLEY_TEST_SCREENSHOTS, or
// a temporary folder it names).
//
// It needs Chromium: PARLEY_TEST_CHROMIUM is the path of its binary
// (/usr/bin/chromium from Debian's chromium package; .ci/run installs it).
func TestChatPageEndToEnd(t *testing.T) {
	chromium := os.Getenv("PARLEY_TEST_CHROMIUM")
	if chromium == "" {
		t.Skip("set PARLEY_TEST_CHROMIUM to the path of a Chromium binary (apt-get install chromium: /usr/bin/chromium) to run the chat page in a browser")
	}
	shots := os.Getenv("PARLEY_TEST_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(shots, 0o755))
	t.Logf("screenshots in %s", shots)

	addr := testnet.FreeAddr(t)
	base := "http://" + addr
	srvCtx, stopServer := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(srvCtx, []string{"-addr", addr, "-data", t.TempDir()}, io.Discard, io.Discard) }()
	t.Cleanup(func() {
		stopServer()
		<-done
	})
	waitListening(t, addr)

	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // as root
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1100, 760),
		// Nothing outside this machine answers: no background traffic.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		// Two tabs chat at once: neither is slowed down for being hidden.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
	)...)
	defer cancelAlloc()
	alice, cancelAlice := chromedp.NewContext(allocCtx)
	defer cancelAlice()
	require.NoError(t, chromedp.Do(alice), "start Chromium")
	bob, cancelBob := chromedp.NewContext(alice) // a second tab of the same browser
	defer cancelBob()

	shot := func(tab context.Context, name string) {
		t.Helper()
		png, err := chromedp.Run(tab, chromedp.FullScreenshot(100)) // quality 100: a PNG
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644))
	}
	// until waits for a JavaScript expression to be true in tab.
	until := func(tab context.Context, what, expr string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(tab, 30*time.Second)
		defer cancel()
		_, err := chromedp.Run(wctx, chromedp.Poll[any](expr, chromedp.WithPollingInterval(50*time.Millisecond)))
		require.NoError(t, err, what)
	}
	do := func(tab context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(tab, actions...), what)
	}
	js := func(tab context.Context, what, expr string) {
		t.Helper()
		_, err := chromedp.Run(tab, chromedp.Evaluate[any](expr))
		require.NoError(t, err, what)
	}
	texts := func(tab context.Context) []string {
		t.Helper()
		got, err := chromedp.Run(tab, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#list .text")].map(e => e.textContent)`))
		require.NoError(t, err)
		return got
	}
	// item is the JavaScript of the list item of the message with this text.
	item := func(text string) string {
		return fmt.Sprintf(`[...document.querySelectorAll("#list > li")].find(li => li.querySelector(".text").textContent === %q)`, text)
	}
	shows := func(text string) string { return "!!" + item(text) }
	signIn := func(tab context.Context, token string) {
		t.Helper()
		do(tab, "sign in",
			chromedp.Navigate(base+"/"),
			chromedp.WaitVisible(chromedp.CSS("#token")),
			chromedp.SendKeys(chromedp.CSS("#token"), token),
			chromedp.Click(chromedp.CSS("#signin-form button")),
			chromedp.WaitVisible(chromedp.CSS("#app")),
		)
		until(tab, "the event stream is open", `document.getElementById("live").dataset.state === "open"`)
	}
	send := func(tab context.Context, text string) {
		t.Helper()
		do(tab, "send "+text,
			chromedp.SendKeys(chromedp.CSS("#text"), text),
			chromedp.Click(chromedp.CSS("#send-form button[type=submit]")),
		)
		until(tab, "the sender sees "+text, shows(text))
		// The event stream may show it before the send's answer empties
		// the composer: wait for that, lest the next text be typed into it.
		until(tab, "the composer is empty again", `document.getElementById("text").value === ""`)
	}
	unread := func(conv string) string {
		return fmt.Sprintf(`(document.querySelector('#conversations li[data-id=%q] .unread') || {}).textContent`, conv)
	}

	// Sign in: a wrong token is refused, the right ones let each in.
	do(bob, "a wrong token",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), "not-a-token"),
		chromedp.Click(chromedp.CSS("#signin-form button")),
	)
	until(bob, "a wrong token is refused", `document.getElementById("signin-error").textContent.includes("not known")`)
	shot(bob, "01-signin-refused")
	signIn(alice, "alice-secret")
	signIn(bob, "bob-secret")

	// alice opens a conversation and writes; bob, elsewhere, sees the
	// conversation appear with one unread message, then two.
	do(alice, "open general",
		chromedp.SendKeys(chromedp.CSS("#open-id"), "general"),
		chromedp.Click(chromedp.CSS("#open-form button")),
		chromedp.WaitVisible(chromedp.CSS("#send-form")),
	)
	send(alice, "hello bob")
	until(bob, "bob's unread count is 1", unread("general")+` === "1"`)
	send(alice, "are you there?")
	until(bob, "bob's unread count rises to 2", unread("general")+` === "2"`)
	shot(bob, "02-bob-unread")

	// bob opens it: the messages are there, oldest at the top, and his
	// unread count clears, on the page and on the server.
	do(bob, "open general", chromedp.Click(chromedp.CSS(`#conversations li[data-id="general"]`)))
	until(bob, "bob sees alice's messages", shows("hello bob")+" && "+shows("are you there?"))
	order := texts(bob)
	assert.Equal(t, []string{"hello bob", "are you there?"}, order, "newest at the bottom")
	until(bob, "bob's unread count clears", unread("general")+` === undefined`)
	assert.Eventually(t, func() bool { return unreadOnServer(t, base, "bob-secret", "general") == 0 },
		10*time.Second, 20*time.Millisecond, "the read position moved on the server")

	// bob answers; alice sees it arrive live.
	send(bob, "hi alice")
	until(alice, "alice sees bob's answer live", shows("hi alice"))

	// alice edits her first message; bob sees the new text live.
	js(alice, "edit", item("hello bob")+`.querySelector(".edit").click()`)
	js(alice, "save the edit", `(() => {
		const form = document.querySelector(".edit-form");
		form.querySelector("textarea").value = "hello bob, edited";
		form.querySelector("button[type=submit]").click();
	})()`)
	until(bob, "bob sees the edit live", shows("hello bob, edited"))

	// bob reacts; alice sees it; bob takes it back; alice sees it gone.
	js(bob, "open the reactions", item("hello bob, edited")+`.querySelector('.actions .react-open').click()`)
	js(bob, "react", `document.querySelector('#picker button[data-name="👍"]').click()`)
	reaction := item("hello bob, edited") + `.querySelector('.reaction[data-name="👍"]')`
	until(alice, "alice sees bob's reaction, and that it is his", `(`+reaction+` || {}).textContent === "👍 1 bob"`)
	until(bob, "bob's reaction shows as his", `(`+reaction+` || {classList: {contains: () => false}}).classList.contains("mine")`)
	shot(alice, "03-alice-chat")
	js(bob, "take the reaction back", reaction+`.click()`)
	until(alice, "alice sees the reaction go", reaction+` === null`)

	// alice uploads a file with a message; bob downloads it.
	file := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(file, []byte("the minutes of the meeting\n"), 0o644))
	do(alice, "attach a file", chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{file}))
	send(alice, "the notes")
	until(bob, "bob sees the attachment", item("the notes")+`?.querySelector(".download")?.textContent.includes("notes.txt")`)
	until(bob, "the conversation list shows the newest message", `document.querySelector('#conversations li[data-id="general"] .preview').textContent === "alice: the notes"`)
	downloads := t.TempDir()
	_, err := chromedp.CallBrowser(bob, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads})
	require.NoError(t, err, "allow downloads")
	js(bob, "download", item("the notes")+`.querySelector(".download").click()`)
	var got []byte
	require.Eventually(t, func() bool {
		got, _ = os.ReadFile(filepath.Join(downloads, "notes.txt"))
		return len(got) > 0
	}, 30*time.Second, 50*time.Millisecond, "bob's browser saves notes.txt")
	assert.Equal(t, "the minutes of the meeting\n", string(got))
	shot(bob, "04-bob-chat")

	// A long conversation: the newest page first, older pages on scrolling up.
	for i := range 45 {
		require.Equal(t, http.StatusCreated, call(t, "POST", base+"/v1/messages", "alice-secret",
			url.Values{"conversation_id": {"history"}, "message": {"old message " + strconv.Itoa(i)}}, nil))
	}
	do(bob, "open history",
		chromedp.SendKeys(chromedp.CSS("#open-id"), "history"),
		chromedp.Click(chromedp.CSS("#open-form button")),
	)
	until(bob, "the newest page", shows("old message 44")+` && document.querySelectorAll("#list > li").length === 30`)
	js(bob, "scroll up", `document.getElementById("messages").scrollTop = 0`)
	until(bob, "older messages on scrolling up", shows("old message 0")+` && document.querySelectorAll("#list > li").length === 45`)
	order = texts(bob)
	require.Len(t, order, 45)
	assert.Equal(t, "old message 0", order[0])
	assert.Equal(t, "old message 44", order[44])
	shot(bob, "05-bob-history")
}

// unreadOnServer is the caller's unread count of a conversation, as the API
// tells it.
func unreadOnServer(t *testing.T, base, token, conv string) int {
	t.Helper()
	var c struct {
		Unread int `json:"unread_count"`
	}
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/v1/conversations/"+conv, token, nil, &c))
	return c.Unread
}
