package sqlstore_test

import (
	"crypto/md5"
	"encoding/hex"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/search"
	"github.com/parleychat/parley/messaging/driver"
)

// hashTwins returns two conversation ids whose md5 begins with the same
// 8 hex digits, which is how PostgreSQL's index qualifies a word by its
// conversation (migrations/postgres): about 2^16 tries.
func hashTwins(t *testing.T) (string, string) {
	t.Helper()
	seen := map[string]string{}
	for i := range 1 << 22 {
		id := "conv" + strconv.Itoa(i)
		h := md5.Sum([]byte(id))
		k := hex.EncodeToString(h[:4])
		if other, ok := seen[k]; ok {
			return other, id
		}
		seen[k] = id
	}
	t.Fatal("no two ids of the same hash")
	return "", ""
}

// TestSearchConversationsOfOneHash: a search of one of two conversations
// whose words the index qualifies alike finds that conversation's
// messages only, on every engine.
func TestSearchConversationsOfOneHash(t *testing.T) {
	a, b := hashTwins(t)
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			s := e.Open(t)
			alice := putContact(t, s, "alice")
			inA := sendText(t, s, a, alice, sec(1), "lantern keeper")
			sendText(t, s, b, alice, sec(2), "lantern keeper")
			for _, query := range []string{"lantern", "lant", "lantern keep", "keeper lantern"} {
				p, err := search.Parse(query)
				require.NoError(t, err)
				got, more, err := s.Driver().SearchMessages(t.Context(), driver.SearchQuery{Scope: driver.Scope{ConversationIDs: []string{a}},
					Window: driver.Window{Limit: 10}, Words: p.Words, Prefix: p.Prefix})
				require.NoError(t, err)
				assert.False(t, more)
				if assert.Len(t, got, 1, query) {
					assert.Equal(t, inA.ID, got[0].ID, query)
				}
			}
		})
	}
}
