package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// reply is the JavaScript of the item of the open thread's reply with this
// text.
func reply(text string) string {
	return fmt.Sprintf(`[...document.querySelectorAll("#replies > li")].find(li => li.querySelector(".text")?.textContent === %q)`, text)
}

// TestChatPageThreads (issue 31): alice and bob, in two tabs, on one
// conversation. bob replies in the thread of alice's message from its
// panel; alice sees the reply count appear under her message live, and
// the thread in her Threads list with one unread reply, which clears (on
// the page and on the server) when she opens it. Then each sees the
// other's replies arrive live in the open panel, with the counts; replies
// never show in the conversation itself. At 390 px the panel covers the
// conversation and its back button returns to it.
func TestChatPageThreads(t *testing.T) {
	browser := chatBrowser(t)
	for _, width := range chatWidths {
		t.Run(width.name, func(t *testing.T) {
			ctx := t.Context()
			s := newChatServer(t, memstore.NewBlobStore(), &httpadapter.Options{})
			root, err := s.msgs.Create(ctx, s.alice, messaging.NewMessage{ConversationID: "general", Text: "plans for friday?"})
			require.NoError(t, err)
			_, err = s.msgs.Create(ctx, s.bob, messaging.NewMessage{ConversationID: "general", Text: "no thread here"})
			require.NoError(t, err)
			unread := func() int64 {
				th, err := s.msgs.Thread(ctx, s.alice, root.ID)
				require.NoError(t, err)
				return th.UnreadCount
			}
			narrow := width.w < 700
			visible := func(p *pageTab, sel string) bool {
				return p.str(fmt.Sprintf(`String(!!document.querySelector(%q)?.checkVisibility())`, sel)) == "true"
			}

			alice := openTab(t, browser, s.url, "alice-secret", width)
			bob := openTab(t, browser, s.url, "bob-secret", width)
			alice.open("general")
			bob.open("general")
			alice.until("alice sees the messages", "!!"+item("plans for friday?")+" && !!"+item("no thread here"))
			assert.Equal(t, "true", alice.str(`String(`+item("plans for friday?")+`.querySelector(".replies").hidden)`), "no count without replies")

			// bob opens the thread of alice's message and replies there.
			bob.until("bob sees the message", "!!"+item("plans for friday?"))
			bob.js("focus the message", item("plans for friday?")+`.focus()`)
			action := item("plans for friday?") + `.querySelector(".actions .reply")`
			bob.until("its actions show, Reply in thread among them", `getComputedStyle(`+item("plans for friday?")+`.querySelector(".actions")).opacity === "1" && `+action+`.checkVisibility()`)
			assert.Equal(t, "true", bob.str(`(() => { const r = `+action+`.getBoundingClientRect(); return String(r.left >= 0 && r.right <= innerWidth); })()`), "on the screen")
			bob.shot("31-reply-action")
			bob.do("reply in thread", chromedp.Click(chromedp.CSS(`#list > li:first-child .actions .reply`)))
			bob.until("the panel opens on the root", `document.querySelector("#thread-root .text")?.textContent === "plans for friday?" && document.getElementById("thread-count").textContent === "No replies"`)
			assert.True(t, visible(bob, "#thread"), "the panel shows")
			if narrow {
				assert.False(t, visible(bob, ".conversation"), "at 390 px the panel covers the conversation")
				assert.True(t, visible(bob, "#thread-back"), "with a back button")
			} else {
				assert.True(t, visible(bob, ".conversation"), "at 1280 px the panel is beside the conversation")
				assert.True(t, visible(bob, ".sidebar"))
			}
			assert.Equal(t, "true", bob.str(`String(document.documentElement.scrollWidth <= innerWidth)`), "nothing is wider than the screen")
			bob.until("the reply composer has the focus", `document.activeElement === document.getElementById("reply-text")`)
			bob.do("bob writes a reply", chromedp.SendKeys(chromedp.CSS("#reply-text"), "count me in"))
			bob.press("Enter")
			bob.until("bob's reply shows in the panel", "!!"+reply("count me in")+` && document.getElementById("reply-text").value === ""`)
			bob.until("the panel counts it", `document.getElementById("thread-count").textContent === "1 reply"`)
			page, err := s.msgs.Replies(ctx, s.alice, root.ID, messaging.ListOptions{Limit: 10})
			require.NoError(t, err)
			require.Len(t, page.Data, 1, "the reply is stored in the thread")
			assert.Equal(t, "count me in", page.Data[0].Text)
			assert.Equal(t, root.ID, page.Data[0].ParentID)

			// alice sees the count under her message live, and the thread in
			// her list with one unread reply; the reply is not in the
			// conversation.
			count := item("plans for friday?") + `.querySelector(".replies")`
			alice.until("the reply count shows live", `!`+count+`.hidden && `+count+`.textContent.startsWith("1 reply")`)
			assert.Equal(t, "2", alice.str(`String(document.querySelectorAll("#list > li").length)`), "a reply is not in the conversation")
			if narrow {
				alice.do("back to the list", chromedp.Click(chromedp.CSS("#back")))
			}
			badge := fmt.Sprintf(`(document.querySelector('#threads li[data-id=%q] .unread') || {}).textContent`, root.ID)
			alice.until("the Threads list shows one unread reply", badge+` === "1"`)
			assert.Equal(t, "alice: plans for friday?", alice.str(fmt.Sprintf(`document.querySelector('#threads li[data-id=%q] .name').firstChild.textContent`, root.ID)))
			where := fmt.Sprintf(`document.querySelector('#threads li[data-id=%q] .preview')`, root.ID)
			assert.Equal(t, "general · 1 reply", alice.str(where+`.textContent`))
			assert.Equal(t, "true", alice.str(`String(`+where+`.getBoundingClientRect().height >= 12)`), "its second line is readable")
			assert.Equal(t, "bob: no thread here", alice.str(`document.querySelector('#conversations li[data-id="general"] .preview').textContent`),
				"a reply does not move the conversation")
			assert.EqualValues(t, 1, unread(), "unread on the server")
			alice.shot("31-threads-unread")

			// alice opens the thread from the list: the reply shows, and the
			// unread count clears on the page and on the server.
			alice.do("alice opens the thread", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#threads li[data-id=%q] button`, root.ID))))
			alice.until("the panel shows bob's reply", "!!"+reply("count me in"))
			alice.until("the unread count clears", badge+` === undefined`)
			assert.Equal(t, "#general/"+root.ID, alice.str(`location.hash`), "the thread is in the URL")
			require.Eventually(t, func() bool { return unread() == 0 }, 20*time.Second, 20*time.Millisecond, "read on the server")

			// bob replies again: alice sees it live in her panel, with the
			// counts, and reads it as it shows.
			bob.do("bob writes", chromedp.SendKeys(chromedp.CSS("#reply-text"), "bringing snacks"))
			bob.press("Enter")
			alice.until("alice sees bob's second reply live", "!!"+reply("bringing snacks"))
			alice.until("the panel's count moves", `document.getElementById("thread-count").textContent === "2 replies"`)
			alice.until("the root's count moves", count+`.textContent.startsWith("2 replies")`)
			require.Eventually(t, func() bool { return unread() == 0 }, 20*time.Second, 20*time.Millisecond, "a reply shown in the open panel is read")
			alice.shot("31-thread-open")

			// alice replies; bob sees it live in his panel.
			alice.do("alice writes", chromedp.SendKeys(chromedp.CSS("#reply-text"), "see you there"))
			alice.press("Enter")
			bob.until("bob sees alice's reply live", "!!"+reply("see you there"))
			bob.until("bob's panel counts three", `document.getElementById("thread-count").textContent === "3 replies"`)
			bob.until("bob's root counts three", count+`.textContent.startsWith("3 replies")`)
			order := bob.str(`[...document.querySelectorAll("#replies .text")].map(e => e.textContent).join("|")`)
			assert.Equal(t, "count me in|bringing snacks|see you there", order, "oldest reply at the top")
			assert.Equal(t, "2", bob.str(`String(document.querySelectorAll("#list > li").length)`), "replies stay out of the conversation")
			bob.shot("31-thread-live")

			// A reload keeps the thread open.
			alice.do("reload", chromedp.Reload())
			alice.until("the thread is open again", "!!"+reply("see you there")+` && document.querySelector("#thread-root .text")?.textContent === "plans for friday?"`)
			assert.Equal(t, "3", alice.str(`String(document.querySelectorAll("#replies > li").length)`))

			// Closing the panel shows the conversation again.
			if narrow {
				bob.do("back to the conversation", chromedp.Click(chromedp.CSS("#thread-back")))
			} else {
				bob.do("close the thread", chromedp.Click(chromedp.CSS("#thread-close")))
			}
			bob.until("the conversation shows, the panel does not", `document.querySelector(".conversation").checkVisibility() && !document.getElementById("thread").checkVisibility()`)
			assert.Equal(t, "#general", bob.str(`location.hash`), "the URL names the conversation alone")
			bob.do("back", chromedp.NavigateBack())
			bob.until("Back opens the thread again", "!!"+reply("see you there")+` && document.getElementById("thread").checkVisibility()`)
		})
	}
}

// TestChatPageDeletedRoot (issue 31): alice deletes her message that has a
// reply; it keeps its place as a deleted message with its reply count, in
// her tab and live in bob's, whose open thread stays readable. When bob
// deletes the last reply, the deleted message goes from both tabs.
func TestChatPageDeletedRoot(t *testing.T) {
	browser := chatBrowser(t)
	width := chatWidths[0]
	ctx := t.Context()
	s := newChatServer(t, memstore.NewBlobStore(), &httpadapter.Options{})
	root, err := s.msgs.Create(ctx, s.alice, messaging.NewMessage{ConversationID: "general", Text: "a plan"})
	require.NoError(t, err)
	_, err = s.msgs.Create(ctx, s.bob, messaging.NewMessage{ConversationID: "general", ParentID: root.ID, Text: "a reply"})
	require.NoError(t, err)

	alice := openTab(t, browser, s.url, "alice-secret", width)
	bob := openTab(t, browser, s.url, "bob-secret", width)
	alice.open("general")
	bob.open("general")
	rootItem := fmt.Sprintf(`document.querySelector('#list > li[data-id=%q]')`, root.ID)
	bob.until("bob sees the count", rootItem+`?.querySelector(".replies").textContent.startsWith("1 reply")`)
	bob.js("bob opens the thread", rootItem+`.querySelector(".replies").click()`)
	bob.until("bob's panel shows the reply", "!!"+reply("a reply"))

	alice.until("alice sees her message", "!!"+item("a plan"))
	alice.js("focus it", item("a plan")+`.focus()`)
	alice.js("delete it", item("a plan")+`.querySelector(".delete").click()`)
	alice.until("asked first", item("a plan")+`.querySelector(".confirm").hidden === false`)
	alice.js("confirm", item("a plan")+`.querySelector(".confirm-yes").click()`)
	deleted := rootItem + `?.classList.contains("deleted") && ` + rootItem + `.querySelector(".text").textContent === "This message was deleted." && ` +
		rootItem + `.querySelector(".replies").textContent.startsWith("1 reply")`
	alice.until("alice's message keeps its place, deleted, with its count", deleted)
	bob.until("bob sees it deleted live", deleted)
	bob.until("bob's open thread shows the root deleted", `document.querySelector("#thread-root .text")?.textContent === "This message was deleted."`)
	assert.Equal(t, "true", bob.str(`String(!!`+reply("a reply")+`)`), "the reply stays readable")
	bob.until("bob's Threads list says the message was deleted", fmt.Sprintf(`document.querySelector('#threads li[data-id=%q] .name')?.firstChild.textContent === "A deleted message"`, root.ID))
	bob.shot("31-deleted-root")

	bob.js("focus the reply", reply("a reply")+`.focus()`)
	bob.js("delete the reply", reply("a reply")+`.querySelector(".delete").click()`)
	bob.until("asked first", reply("a reply")+`.querySelector(".confirm").hidden === false`)
	bob.js("confirm", reply("a reply")+`.querySelector(".confirm-yes").click()`)
	alice.until("the deleted message goes with its last reply", `document.querySelectorAll("#list > li").length === 0`)
	bob.until("from bob's tab too, and his panel closes", `document.querySelectorAll("#list > li").length === 0 && document.getElementById("thread").hidden`)
	_, err = s.msgs.Get(ctx, s.alice, root.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "gone on the server")
}
