package main

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// TestChatPageSearch (issue 32): alice types words into the search box;
// the messages that hold them show as she types, of every conversation,
// and a result opens its conversation at the message, read back through
// older pages when it is not among the newest.
func TestChatPageSearch(t *testing.T) {
	browser := chatBrowser(t)
	for _, width := range chatWidths {
		t.Run(width.name, func(t *testing.T) {
			s := newChatServer(t, memstore.NewBlobStore(), &httpadapter.Options{})
			ctx := t.Context()
			send := func(who messaging.Contact, conv, text string) {
				_, err := s.msgs.Create(ctx, who, messaging.NewMessage{ConversationID: conv, Text: text})
				require.NoError(t, err)
			}
			send(s.bob, "design", "Le CAFÉ de la gare, demain?")
			for i := range 70 { // more than two pages of the conversation
				send(s.alice, "design", fmt.Sprintf("draft %d", i))
			}
			send(s.bob, "general", "coffee or café?")
			send(s.bob, "general", "cake")

			alice := openTab(t, browser, s.url, "alice-secret", width)
			alice.do("alice searches", chromedp.SendKeys(chromedp.CSS("#search-q"), "Cafe"))
			results := `[...document.querySelectorAll("#search-results .found-message .snippet")].map(e => e.textContent).join("|")`
			alice.until("the results show as she types", results+` === "coffee or café?|Le CAFÉ de la gare, demain?"`)
			alice.shot("32-search")

			alice.do("alice opens the oldest result", chromedp.Click(chromedp.CSS(`#search-results li:nth-child(2) button`)))
			alice.until("its conversation opens", `document.getElementById("title").textContent === "design"`)
			found := item("Le CAFÉ de la gare, demain?")
			alice.until("at the message, two pages back", "!!"+found+` && `+found+`.classList.contains("found") && document.activeElement === `+found)
			assert.Equal(t, "true", alice.str(`String(`+found+`.checkVisibility())`))
			alice.shot("32-search-opened")

			if alice.str(`getComputedStyle(document.querySelector(".sidebar")).display`) == "none" {
				alice.do("back to the list", chromedp.Click(chromedp.CSS("#back")))
			}
			alice.do("a word that no message holds", chromedp.SendKeys(chromedp.CSS("#search-q"), " zebra"))
			alice.until("says so", `document.querySelector("#search-results .none")?.textContent === "No messages found"`)
		})
	}
}
