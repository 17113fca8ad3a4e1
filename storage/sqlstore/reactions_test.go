package sqlstore_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/storage/sqlstore"
)

// TestExplainReactionsSQLite: the embedded reactors of a message or a page
// are read name by name, each a range of the index (message_id, name, seq)
// bounded by the name's head_seq, in the index's order: never every
// reactor of a popular message, and no sort.
func TestExplainReactionsSQLite(t *testing.T) {
	s := engine(t, "sqlite").Open(t)
	for i, q := range sqlstore.ReactionsSQL {
		var rows []struct {
			ID      int    `bun:"id"`
			Parent  int    `bun:"parent"`
			NotUsed int    `bun:"notused"`
			Detail  string `bun:"detail"`
		}
		require.NoError(t, s.DB().NewRaw("EXPLAIN QUERY PLAN "+q, "msg_a", "msg_b").Scan(t.Context(), &rows))
		var lines []string
		for _, r := range rows {
			lines = append(lines, r.Detail)
		}
		plan := strings.Join(lines, "\n")
		t.Logf("EXPLAIN QUERY PLAN (SQLite) %d:\n%s", i, plan)
		require.NotEmpty(t, lines)
		assert.Contains(t, lines[0], "SEARCH n USING INDEX reaction_names_order", "names first")
		assert.Contains(t, plan, "SEARCH r USING INDEX reactions_order (message_id=? AND name=? AND seq<?)", "each name's reactors up to its head")
		assert.NotContains(t, plan, "TEMP B-TREE")
	}
}
