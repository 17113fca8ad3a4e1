package sqlstore

import (
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/schema"
)

func TestDSNScheme(t *testing.T) {
	for dsn, want := range map[string]string{
		"parley.db":                       "file",
		"/var/lib/parley/parley.db":       "file",
		`C:\parley\parley.db`:             "file",
		":memory:":                        "file",
		"file:parley.db?mode=ro":          "file",
		"file:///var/lib/parley.db":       "file",
		"postgres://u@h/db":               "postgres",
		"PostgreSQL://u@h/db":             "postgresql",
		"mysql://u@h/db":                  "mysql",
		"root:pw@tcp(127.0.0.1:3306)/db":  "mysql",
		"root@unix(/run/mysqld.sock)/db":  "mysql",
		"data/odd name://not a scheme.db": "file",
		"sqlite+custom://h/db":            "sqlite+custom",
	} {
		assert.Equal(t, want, dsnScheme(dsn), dsn)
	}
}

type fakeDriver struct{}

func (fakeDriver) Dialect() schema.Dialect { return sqlitedialect.New() }
func (fakeDriver) Open(string, Options) (*sql.DB, *sql.DB, error) {
	return nil, nil, errors.New("fake")
}
func (fakeDriver) Code(error) string { return "" }

func TestRegisterTwicePanics(t *testing.T) {
	// A scheme of its own at each run: drivers stay registered (-count).
	scheme := fmt.Sprintf("fake-%d", time.Now().UnixNano())
	Register(scheme, fakeDriver{})
	assert.Panics(t, func() { Register(scheme, fakeDriver{}) })
	d, err := driverFor(scheme + "://x")
	assert.NoError(t, err)
	assert.Equal(t, fakeDriver{}, d)
}
