package sqlstore_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// TestListManyConversations pages through lists of few conversations (one
// index range each, UNION ALL) and of many (IN), both ways, with ties.
func TestListManyConversations(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			s := e.Open(t)
			c := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
			require.NoError(t, s.Driver().PutContact(ctx, c))
			start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			type item struct {
				id, conv string
				at       time.Time
			}
			var all []item
			for i := range 120 {
				at := start.Add(time.Duration(i/2) * time.Millisecond) // pairs share a time
				it := item{ids.NewAt(ids.Message, start), fmt.Sprintf("conv_%d", i%40), at}
				all = append(all, it)
				require.NoError(t, s.Driver().CreateMessage(ctx, messaging.Message{ID: it.id, ConversationID: it.conv, Contact: c, Text: "m", CreatedAt: at}, nil, nil))
			}
			slices.SortFunc(all, func(a, b item) int {
				if c := b.at.Compare(a.at); c != 0 {
					return c
				}
				if a.id > b.id {
					return -1
				}
				return 1
			})
			for _, n := range []int{3, 35} { // below and above the UNION ALL limit
				var convs []string
				for i := range n {
					convs = append(convs, fmt.Sprintf("conv_%d", i))
				}
				var want []string
				for _, it := range all {
					if slices.Contains(convs, it.conv) {
						want = append(want, it.id)
					}
				}
				// Forward, by After.
				var got []string
				var after *driver.Cursor
				for {
					items, more, err := s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: convs}, Window: driver.Window{Limit: 7, After: after}})
					require.NoError(t, err)
					for _, m := range items {
						got = append(got, m.ID)
					}
					if !more {
						break
					}
					last := items[len(items)-1]
					after = &driver.Cursor{Time: last.CreatedAt, ID: last.ID}
				}
				assert.Equal(t, want, got, "%d conversations, forward", n)
				// Backward from the oldest, by Before.
				oldest := all[slices.IndexFunc(all, func(it item) bool { return it.id == want[len(want)-1] })]
				before := &driver.Cursor{Time: oldest.at, ID: oldest.id}
				got = []string{oldest.id}
				for {
					items, more, err := s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: convs}, Window: driver.Window{Limit: 7, Before: before}})
					require.NoError(t, err)
					ids := make([]string, len(items))
					for i, m := range items {
						ids[i] = m.ID
					}
					got = append(ids, got...)
					if !more {
						break
					}
					first := items[0]
					before = &driver.Cursor{Time: first.CreatedAt, ID: first.ID}
				}
				assert.Equal(t, want, got, "%d conversations, backward", n)
			}
		})
	}
}
