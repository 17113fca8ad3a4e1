package mysql

import (
	"errors"
	"fmt"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfig(t *testing.T) {
	cfg, err := config("mysql://u%40x:p%3Aw@db.example:3307/parley?timeout=5s&charset=utf8mb4")
	require.NoError(t, err)
	assert.Equal(t, "u@x", cfg.User)
	assert.Equal(t, "p:w", cfg.Passwd)
	assert.Equal(t, "tcp", cfg.Net)
	assert.Equal(t, "db.example:3307", cfg.Addr)
	assert.Equal(t, "parley", cfg.DBName)
	assert.Equal(t, 5*time.Second, cfg.Timeout)
	assert.True(t, cfg.ParseTime)
	assert.Equal(t, time.UTC, cfg.Loc)

	cfg, err = config("mysql://root@localhost/test")
	require.NoError(t, err)
	assert.Equal(t, "localhost:3306", cfg.Addr, "the default port")

	cfg, err = config("root:pw@tcp(127.0.0.1:3306)/test")
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:3306", cfg.Addr)
	assert.Equal(t, "pw", cfg.Passwd)
	assert.True(t, cfg.ClientFoundRows)
}

func TestCode(t *testing.T) {
	var d driver
	assert.Equal(t, "1213", d.Code(fmt.Errorf("wrapped: %w", &gomysql.MySQLError{Number: 1213})))
	assert.Equal(t, "2013", d.Code(fmt.Errorf("wrapped: %w", gomysql.ErrInvalidConn)), "a broken connection")
	assert.Equal(t, "", d.Code(errors.New("other")))
	assert.Equal(t, "", d.Code(nil))
}
