package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/internal/testnet"
	"github.com/parleychat/parley/storage/blobstore"
	"github.com/parleychat/parley/storage/memstore"
)

// TestFavicon: /favicon.ico, which browsers ask for on their own, is an
// icon, served without a token.
func TestFavicon(t *testing.T) {
	s := newChatServer(t, memstore.NewBlobStore(), &httpadapter.Options{})
	res, err := http.Get(s.url + "/favicon.ico")
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "image/x-icon", res.Header.Get("Content-Type"))
	require.Greater(t, len(body), 6)
	assert.Equal(t, []byte{0, 0, 1, 0}, body[:4], "an ICO file")
}

// TestChatMeTellsTheLimit: the longest message /chat/me tells the page is
// the one the server takes, counted as the server counts (code points).
func TestChatMeTellsTheLimit(t *testing.T) {
	addr := testnet.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-addr", addr, "-data", t.TempDir()}, io.Discard, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	waitListening(t, addr)
	base := "http://" + addr
	var me struct {
		MaxMessageChars int `json:"max_message_chars"`
	}
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/chat/me", "alice-secret", nil, &me))
	require.Positive(t, me.MaxMessageChars)
	longest := strings.Repeat("😀", 10) + strings.Repeat("a", me.MaxMessageChars-10)
	assert.Equal(t, http.StatusCreated, call(t, "POST", base+"/v1/messages", "alice-secret",
		url.Values{"conversation_id": {"general"}, "message": {longest}}, nil), "the limit is taken")
	var refused struct {
		Error struct{ Message string }
	}
	assert.Equal(t, http.StatusBadRequest, call(t, "POST", base+"/v1/messages", "alice-secret",
		url.Values{"conversation_id": {"general"}, "message": {longest + "😀"}}, &refused), "one more is refused")
	assert.Contains(t, refused.Error.Message, "too long")
}

// TestChatPageCSPUploadOrigins: the page may send bytes to its own origin
// only, unless the bucket signs upload URLs: then to the bucket's origin
// too. A local folder signs none.
func TestChatPageCSPUploadOrigins(t *testing.T) {
	assert.Contains(t, chatPageCSP(nil), "connect-src 'self';")
	assert.Contains(t, chatPageCSP([]string{"https://b.s3.example.com"}), "connect-src 'self' https://b.s3.example.com;")

	blobs, err := blobstore.Open(t.Context(), (&url.URL{Scheme: "file", Path: filepath.ToSlash(t.TempDir())}).String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = blobs.Close() })
	assert.Empty(t, uploadOrigin(t.Context(), blobs), "a local folder signs no upload URL")

	s := newChatServerWith(t, memstore.NewBlobStore(), &httpadapter.Options{}, chatServerConfig{uploadOrigins: []string{"http://127.0.0.1:9000"}})
	res, err := http.Get(s.url + "/")
	require.NoError(t, err)
	res.Body.Close()
	assert.Contains(t, res.Header.Get("Content-Security-Policy"), "connect-src 'self' http://127.0.0.1:9000;")
}
