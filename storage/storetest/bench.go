package storetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// RunBenchmarks measures the Repository calls that serve requests, against
// stores made by newStore (one per sub-benchmark, seeded with at most about
// 2,000 rows): CreateMessage, GetMessage, ListMessages (the first page and
// a deep cursor page of a 1,000-message conversation) and UpdateMessage
// adding a reaction.
func RunBenchmarks(b *testing.B, newStore func(b *testing.B) Store) {
	b.Helper()
	b.Run("CreateMessage", func(b *testing.B) {
		s, ctx, alice := benchSetup(b, newStore)
		b.ReportAllocs()
		for b.Loop() {
			m := newMessage("c", alice, base)
			if err := s.CreateMessage(ctx, m, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("GetMessage", func(b *testing.B) {
		s, ctx, alice := benchSetup(b, newStore)
		var atts []string
		for i := range 2 {
			a := newAttachment("c", alice.ID, at(i))
			require.NoError(b, s.CreateAttachment(ctx, a, nil))
			atts = append(atts, a.ID)
		}
		m := newMessage("c", alice, at(3))
		require.NoError(b, s.CreateMessage(ctx, m, atts, nil))
		_, err := s.UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: alice.ID, Add: []string{"👍", "🎉"}}})
		require.NoError(b, err)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.GetMessage(ctx, m.ID); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("ListMessages", func(b *testing.B) {
		const n = 1000
		s, ctx, alice := benchSetup(b, newStore)
		var deep driver.Cursor
		for i := range n {
			m := newMessage("c", alice, at(i))
			require.NoError(b, s.CreateMessage(ctx, m, nil, nil))
			if i == 100 { // 899 newer messages before it
				deep = driver.Cursor{Time: m.CreatedAt, ID: m.ID}
			}
			if i%2 == 0 { // as many in another conversation
				require.NoError(b, s.CreateMessage(ctx, newMessage("other", alice, at(i)), nil, nil))
			}
		}
		b.Run("FirstPage", func(b *testing.B) {
			q := driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 20}}
			b.ReportAllocs()
			for b.Loop() {
				if items, _, err := s.ListMessages(ctx, q); err != nil || len(items) != 20 {
					b.Fatal(len(items), err)
				}
			}
		})
		b.Run("DeepCursor", func(b *testing.B) {
			q := driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 20, After: &deep}}
			b.ReportAllocs()
			for b.Loop() {
				if items, _, err := s.ListMessages(ctx, q); err != nil || len(items) != 20 {
					b.Fatal(len(items), err)
				}
			}
		})
	})

	b.Run("UpdateMessage/AddReaction", func(b *testing.B) {
		const msgs, users = 50, 20
		s, ctx, alice := benchSetup(b, newStore)
		var names []string
		for i := range users {
			c := messaging.Contact{ID: ids.New(ids.Contact), Username: "user" + itoa(i), CreatedAt: base}
			require.NoError(b, s.PutContact(ctx, c))
			names = append(names, c.ID) // reactors are contact ids
		}
		var mids []string
		for i := range msgs {
			m := newMessage("c", alice, at(i))
			require.NoError(b, s.CreateMessage(ctx, m, nil, nil))
			mids = append(mids, m.ID)
		}
		reactions := []string{"👍", "🎉", "heart", "eyes", "fire"}
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			// Each call adds a new reactor until every message holds every
			// user under every name (50,000 calls); after that they merge
			// nothing new.
			ch := driver.MessageChange{
				Reactions: &driver.ReactionChange{ContactID: names[i/msgs%users], Add: []string{reactions[i/(msgs*users)%len(reactions)]}},
				UpdatedAt: at(i),
				Check:     Limits(50, 0),
			}
			if _, err := s.UpdateMessage(ctx, mids[i%msgs], ch); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// benchSetup makes a store and a contact "alice".
func benchSetup(b *testing.B, newStore func(b *testing.B) Store) (Store, context.Context, messaging.Contact) {
	b.Helper()
	s := newStore(b)
	require.NotNil(b, s, "newStore returned nil")
	ctx := b.Context()
	alice := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: base}
	require.NoError(b, s.PutContact(ctx, alice))
	return s, ctx, alice
}
