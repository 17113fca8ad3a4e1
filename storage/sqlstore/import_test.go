package sqlstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/sqlstore"
)

// importFixture returns n messages of conv by c, oldest first, with
// distinct, increasing creation times a microsecond apart.
func importFixture(tb testing.TB, c messaging.Contact, conv string, n int) []messaging.Message {
	tb.Helper()
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
	out := make([]messaging.Message, n)
	for i := range out {
		at := base.Add(time.Duration(i) * time.Microsecond)
		out[i] = messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: conv, Contact: c, Text: fmt.Sprintf("imported %d", i), CreatedAt: at}
	}
	return out
}

// importer is s's bulk load.
func importer(s *sqlstore.Store) driver.MessageImporter { return s.Driver().(driver.MessageImporter) }

func TestImportMessages(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := context.Background()
			s := e.Open(t)
			alice := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
			require.NoError(t, s.Driver().PutContact(ctx, alice))

			const n = 5000
			msgs := importFixture(t, alice, "conv_import", n)
			// Two calls, so that the second lands on rows already there.
			require.NoError(t, importer(s).ImportMessages(ctx, msgs[:3500]))
			require.NoError(t, importer(s).ImportMessages(ctx, msgs[3500:]))
			other := importFixture(t, alice, "conv_other", 3)
			require.NoError(t, importer(s).ImportMessages(ctx, other))

			// Page through the conversation: every message, newest first.
			var got []messaging.Message
			q := driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"conv_import"}}, Window: driver.Window{Limit: 100}}
			for {
				page, more, err := s.Driver().ListMessages(ctx, q)
				require.NoError(t, err)
				got = append(got, page...)
				if !more {
					break
				}
				last := page[len(page)-1]
				q.After = &driver.Cursor{Time: last.CreatedAt, ID: last.ID}
			}
			require.Len(t, got, n)
			for i, m := range got {
				want := msgs[n-1-i]
				if !assert.Equal(t, want.ID, m.ID, "position %d", i) {
					break
				}
				assert.Equal(t, want.Text, m.Text)
				assert.True(t, want.CreatedAt.Equal(m.CreatedAt), "created_at %v, want %v", m.CreatedAt, want.CreatedAt)
			}

			// Imports are counted in their conversations as sends are.
			bob := messaging.Contact{ID: ids.New(ids.Contact), Username: "bob", CreatedAt: alice.CreatedAt}
			require.NoError(t, s.Driver().PutContact(ctx, bob))
			c, err := s.Driver().GetConversation(ctx, "conv_import", bob.ID)
			require.NoError(t, err)
			assert.EqualValues(t, n, c.MessageCount)
			assert.EqualValues(t, n, c.UnreadCount)
			require.NotNil(t, c.LastMessage)
			assert.Equal(t, msgs[n-1].ID, c.LastMessage.ID)
			require.NoError(t, s.Driver().MarkRead(ctx, "conv_import", bob.ID, msgs[999].ID, nil))
			c, err = s.Driver().GetConversation(ctx, "conv_import", bob.ID)
			require.NoError(t, err)
			assert.EqualValues(t, n-1000, c.UnreadCount, "places follow the order of creation")
			c, err = s.Driver().GetConversation(ctx, "conv_import", alice.ID)
			require.NoError(t, err)
			assert.Zero(t, c.UnreadCount, "the importer's own")

			// An imported message reads back like any other.
			m, err := s.Driver().GetMessage(ctx, msgs[1234].ID)
			require.NoError(t, err)
			assert.Equal(t, "conv_import", m.ConversationID)
			assert.Equal(t, alice.ID, m.Contact.ID)
			assert.Equal(t, "alice", m.Contact.Username)
			assert.Empty(t, m.Reactions)
			assert.True(t, m.ReadAt.IsZero())
			assert.True(t, m.UpdatedAt.IsZero())

			// An import of an id that exists stores nothing of it.
			again := append(importFixture(t, alice, "conv_import", 2), msgs[0])
			assert.ErrorIs(t, importer(s).ImportMessages(ctx, again), messaging.ErrConflict)
			_, err = s.Driver().GetMessage(ctx, again[0].ID)
			assert.ErrorIs(t, err, messaging.ErrNotFound, "the failed import left a message")

			// Messages with reactions are refused.
			bad := importFixture(t, alice, "conv_import", 1)
			bad[0].Reactions = []messaging.Reaction{{Name: "heart", Reactors: []string{"alice"}}}
			assert.ErrorIs(t, importer(s).ImportMessages(ctx, bad), messaging.ErrInvalid)
		})
	}
}

func BenchmarkImportMessages(b *testing.B) {
	for _, e := range backendtest.SQL(b) {
		b.Run(e.Name, func(b *testing.B) {
			ctx := context.Background()
			s := e.Open(b)
			alice := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: time.Now().UTC()}
			require.NoError(b, s.Driver().PutContact(ctx, alice))
			b.ResetTimer()
			for b.Loop() {
				require.NoError(b, importer(s).ImportMessages(ctx, importFixture(b, alice, "conv_bench", 10000)))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*10000), "ns/message")
		})
	}
}
