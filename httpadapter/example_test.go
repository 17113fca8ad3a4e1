package httpadapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// Mount the API under /api of a mux and send a message as alice.
func Example() {
	ctx := context.Background()
	store, blobs := memstore.New(), memstore.NewBlobStore()
	msgs, err := messaging.New(ctx, store, blobs, nil)
	if err != nil {
		panic(err)
	}
	defer msgs.Close()
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	if err != nil {
		log.Fatal(err)
	}

	api, err := httpadapter.New(msgs, &httpadapter.Options{
		Authenticator: httpadapter.StaticTokens(map[string]messaging.Contact{"alice-token": alice}),
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", http.StripPrefix("/api", api))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	req, err := http.NewRequest("POST", srv.URL+"/api/v1/messages",
		strings.NewReader("conversation_id=general&message=Hello%2C+world"))
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer alice-token")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := srv.Client().Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer res.Body.Close()

	var m struct {
		Message string `json:"message"`
		Contact struct {
			Username string `json:"username"`
		} `json:"contact"`
	}
	if err := json.NewDecoder(res.Body).Decode(&m); err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.StatusCode, res.Header.Get("Content-Type"))
	fmt.Println(strings.HasPrefix(res.Header.Get("Location"), "/api/v1/messages/msg_"))
	fmt.Printf("%s: %s\n", m.Contact.Username, m.Message)
	// Output:
	// 201 application/json; charset=utf-8
	// true
	// alice: Hello, world
}
