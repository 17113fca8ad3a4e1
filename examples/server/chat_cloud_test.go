//go:build cloud

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/testnet"
)

// TestCloudChatPageDirectUpload (issue 33): the server on MinIO
// (PARLEY_TEST_S3, which .ci/minio.sh sets), whose bucket signs upload
// URLs. alice attaches a PNG in the page: its bytes go to MinIO itself
// (the page fetched a URL of MinIO's origin, and none of the server's
// /v1/uploads/…/content), with the SHA-256 MinIO checks; bob, in another
// tab, sees its preview.
func TestCloudChatPageDirectUpload(t *testing.T) {
	bucket := os.Getenv("PARLEY_TEST_S3")
	if bucket == "" {
		t.Skip("PARLEY_TEST_S3 is not set (eval \"$(bash .ci/minio.sh)\" sets it)")
	}
	browser := chatBrowser(t)
	bu, err := url.Parse(bucket)
	require.NoError(t, err)
	endpoint, err := url.Parse(bu.Query().Get("endpoint"))
	require.NoError(t, err, "PARLEY_TEST_S3 names MinIO's endpoint")
	minio := endpoint.Scheme + "://" + endpoint.Host
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	bucket += "&prefix=" + url.QueryEscape("chat-test-"+hex.EncodeToString(rnd[:])+"/")

	addr := testnet.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", addr, "-data", t.TempDir(), "-bucket", bucket}, io.Discard, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	waitListening(t, addr)
	base := "http://" + addr

	photo := testPNG(t, "cloud.png")
	width := chatWidths[0]
	alice := openTab(t, browser, base, "alice-secret", width)
	bob := openTab(t, browser, base, "bob-secret", width)
	alice.open("general")
	bob.open("general")
	alice.do("attach the photo", chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{photo}))
	alice.until("the file is shown as attached", `document.getElementById("file-name").textContent === "cloud.png"`)
	alice.do("write", chromedp.SendKeys(chromedp.CSS("#text"), "from the cloud"))
	alice.press("Enter")
	alice.until("the message shows with its file", item("from the cloud")+`?.querySelector(".download")?.textContent.includes("cloud.png")`)
	assert.Empty(t, alice.str(`document.getElementById("error").textContent`))

	fetched := strings.Split(alice.str(`performance.getEntriesByType("resource").map(e => e.name).join("\n")`), "\n")
	var toMinIO, reserved, throughServer bool
	for _, u := range fetched {
		toMinIO = toMinIO || strings.HasPrefix(u, minio+"/")
		reserved = reserved || u == base+"/v1/uploads"
		throughServer = throughServer || strings.HasPrefix(u, base+"/v1/uploads/") && strings.HasSuffix(u, "/content") ||
			u == base+"/v1/attachments"
	}
	assert.True(t, reserved, "the page reserved the upload: %q", fetched)
	assert.True(t, toMinIO, "the page sent the bytes to MinIO (%s): %q", minio, fetched)
	assert.False(t, throughServer, "no byte went through the server: %q", fetched)

	var page struct {
		Data []struct {
			Attachments []struct {
				ID          string `json:"id"`
				ImageWidth  int    `json:"image_width"`
				ImageHeight int    `json:"image_height"`
			} `json:"attachments"`
		} `json:"data"`
	}
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/v1/messages?conversation_id=general", "bob-secret", nil, &page))
	require.Len(t, page.Data, 1)
	require.Len(t, page.Data[0].Attachments, 1)
	att := page.Data[0].Attachments[0]
	assert.Equal(t, [2]int{640, 480}, [2]int{att.ImageWidth, att.ImageHeight})

	img := item("from the cloud") + `?.querySelector(".image-preview img")`
	bob.until("bob sees the preview", img+`?.complete && `+img+`.naturalWidth > 0`)
	assert.Equal(t, "/v1/attachments/"+att.ID+"/thumbnail?size=small", bob.str(img+`.dataset.src`))
	bob.shot("33-cloud-preview")
}
