package sqlstore_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/sqlstore"
	"github.com/parleychat/parley/storage/storecopy"
)

// TestSnapshotBatchesBoundedByBytes: a snapshot's batch ends at its bound
// of bytes as well as of rows, so that what a copy holds at once does not
// grow with the texts of its source (issue 30: 100 rows took 126 MB).
func TestSnapshotBatchesBoundedByBytes(t *testing.T) {
	const text = 20_000               // within MySQL's TEXT
	sqlstore.SetBatchBytes(t, 3*text) // three long texts, or 1,000 short ones
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			s := e.Open(t)
			msgs := svctest.New(t, s, nil, &messaging.Options{MaxMessageChars: text})
			alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
			require.NoError(t, err)
			for i := range 10 {
				_, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "c", Text: strings.Repeat(string(rune('a'+i)), text)})
				require.NoError(t, err)
			}
			_, err = msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "c", Text: "short"})
			require.NoError(t, err)

			snap, err := s.Driver().(storecopy.Source).Snapshot(ctx)
			require.NoError(t, err)
			defer snap.Close()
			var sizes []int
			for b, err := range snap.Rows(ctx, storecopy.Messages, 1000) {
				require.NoError(t, err)
				sizes = append(sizes, len(b.Messages))
			}
			assert.Equal(t, []int{3, 3, 3, 2}, sizes, "batches end at the row that reaches the bound")
		})
	}
}
