package postgres

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/storage/sqlstore"
)

func TestOpenRejectsBadDSN(t *testing.T) {
	_, _, err := driver{}.Open("postgres://%zz", sqlstore.Options{})
	assert.Error(t, err)
}

func TestOpenPools(t *testing.T) {
	w, r, err := driver{}.Open("postgres://u@127.0.0.1:1/db?sslmode=disable", sqlstore.Options{MaxOpenConns: 3})
	require.NoError(t, err, "Open does not connect")
	t.Cleanup(func() { _ = w.Close() })
	assert.Nil(t, r, "reads go through the one pool")
	assert.Equal(t, 3, w.Stats().MaxOpenConnections)
}

func TestCode(t *testing.T) {
	assert.Equal(t, "", driver{}.Code(errors.New("other")))
}
