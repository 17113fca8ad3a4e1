package sqlstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
)

// TestConversationUpdatesHOT checks, on PostgreSQL, that single sends to
// one conversation update its row in place (HOT) but once a second: the
// list's index holds listed_at, updated_at truncated to the second, not
// updated_at (DESIGN.md section 4.12). With updated_at indexed, none was
// (0 of 4,111).
func TestConversationUpdatesHOT(t *testing.T) {
	e := engine(t, "postgres")
	s := e.Open(t)
	ctx := t.Context()
	c := messaging.Contact{ID: ids.New(ids.Contact), Username: "hot", CreatedAt: time.Now().UTC()}
	require.NoError(t, s.Driver().PutContact(ctx, c))
	// Sends for 2.5 seconds, so that listed_at changes two or three times.
	start := time.Now()
	n := 0
	for ; time.Since(start) < 2500*time.Millisecond; n++ {
		at := time.Now().UTC()
		m := messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: "conv_hot", Contact: c, Text: "hot", CreatedAt: at}
		require.NoError(t, s.Driver().CreateMessage(ctx, m, nil, nil))
	}
	seconds := time.Now().Unix() - start.Unix() // the seconds crossed
	// The backends that sent flush their statistics at most once a second,
	// and when idle after 10 seconds: wait for every update to show.
	var st struct {
		Upd int64 `bun:"upd"`
		Hot int64 `bun:"hot"`
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		require.NoError(t, s.DB().NewRaw(`SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables
			WHERE relid = 'conversations'::regclass`).Scan(ctx, &st))
		if st.Upd >= int64(n-1) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("conversations after %d single sends over %d second boundaries: %d updates, %d HOT", n, seconds, st.Upd, st.Hot)
	require.GreaterOrEqual(t, st.Upd, int64(n-1), "a send updates its conversation's row (the first inserts it)")
	// Not HOT: the first of each second, and an update that finds its
	// page full with versions not yet prunable (a few in 1,500).
	assert.GreaterOrEqual(t, float64(st.Hot), 0.95*float64(st.Upd), "updates HOT but about one a second")
}
