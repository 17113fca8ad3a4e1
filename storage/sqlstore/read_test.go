package sqlstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestExpandArgs(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 600000000, time.FixedZone("X", 3600))
	q, args, ok := expandArgs("SELECT 1 FROM t WHERE a = ? AND b IN (?) AND c <= ? AND d = ? LIMIT ?", []any{"x", idList{"p", "q"}, at, nil, 3})
	assert.True(t, ok)
	assert.Equal(t, "SELECT 1 FROM t WHERE a = ? AND b IN (?, ?) AND c <= ? AND d = ? LIMIT ?", q)
	assert.Equal(t, []any{"x", "p", "q", "2025-01-02 02:04:05.6+00:00", nil, 3}, args, "times as bun writes them, in UTC")

	_, _, ok = expandArgs("SELECT ?", []any{3.5})
	assert.False(t, ok, "an argument of another type")
	_, _, ok = expandArgs("SELECT ?, ?", []any{"x"})
	assert.False(t, ok, "a placeholder without argument")
	_, _, ok = expandArgs("SELECT 1 WHERE a IN (?)", []any{idList{}})
	assert.False(t, ok, "an empty list")
}
