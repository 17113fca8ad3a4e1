package httpadapter_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/storage/memstore"
)

// TestNew: New refuses what it cannot serve with, rather than panicking.
func TestNew(t *testing.T) {
	store := memstore.New()
	msgs := svctest.New(t, store, memstore.NewBlobStore(), nil)

	for _, base := range []string{"", "http://chat.example.com", "https://chat.example.com/api/", "http://127.0.0.1:8080"} {
		h, err := httpadapter.New(msgs, &httpadapter.Options{BaseURL: base})
		assert.NoError(t, err, "BaseURL %q", base)
		assert.NotNil(t, h, "BaseURL %q", base)
	}
	h, err := httpadapter.New(msgs, nil)
	require.NoError(t, err)
	assert.NotNil(t, h)

	for _, base := range []string{
		"chat.example.com",       // no scheme
		"/api",                   // a path only
		"ftp://chat.example.com", // not http
		"https://",               // no host
		"https://chat.example.com?x=1",
		"https://chat.example.com/#top",
		"https://chat.example.com/%zz", // does not parse
	} {
		h, err := httpadapter.New(msgs, &httpadapter.Options{BaseURL: base})
		assert.ErrorContains(t, err, "BaseURL", "BaseURL %q", base)
		assert.Nil(t, h, "BaseURL %q", base)
	}

	_, err = httpadapter.New(nil, nil)
	assert.Error(t, err)
}
