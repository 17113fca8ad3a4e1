package sqlstore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/parleychat/parley/storage/sqlstore"
	_ "github.com/parleychat/parley/storage/sqlstore/sqlite" // SQLite DSNs: paths, file: URIs
)

// ExampleOpen opens a SQLite database in a file, brings its schema up to
// date and closes it. PostgreSQL and MySQL are opened the same way, with
// their DSNs and driver packages (see the package documentation).
func ExampleOpen() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "parley")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	store, err := sqlstore.Open(ctx, filepath.Join(dir, "parley.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	// Migrate creates the tables, or upgrades them: run it at every start.
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("engine:", store.DB().Dialect().Name())

	// Output:
	// engine: sqlite
}
