// Command buildref is the yardstick of the example server's first build:
// the smallest whole program that serves Parley over SQLite and a local
// folder (the services, the event feed and the HTTP adapter), and links
// nothing else. BENCHMARKS.md ("The first build") compares the build of
// examples/server from an empty build cache with this one's:
//
//	GOCACHE=$(mktemp -d) go build -o /dev/null ./tools/buildref
//	GOCACHE=$(mktemp -d) go build -o /dev/null ./examples/server
//
// It runs too (on 127.0.0.1:8080, the token alice-secret, its data in a
// temporary folder removed when it ends), so that it stays a program that
// does the server's job rather than a list of imports.
package main

import (
	"context"
	"errors"
	"log"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"

	_ "gocloud.dev/blob/fileblob" // file:// buckets

	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/blobstore"
	"github.com/parleychat/parley/storage/sqlstore"
	_ "github.com/parleychat/parley/storage/sqlstore/sqlite" // SQLite files
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "buildref-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, filepath.Join(dir, "parley.db"), nil)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	blobs, err := blobstore.Open(ctx, "file://"+filepath.ToSlash(dir)+"/files?create_dir=true")
	if err != nil {
		return err
	}
	defer blobs.Close()
	msgs, err := messaging.New(ctx, store, blobs, nil)
	if err != nil {
		return err
	}
	defer msgs.Close()
	if err := msgs.Files().Claim(ctx); err != nil {
		return err
	}
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	if err != nil {
		return err
	}
	api, err := httpadapter.New(msgs, &httpadapter.Options{
		Authenticator: httpadapter.StaticTokens(map[string]messaging.Contact{"alice-secret": alice}),
		Events:        true,
	})
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: api}
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background()) // ends the event streams too
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
