// Command embed shows Parley mounted inside an existing net/http server that
// has its own notion of users: the host's API keys become Parley callers,
// and the /v1 API is served under the host's /chat prefix.
//
//	go run ./examples/embed
//	curl -H 'Authorization: Bearer key-ann' -d conversation_id=team -d message=hi \
//	     http://127.0.0.1:8081/chat/v1/messages
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/blobstore"
	"github.com/parleychat/parley/storage/sqlstore"
)

// hostUsers is the host application's own user table: API key → user name.
var hostUsers = map[string]string{"key-ann": "ann", "key-ben": "ben"}

func main() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "parley-embed")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// Storage and services: SQLite and a local folder here; PostgreSQL and S3
	// in production are a different DSN and bucket URL.
	store, err := sqlstore.Open(ctx, filepath.Join(dir, "chat.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	blobs, err := blobstore.Open(ctx, "file://"+filepath.ToSlash(dir))
	if err != nil {
		log.Fatal(err)
	}
	defer blobs.Close()
	msgs := messaging.New(store, nil)
	files := attachments.New(store, blobs, msgs, nil)

	// The host's authentication, as a Parley Authenticator: the bearer token
	// is the host's API key; each user gets a contact on first use.
	auth := httpadapter.AuthenticatorFunc(func(ctx context.Context, token string) (messaging.Contact, error) {
		name, ok := hostUsers[token]
		if !ok {
			return messaging.Contact{}, messaging.ErrUnauthenticated
		}
		return msgs.SaveContact(ctx, messaging.Contact{Username: name})
	})

	// Mount under /chat: the adapter serves /v1/… below whatever prefix it is
	// given, and file_url and Location carry the prefix.
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "the host's own home page")
	})
	api, err := httpadapter.New(msgs, files, &httpadapter.Options{Authenticator: auth})
	if err != nil {
		log.Fatal(err)
	}
	mux.Handle("/chat/", http.StripPrefix("/chat", api))

	log.Println("listening on http://127.0.0.1:8081 (chat API under /chat/v1)")
	log.Fatal(http.ListenAndServe("127.0.0.1:8081", mux))
}
