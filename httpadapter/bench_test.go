package httpadapter_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// benchHandler returns the handler over memstore and a message of alice's.
func benchHandler(b *testing.B) (http.Handler, string) {
	ctx := context.Background()
	store := memstore.New()
	files := attachments.New(store, memstore.NewBlobStore(), nil)
	msgs := messaging.New(store, files, nil)
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(b, err)
	m, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "bench", Text: "hello"})
	require.NoError(b, err)
	h := httpadapter.New(msgs, files, &httpadapter.Options{
		Authenticator: httpadapter.StaticTokens(map[string]messaging.Contact{"tok": alice}),
	})
	return h, m.ID
}

// BenchmarkGetMessage measures the adapter's own cost per request (no
// network), over the in-memory store.
func BenchmarkGetMessage(b *testing.B) {
	h, id := benchHandler(b)
	req := httptest.NewRequest("GET", "/v1/messages/"+id, nil)
	req.Header.Set("Authorization", "Bearer tok")
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}

// BenchmarkCreateMessage measures a form POST.
func BenchmarkCreateMessage(b *testing.B) {
	h, _ := benchHandler(b)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/v1/messages", strings.NewReader("conversation_id=bench&message=hello+world"))
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 201 {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}
