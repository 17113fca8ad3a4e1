package sqlstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/cputime"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/sqlstore"
)

// readFixture is a SQLite store of n messages in conversation "c", one
// second apart: every third with a reaction, every fifth with an
// attachment; and 40 single-message conversations, more than a list
// reads as separate branches.
type readFixture struct {
	s        *sqlstore.Store
	contact  messaging.Contact
	messages []messaging.Message // oldest first
	atts     []messaging.Attachment
	convs    []string
}

func newReadFixture(tb testing.TB, n int) *readFixture {
	tb.Helper()
	ctx := context.Background()
	s, err := sqlstore.Open(ctx, filepath.Join(tb.TempDir(), "parley.db"), quiet)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() })
	require.NoError(tb, s.Migrate(ctx))
	f := &readFixture{s: s}
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	f.contact = messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: base}
	require.NoError(tb, s.Driver().PutContact(ctx, f.contact))
	for i := range n {
		at := base.Add(time.Duration(i)*time.Second + 123456*time.Microsecond)
		m := messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: "c", Contact: f.contact, Text: fmt.Sprint("m", i), CreatedAt: at}
		var link []string
		if i%5 == 0 {
			a := messaging.Attachment{ID: ids.NewAt(ids.Attachment, at), UploaderID: f.contact.ID, Filename: "f.txt", FileType: "text/plain", Key: fmt.Sprint("k/", i), CreatedAt: at}
			require.NoError(tb, s.Driver().CreateAttachment(ctx, a, nil))
			link = []string{a.ID}
			f.atts = append(f.atts, a)
		}
		require.NoError(tb, s.Driver().CreateMessage(ctx, m, link, nil))
		if i%3 == 0 {
			_, err := s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: "alice", Add: []string{"x"}}})
			require.NoError(tb, err)
		}
		f.messages = append(f.messages, m)
	}
	for i := range 40 {
		conv := fmt.Sprint("conv_", i)
		at := base.Add(time.Duration(i) * time.Minute)
		require.NoError(tb, s.Driver().CreateMessage(ctx, messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: conv, Contact: f.contact, Text: "x", CreatedAt: at}, nil, nil))
		if i%2 == 0 { // alice is a member of 20 conversations
			require.NoError(tb, s.Driver().AddMember(ctx, conv, f.contact.ID, at))
		}
		f.convs = append(f.convs, conv)
	}
	return f
}

// TestPreparedReadsMatchBun: every read gives the same answer through
// SQLite's prepared statements as through bun, and does take the prepared
// path (no silent fallback).
func TestPreparedReadsMatchBun(t *testing.T) {
	f := newReadFixture(t, 60)
	ctx := t.Context()
	mid := f.messages[30]
	cursor := &driver.Cursor{Time: mid.CreatedAt, ID: mid.ID}
	reads := map[string]func() (any, error){
		"GetMessage with reactions and attachments": func() (any, error) { return f.s.Driver().GetMessage(ctx, f.messages[0].ID) },
		"GetMessage missing":                        func() (any, error) { return f.s.Driver().GetMessage(ctx, "msg_none") },
		"GetContact":                                func() (any, error) { return f.s.Driver().GetContact(ctx, f.contact.ID) },
		"ContactByUsername":                         func() (any, error) { return f.s.Driver().ContactByUsername(ctx, "alice") },
		"GetAttachment":                             func() (any, error) { return f.s.Driver().GetAttachment(ctx, f.atts[3].ID) },
		"ListMessages first page": func() (any, error) {
			items, more, err := f.s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 20}})
			return []any{items, more}, err
		},
		"ListMessages after a cursor": func() (any, error) {
			items, more, err := f.s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 7, After: cursor}})
			return []any{items, more}, err
		},
		"ListMessages before a cursor": func() (any, error) {
			items, more, err := f.s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 7, Before: cursor}})
			return []any{items, more}, err
		},
		"ListMessages of many conversations": func() (any, error) {
			// 16, the most ids a prepared list holds (TestLongListsNotPrepared).
			items, more, err := f.s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: f.convs[:16]}, Window: driver.Window{Limit: 50}})
			return []any{items, more}, err
		},
		"ListAttachments": func() (any, error) {
			items, more, err := f.s.Driver().ListAttachments(ctx, driver.AttachmentQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 5, After: cursor}})
			return []any{items, more}, err
		},
		"ListMessages of a member": func() (any, error) {
			items, more, err := f.s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{MemberID: f.contact.ID, ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 30}})
			return []any{items, more}, err
		},
		"GetConversation": func() (any, error) { return f.s.Driver().GetConversation(ctx, "c", f.contact.ID) },
		"ListConversations": func() (any, error) {
			items, more, err := f.s.Driver().ListConversations(ctx, driver.ConversationQuery{Scope: driver.Scope{MemberID: f.contact.ID, ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 10}, ViewerID: f.contact.ID})
			return []any{items, more}, err
		},
		"IsMember": func() (any, error) { return f.s.Driver().IsMember(ctx, "conv_2", f.contact.ID) },
		"ListMembers": func() (any, error) {
			items, more, err := f.s.Driver().ListMembers(ctx, driver.MemberQuery{Window: driver.Window{After: &driver.Cursor{ID: "conv_1"}, Limit: 5}, ContactID: f.contact.ID})
			return []any{items, more}, err
		},
		"KeysInUse":        func() (any, error) { return f.s.Driver().KeysInUse(ctx, []string{"k/0", "k/5", "k/none"}) },
		"PendingDeletions": func() (any, error) { return f.s.Driver().PendingDeletions(ctx, 10) },
	}
	for name, read := range reads {
		t.Run(name, func(t *testing.T) {
			sqlstore.SetPreparedReads(f.s, false)
			want, wantErr := read()
			sqlstore.SetPreparedReads(f.s, true)
			got, gotErr := read()
			assert.Equal(t, want, got)
			assert.Equal(t, wantErr, gotErr)
			assert.Positive(t, sqlstore.Prepared(f.s), "the read was prepared")
		})
	}
	if items, _, err := f.s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 60}}); assert.NoError(t, err) {
		assert.Len(t, items, 60, "the fixture")
	}
}

// BenchmarkSQLiteReads compares SQLite's two read paths on the reads that
// serve requests: statements prepared once per connection, and bun's
// (which SQLite parses and plans on every query).
func BenchmarkSQLiteReads(b *testing.B) {
	f := newReadFixture(b, 1000)
	ctx := b.Context()
	last := f.messages[len(f.messages)-1].ID // with a reaction
	first := f.messages[0].ID                // with a reaction and an attachment
	page := driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 20}}
	reads := []struct {
		name string
		read func() error
	}{
		{"GetMessage", func() error { _, err := f.s.Driver().GetMessage(ctx, last); return err }},
		{"GetMessageFull", func() error { _, err := f.s.Driver().GetMessage(ctx, first); return err }},
		{"GetContact", func() error { _, err := f.s.Driver().GetContact(ctx, f.contact.ID); return err }},
		{"ListMessages", func() error { _, _, err := f.s.Driver().ListMessages(ctx, page); return err }},
		{"ListAttachments", func() error {
			_, _, err := f.s.Driver().ListAttachments(ctx, driver.AttachmentQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: 20}})
			return err
		}},
	}
	for _, path := range []string{"prepared", "bun"} {
		sqlstore.SetPreparedReads(f.s, path == "prepared")
		for _, r := range reads {
			b.Run(path+"/"+r.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := r.read(); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(path+"/"+r.name+"Parallel", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := r.read(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// TestPostgresPagePartsPrepared: on PostgreSQL the reactions and
// attachments of a page are read by prepared statements (on the store's
// one connection, the server holds them), a list of more than 16 ids
// (exactIDs) padded to a power of two; the page is the same either way.
func TestPostgresPagePartsPrepared(t *testing.T) {
	e := engine(t, "postgres")
	dsn := e.DSN(t)
	require.NoError(t, open(t, dsn).Migrate(t.Context()))
	s := open(t, dsn, &sqlstore.Options{Logger: discard, MaxOpenConns: 1})
	ctx := t.Context()
	reactedMessages(t, s, putContact(t, s, "alice"), 20)
	// The statements of reactions and of attachments by a list of ids
	// that the server holds prepared.
	prepared := func() (reactions, attachments []string) {
		var qs []string
		require.NoError(t, s.DB().NewRaw("SELECT statement FROM pg_prepared_statements").Scan(ctx, &qs))
		for _, q := range qs {
			switch {
			case strings.HasPrefix(q, "SELECT n.message_id, n.name, n.reactors AS reactor_count") && strings.Contains(q, "IN ("):
				reactions = append(reactions, q)
			case strings.Contains(q, "FROM attachments AS a WHERE a.message_id IN ("):
				attachments = append(attachments, q)
			}
		}
		return reactions, attachments
	}
	for _, limit := range []int{10, 20} {
		page, _, err := s.Driver().ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: limit}})
		require.NoError(t, err)
		require.Len(t, page, limit)
		for _, m := range page {
			assert.Equal(t, []messaging.Reaction{{Name: "x", Reactors: []string{"alice"}, Count: 1}}, m.Reactions)
			require.Len(t, m.Attachments, 1)
		}
	}
	reactions, attachments := prepared()
	for what, qs := range map[string][]string{"reactions": reactions, "attachments": attachments} {
		require.Len(t, qs, 2, "%s: those of 10 and of 20 messages prepared", what)
		slices.SortFunc(qs, func(a, b string) int { return len(a) - len(b) })
		assert.Contains(t, qs[0], "$10)", what)
		assert.NotContains(t, qs[0], "$11", what)
		assert.Contains(t, qs[1], "$32)", what, "20 ids padded to 32")
		assert.NotContains(t, qs[1], "$33", what)
	}
}

// reactedMessages sends n messages of c to the conversation "c", a second
// apart, each with an attachment and c's reaction "x".
func reactedMessages(tb testing.TB, s *sqlstore.Store, c messaging.Contact, n int) {
	tb.Helper()
	ctx := tb.Context()
	for i := range n {
		at := sec(i)
		a := messaging.Attachment{ID: ids.NewAt(ids.Attachment, at), UploaderID: c.ID, Filename: "f.txt", FileType: "text/plain", Key: fmt.Sprint("k/", i), CreatedAt: at}
		require.NoError(tb, s.Driver().CreateAttachment(ctx, a, nil))
		m := messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: "c", Contact: c, Text: "m", CreatedAt: at}
		require.NoError(tb, s.Driver().CreateMessage(ctx, m, []string{a.ID}, nil))
		_, err := s.Driver().UpdateMessage(ctx, m.ID, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: c.ID, Add: []string{"x"}}})
		require.NoError(tb, err)
	}
}

// BenchmarkPageLists reads first pages of n messages on SQLite, each with
// a reaction and an attachment: both are read by lists of n ids, prepared
// up to 128 ids, padded to a power of two beyond 16 (DESIGN.md §4.7).
func BenchmarkPageLists(b *testing.B) {
	ctx := b.Context()
	s, err := sqlstore.Open(ctx, filepath.Join(b.TempDir(), "parley.db"), quiet)
	require.NoError(b, err)
	b.Cleanup(func() { _ = s.Close() })
	require.NoError(b, s.Migrate(ctx))
	c := messaging.Contact{ID: ids.New(ids.Contact), Username: "alice", CreatedAt: base}
	require.NoError(b, s.Driver().PutContact(ctx, c))
	reactedMessages(b, s, c, 100)
	for _, n := range []int{10, 17, 24, 32, 50, 100} {
		page := driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"c"}}, Window: driver.Window{Limit: n}}
		b.Run(fmt.Sprint("page", n), func(b *testing.B) {
			b.ReportAllocs()
			cpu := cputime.Process(b)
			for b.Loop() {
				if _, _, err := s.Driver().ListMessages(ctx, page); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cputime.Process(b)-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
