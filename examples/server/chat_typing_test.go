package main

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"

	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/storage/memstore"
)

// TestChatPageTyping (issue 29, item 7): while bob writes in a
// conversation, alice, who has it open in another tab, reads "bob is
// typing…"; it goes when bob's message comes, and bob never sees his own.
func TestChatPageTyping(t *testing.T) {
	browser := chatBrowser(t)
	for _, width := range chatWidths {
		t.Run(width.name, func(t *testing.T) {
			s := newChatServer(t, memstore.NewBlobStore(), &httpadapter.Options{})
			alice := openTab(t, browser, s.url, "alice-secret", width)
			bob := openTab(t, browser, s.url, "bob-secret", width)
			alice.open("general")
			bob.open("general")

			bob.do("bob writes", chromedp.SendKeys(chromedp.CSS("#text"), "on my way"))
			alice.until("alice reads that bob is typing", `document.getElementById("typing").textContent === "bob is typing…"`)
			assert.Equal(t, "true", alice.str(`String(document.getElementById("typing").checkVisibility())`))
			alice.shot("29-typing")
			assert.Empty(t, bob.str(`document.getElementById("typing").textContent`), "one's own typing is not shown")

			bob.press("Enter")
			alice.until("the message shows", "!!"+item("on my way"))
			alice.until("the indicator goes with the message", `document.getElementById("typing").textContent === ""`)
		})
	}
}
