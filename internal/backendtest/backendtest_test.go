package backendtest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/messaging"
)

func TestAllGivesFreshStores(t *testing.T) {
	all := backendtest.All(t)
	var names []string
	for _, b := range all {
		names = append(names, b.Name)
	}
	require.Subset(t, names, []string{"memstore", "sqlite"})
	for _, b := range all {
		t.Run(b.Name, func(t *testing.T) {
			one, two := b.New(t), b.New(t)
			c := messaging.Contact{ID: "ctc_1", Username: "alice", CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
			require.NoError(t, one.PutContact(t.Context(), c))
			got, err := one.GetContact(t.Context(), c.ID)
			require.NoError(t, err)
			assert.Equal(t, c, got)
			_, err = two.GetContact(t.Context(), c.ID)
			assert.ErrorIs(t, err, messaging.ErrNotFound, "each store has a database of its own")
		})
	}
}
