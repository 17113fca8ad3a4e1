package storage_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/blobstore"
	"github.com/parleychat/parley/storage/sqlstore"
)

// drivers are the import paths, or their prefixes, of database drivers
// and cloud SDKs: the host imports those it uses.
var drivers = []string{
	"modernc.org/sqlite",
	"github.com/mattn/go-sqlite3",
	"github.com/uptrace/bun/driver/", // pgdriver, sqliteshim
	"github.com/jackc/pgx",
	"github.com/lib/pq",
	"github.com/go-sql-driver/mysql",
	"github.com/aws/",
	"github.com/Azure/",
	"cloud.google.com/go/storage",
	"google.golang.org/api/storage",
	"gocloud.dev/blob/fileblob",
	"gocloud.dev/blob/memblob",
	"gocloud.dev/blob/s3blob",
	"gocloud.dev/blob/gcsblob",
	"gocloud.dev/blob/azureblob",
	"gocloud.dev/pubsub/mempubsub",
	"gocloud.dev/pubsub/natspubsub",
	"gocloud.dev/pubsub/awssnssqs",
	"gocloud.dev/pubsub/gcppubsub",
	"gocloud.dev/pubsub/azuresb",
	"github.com/nats-io/",
}

// linked returns the drivers that the packages pkgs link.
func linked(t *testing.T, pkgs ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	out, err := exec.Command(gobin, append([]string{"list", "-deps"}, pkgs...)...).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("go list -deps: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	var found []string
	for _, dep := range strings.Fields(string(out)) {
		for _, d := range drivers {
			if strings.HasPrefix(dep, d) {
				found = append(found, dep)
			}
		}
	}
	return found
}

func TestBackendsLinkNoDriver(t *testing.T) {
	found := linked(t, "github.com/parleychat/parley/storage/sqlstore", "github.com/parleychat/parley/storage/blobstore")
	assert.Empty(t, found, "sqlstore and blobstore link no database driver or cloud SDK")
}

// TestLibraryLinksNoDriver: the domain, the events Feed and the HTTP
// adapter link no driver either (the events' pub/sub topic is the host's).
func TestLibraryLinksNoDriver(t *testing.T) {
	found := linked(t, "github.com/parleychat/parley/messaging", "github.com/parleychat/parley/attachments",
		"github.com/parleychat/parley/events", "github.com/parleychat/parley/httpadapter")
	assert.Empty(t, found)
}

// TestDriverPackagesLinkTheirDriver: the patterns above do find drivers.
func TestDriverPackagesLinkTheirDriver(t *testing.T) {
	for pkg, want := range map[string]string{
		"storage/sqlstore/sqlite":   "modernc.org/sqlite",
		"storage/sqlstore/postgres": "github.com/jackc/pgx/v5",
		"storage/sqlstore/mysql":    "github.com/go-sql-driver/mysql",
		"storage/blobstore/s3":      "github.com/aws/aws-sdk-go-v2/service/s3",
	} {
		assert.Contains(t, linked(t, "github.com/parleychat/parley/"+pkg), want, pkg)
	}
}

// TestOpenNamesTheMissingDriver runs in a program that imports no driver.
func TestOpenNamesTheMissingDriver(t *testing.T) {
	for dsn, pkg := range map[string]string{
		filepath.Join(t.TempDir(), "parley.db"): "github.com/parleychat/parley/storage/sqlstore/sqlite",
		"file:parley.db?mode=ro":                "github.com/parleychat/parley/storage/sqlstore/sqlite",
		"postgres://u@127.0.0.1:1/db":           "github.com/parleychat/parley/storage/sqlstore/postgres",
		"mysql://root@127.0.0.1:1/test":         "github.com/parleychat/parley/storage/sqlstore/mysql",
		"root@tcp(127.0.0.1:1)/test":            "github.com/parleychat/parley/storage/sqlstore/mysql",
	} {
		_, err := sqlstore.Open(t.Context(), dsn, nil)
		assert.ErrorIs(t, err, messaging.ErrUnimplemented, dsn)
		assert.ErrorContains(t, err, `import _ "`+pkg+`"`, dsn)
	}
	_, err := sqlstore.Open(t.Context(), "redis://127.0.0.1/0", nil)
	assert.ErrorContains(t, err, "no driver for redis DSNs")

	_, err = blobstore.Open(t.Context(), "file:///tmp/parley")
	assert.ErrorIs(t, err, messaging.ErrUnimplemented)
	assert.ErrorContains(t, err, `import _ "gocloud.dev/blob/fileblob"`, "the error names the package to import")
}
