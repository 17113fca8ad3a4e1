package sqlstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
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

// TestExplainReactionsSQLite: the embedded reactors of a message or a page
// are read name by name, each a range of the index (message_id, name, seq, contact_id)
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
		assert.Contains(t, plan, "SEARCH r USING COVERING INDEX reactions_embed (message_id=? AND name=? AND seq<?)", "each name's reactors up to its head, from the index alone")
		assert.NotContains(t, plan, "TEMP B-TREE")
	}
}

// TestEmbeddedReactorsOrder: the embedded reactors come in the order they
// reacted, not in their contact ids' (SQLite and PostgreSQL aggregate them
// into one string per name; see reactionsSQL), in GetMessage, a page of
// two messages and UpdateMessage's answer; a reactor whose contact is gone
// is embedded as "".
func TestEmbeddedReactorsOrder(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := t.Context()
			s := e.Open(t)
			at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			const n = messaging.MaxEmbeddedReactors + 20
			// Reactor i has a contact id that sorts before reactor i-1's.
			var cids, names []string
			for i := range n {
				c := messaging.Contact{ID: fmt.Sprintf("ctc_%05d", n-i), Username: fmt.Sprintf("u%03d", i), CreatedAt: at}
				require.NoError(t, s.Driver().PutContact(ctx, c))
				cids, names = append(cids, c.ID), append(names, c.Username)
			}
			var ms []messaging.Message
			for i := range 2 {
				m := messaging.Message{ID: ids.NewAt(ids.Message, at.Add(time.Duration(i)*time.Second)), ConversationID: "c",
					Contact: messaging.Contact{ID: cids[0], Username: names[0]}, Text: "m", CreatedAt: at}
				require.NoError(t, s.Driver().CreateMessage(ctx, m, nil, nil))
				ms = append(ms, m)
			}
			var last messaging.Message
			for i, id := range cids {
				var err error
				last, err = s.Driver().UpdateMessage(ctx, ms[0].ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: id, Add: []string{"a"}}})
				require.NoError(t, err)
				if i < 3 {
					_, err = s.Driver().UpdateMessage(ctx, ms[1].ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: cids[2-i], Add: []string{"z"}}})
					require.NoError(t, err)
					_, err = s.Driver().UpdateMessage(ctx, ms[1].ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: id, Add: []string{"b"}}})
					require.NoError(t, err)
				}
			}
			want := []messaging.Reaction{{Name: "a", Reactors: names[:messaging.MaxEmbeddedReactors], Count: n}}
			assert.Equal(t, want, last.Reactions, "UpdateMessage's answer")
			got, err := s.Driver().GetMessage(ctx, ms[0].ID)
			require.NoError(t, err)
			assert.Equal(t, want, got.Reactions, "GetMessage")
			page, _, err := s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 10}})
			require.NoError(t, err)
			require.Len(t, page, 2)
			for _, m := range page {
				if m.ID == ms[0].ID {
					assert.Equal(t, want, m.Reactions, "a page")
				} else {
					assert.Equal(t, []messaging.Reaction{
						{Name: "z", Reactors: []string{names[2], names[1], names[0]}, Count: 3},
						{Name: "b", Reactors: names[:3], Count: 3},
					}, m.Reactions, "a page, the other message")
				}
			}
			_, err = s.DB().ExecContext(ctx, "DELETE FROM contacts WHERE id = ?", cids[1])
			require.NoError(t, err)
			got, err = s.Driver().GetMessage(ctx, ms[0].ID)
			require.NoError(t, err)
			want[0].Reactors = slices.Clone(want[0].Reactors)
			want[0].Reactors[1] = ""
			assert.Equal(t, want, got.Reactions, "a reactor without a contact")
		})
	}
}

// TestReactionsPreparedOnPostgres: on PostgreSQL a reaction's transaction
// runs prepared statements, which the server neither parses nor plans
// again, once a first transaction ran them; they are prepared after it,
// never inside one (with a pool of one connection, which the transaction
// holds, preparing there would wait forever). A reaction in one reactor's
// name is one statement, a call of parley_react (reactPostgres), whether
// it adds or takes back: on the store's one connection the
// server holds it prepared, and bun formats nothing but BEGIN and COMMIT.
// The answers are as a read gives them.
func TestReactionsPreparedOnPostgres(t *testing.T) {
	e := engine(t, "postgres")
	dsn := e.DSN(t)
	require.NoError(t, open(t, dsn).Migrate(t.Context()))
	s := open(t, dsn, &sqlstore.Options{Logger: discard, MaxOpenConns: 1})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	alice := putContact(t, s, "alice")
	bob := putContact(t, s, "bob")
	m := send(t, s, "c", alice, sec(1))
	react := func(who messaging.Contact) messaging.Message {
		t.Helper()
		got, err := s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: who.ID, Add: []string{"x"}}, UpdatedAt: sec(2)})
		require.NoError(t, err)
		return got
	}
	takeBack := func(who messaging.Contact) messaging.Message {
		t.Helper()
		got, err := s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: who.ID, Remove: []string{"x"}}})
		require.NoError(t, err)
		return got
	}
	react(alice)
	_, err := s.Driver().GetMessage(ctx, m.ID) // its reactions' read, prepared
	require.NoError(t, err)
	takeBack(alice)
	before := sqlstore.Prepared(s)

	statements := sqlstore.RecordWrites(s)
	react(alice)
	added := react(bob)
	assert.Equal(t, []messaging.Reaction{{Name: "x", Reactors: []string{"alice", "bob"}, Count: 2}}, added.Reactions)
	got, err := s.Driver().GetMessage(ctx, m.ID)
	require.NoError(t, err)
	assert.Equal(t, got, added, "the answer is the message as stored")
	takeBack(bob)
	left := takeBack(alice)
	assert.Empty(t, left.Reactions)
	got, err = s.Driver().GetMessage(ctx, m.ID)
	require.NoError(t, err)
	assert.Equal(t, got, left)
	assert.Equal(t, []string{"BEGIN", "COMMIT", "BEGIN", "COMMIT", "BEGIN", "COMMIT", "BEGIN", "COMMIT"}, statements(),
		"every other statement of the transactions is prepared")
	assert.Equal(t, before, sqlstore.Prepared(s), "and prepared once")

	var prepared []string
	require.NoError(t, s.DB().NewRaw("SELECT statement FROM pg_prepared_statements").Scan(ctx, &prepared))
	var calls int
	for _, q := range prepared {
		if strings.HasPrefix(q, "SELECT * FROM parley_react(") {
			calls++
		}
		assert.NotContains(t, q, "INSERT INTO reactions (message_id, name, contact_id, created_at) VALUES ($1", "react's own statements are not run")
	}
	assert.Equal(t, 1, calls, "an add and a take back are one statement: %q", prepared)
}

// TestReactOneWritesTheMessageOnlyWhenItChanges: on PostgreSQL a reaction
// without UpdatedAt writes the message's row (a new version of it, seen
// by its xmin) only when the names change: a new name, or a name's last
// reactor taken back; not a reactor more or less on a name that stays, nor
// a take back of a reactor who is not there.
func TestReactOneWritesTheMessageOnlyWhenItChanges(t *testing.T) {
	ctx := t.Context()
	s := engine(t, "postgres").Open(t)
	alice, bob, carol := putContact(t, s, "alice"), putContact(t, s, "bob"), putContact(t, s, "carol")
	m := send(t, s, "c", alice, sec(1))
	version := func() string {
		var v string
		require.NoError(t, s.DB().NewRaw("SELECT xmin::text FROM messages WHERE id = ?", m.ID).Scan(ctx, &v))
		return v
	}
	steps := []struct {
		what   string
		ch     driver.MessageChange
		writes bool
		names  int
	}{
		{"a new name", driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: alice.ID, Add: []string{"x"}}}, true, 1},
		{"a reactor more", driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: bob.ID, Add: []string{"x"}}}, false, 1},
		{"a reactor who is there", driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: bob.ID, Add: []string{"x"}}}, false, 1},
		{"a reactor less", driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: alice.ID, Remove: []string{"x"}}}, false, 1},
		{"a reactor who is not there", driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: carol.ID, Remove: []string{"x"}}}, false, 1},
		{"the name's last reactor", driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: bob.ID, Remove: []string{"x"}}}, true, 0},
	}
	for _, step := range steps {
		before := version()
		got, err := s.Driver().UpdateMessage(ctx, m.ID, step.ch)
		require.NoError(t, err, step.what)
		assert.Equal(t, step.writes, version() != before, "%s: the message's row written", step.what)
		assert.Len(t, got.Reactions, step.names, step.what)
		stored, err := s.Driver().GetMessage(ctx, m.ID)
		require.NoError(t, err)
		assert.Equal(t, stored, got, "%s: the answer is the message as stored", step.what)
	}
}

// TestReactOneHeadAfterASequenceReset: on PostgreSQL the reactor that
// takes a name to 100 moves head_seq to the greatest seq of the 100 even
// when its own seq is lower (the reactions' sequence set back, as a copy
// may leave it): the message still embeds all 100.
func TestReactOneHeadAfterASequenceReset(t *testing.T) {
	ctx := t.Context()
	s := engine(t, "postgres").Open(t)
	const max = messaging.MaxEmbeddedReactors
	alice := putContact(t, s, "alice")
	m := send(t, s, "c", alice, sec(1))
	other := send(t, s, "c", alice, sec(2))
	var cids []string
	for i := range max {
		cids = append(cids, putContact(t, s, fmt.Sprint("u", i)).ID)
	}
	// Seqs 1 to 200 taken and freed, so that the sequence can go back.
	for _, id := range cids {
		for _, name := range []string{"a", "b"} {
			_, err := s.Driver().UpdateMessage(ctx, other.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: id, Add: []string{name}}})
			require.NoError(t, err)
		}
	}
	_, err := s.DB().ExecContext(ctx, "DELETE FROM reaction_names WHERE message_id = ?", other.ID)
	require.NoError(t, err)
	for _, id := range cids[:max-1] {
		_, err := s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: id, Add: []string{"x"}}})
		require.NoError(t, err)
	}
	_, err = s.DB().ExecContext(ctx, "SELECT setval(pg_get_serial_sequence('reactions', 'seq'), 1)")
	require.NoError(t, err)
	got, err := s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: cids[max-1], Add: []string{"x"}}})
	require.NoError(t, err)
	require.Len(t, got.Reactions, 1)
	assert.Equal(t, max, got.Reactions[0].Count)
	assert.Len(t, got.Reactions[0].Reactors, max, "the 100 are embedded")
	assert.Equal(t, "u99", got.Reactions[0].Reactors[0], "the last, with the lowest seq, first")
	stored, err := s.Driver().GetMessage(ctx, m.ID)
	require.NoError(t, err)
	assert.Equal(t, got, stored)
}
