package sqlite

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestDriverDSN(t *testing.T) {
	dsn := driverDSN("data/parley.db", "immediate", 3*time.Second, false)
	assert.True(t, strings.HasPrefix(dsn, "file:data/parley.db?"), dsn)
	for _, want := range []string{"_txlock=immediate", "busy_timeout(3000)", "journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(ON)"} {
		assert.Contains(t, dsn, want)
	}
	dsn = driverDSN("file:p.db?_pragma=synchronous(FULL)", "deferred", time.Second, false)
	assert.Contains(t, dsn, "synchronous(FULL)")
	assert.NotContains(t, dsn, "synchronous(NORMAL)", "a pragma of the DSN wins")
	assert.Contains(t, dsn, "_txlock=deferred")
	dsn = driverDSN("file:p.db?mode=ro", "deferred", time.Second, false)
	assert.NotContains(t, dsn, "journal_mode", "a read-only file keeps its journal mode")
	assert.Contains(t, dsn, "busy_timeout(1000)")
	dsn = driverDSN(":memory:", "immediate", time.Second, true)
	assert.NotContains(t, dsn, "journal_mode", "no WAL in memory")
}

type codeErr int

func (e codeErr) Error() string { return "sqlite error" }
func (e codeErr) Code() int     { return int(e) }

func TestCode(t *testing.T) {
	var d driver
	assert.Equal(t, "2067", d.Code(errors.Join(errors.New("context"), codeErr(2067))))
	assert.Equal(t, "", d.Code(errors.New("other")))
}
