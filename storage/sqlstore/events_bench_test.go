package sqlstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/sqlstore"
)

// BenchmarkResume measures issue 29's target for a resume: a stream that
// resumes after 100 events of its caller's conversation costs the same
// whether the outbox holds 10,000 or 1,000,000 events of conversations the
// caller may not see, committed between its last event and the 100 (so a
// read of the seq range would pass over all of them). The caller sees its
// conversations only (MembersOnly); the resume goes through the Feed.
//
//	go test ./storage/sqlstore -run '^$' -bench Resume -benchtime 200x
//
// PARLEY_BENCH_EVENTS (default 1000000) sets the large size; the small
// one is 10,000 (or the large one, when it is smaller).
func BenchmarkResume(b *testing.B) {
	big := benchSize("PARLEY_BENCH_EVENTS", 1_000_000)
	for _, e := range backendtest.SQL(b) {
		b.Run(e.Name, func(b *testing.B) {
			for _, n := range []int{min(10_000, big), big} {
				b.Run(fmt.Sprintf("others=%d", n), func(b *testing.B) {
					benchResume(b, e, n)
				})
			}
		})
	}
}

func benchResume(b *testing.B, e backendtest.SQLEngine, others int) {
	ctx := b.Context()
	s := e.Open(b)
	msgs := svctest.New(b, s, nil, &messaging.Options{Policy: messaging.MembersOnly()})
	me, err := msgs.SaveContact(ctx, messaging.Contact{Username: "me"})
	require.NoError(b, err)
	require.NoError(b, msgs.AddMember(ctx, "mine", me.ID))
	send := func() {
		_, err := msgs.Create(ctx, me, messaging.NewMessage{ConversationID: "mine", Text: "hello"})
		require.NoError(b, err)
	}
	send()
	page, err := msgs.Events().Events(ctx, me, "", messaging.ListOptions{Limit: 1})
	require.NoError(b, err)
	require.Len(b, page.Data, 1)
	after := page.Data[0].ID
	loadOtherEvents(b, s, e.Name, others)
	const missed = 100
	for range missed {
		send()
	}
	analyze := map[string]string{"mysql": "ANALYZE TABLE events"}[e.Name]
	if analyze == "" {
		analyze = "ANALYZE"
	}
	_, err = s.DB().ExecContext(ctx, analyze)
	require.NoError(b, err)

	// A Service opened now: its Feed starts after the last event, as a
	// server's does, rather than delivering the load to the first stream.
	feed := svctest.New(b, s, nil, &messaging.Options{Policy: messaging.MembersOnly()}).Events()
	for b.Loop() {
		sub, err := feed.Subscribe(ctx, me, events.SubscribeOptions{After: after})
		require.NoError(b, err)
		for range missed {
			ev, err := sub.Next(ctx)
			require.NoError(b, err)
			if ev.ConversationID != "mine" {
				b.Fatalf("resumed with an event of %q", ev.ConversationID)
			}
		}
		sub.Close()
	}
}

// loadOtherEvents bulk-loads n events of 1,000 other conversations into
// the outbox of s, after every event stored, as if committed by sends.
func loadOtherEvents(b *testing.B, s *sqlstore.Store, engine string, n int) {
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	at := time.Now().UTC()
	db := s.DB()
	switch engine {
	case "sqlite":
		_, err := db.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
			INSERT INTO events (type, conversation_id, created_at, payload)
			SELECT 'message.created', 'other-' || (i % 1000), ?, '{}' FROM n`, n, at)
		require.NoError(b, err)
	case "postgres":
		// Into the log, and copied as the sequencer would (after every
		// event copied: none is pending).
		_, err := db.ExecContext(ctx, `WITH l AS (INSERT INTO event_log (type, conversation_id, created_at, payload)
				SELECT 'message.created', 'other-' || (i % 1000), ?, '{}' FROM generate_series(1, ?) AS i RETURNING *),
			c AS (INSERT INTO events (seq, pos, type, conversation_id, created_at, payload)
				SELECT q.last_seq + row_number() OVER (ORDER BY l.pos), l.pos, l.type, l.conversation_id, l.created_at, l.payload
				FROM l, event_sequence AS q WHERE q.id = 1 RETURNING pos)
			UPDATE event_sequence SET last_seq = last_seq + (SELECT count(*) FROM c), high_pos = (SELECT max(pos) FROM c) WHERE id = 1`, at, n)
		require.NoError(b, err)
	case "mysql":
		// Into the log, and copied as the sequencer would.
		var last, high int64
		require.NoError(b, db.QueryRowContext(ctx, "SELECT last_seq, high_pos FROM event_sequence WHERE id = 1").Scan(&last, &high))
		const batch = 2000
		for i := 0; i < n; i += batch {
			k := min(batch, n-i)
			args := make([]any, 0, 2*k)
			for j := range k {
				args = append(args, fmt.Sprintf("other-%d", (last+int64(i+j)+1)%1000), at)
			}
			values := strings.Repeat("('message.created', ?, ?, '{}'), ", k)
			_, err := db.ExecContext(ctx, "INSERT INTO event_log (type, conversation_id, created_at, payload) VALUES "+values[:len(values)-2], args...)
			require.NoError(b, err)
		}
		_, err := db.ExecContext(ctx, `INSERT INTO events (seq, pos, type, conversation_id, created_at, payload)
			SELECT ? + ROW_NUMBER() OVER (ORDER BY l.pos), l.pos, l.type, l.conversation_id, l.created_at, l.payload
			FROM event_log AS l WHERE l.pos > ?`, last, high)
		require.NoError(b, err)
		_, err = db.ExecContext(ctx, "UPDATE event_sequence SET last_seq = last_seq + ?, high_pos = (SELECT MAX(pos) FROM event_log) WHERE id = 1", n)
		require.NoError(b, err)
	default:
		b.Fatalf("no bulk load for %s", engine)
	}
}
