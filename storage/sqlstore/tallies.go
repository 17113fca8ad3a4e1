package sqlstore

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// Deferred counting (PostgreSQL, MySQL). A send that updated its
// conversation's row and its sender's membership row would hold their
// locks until its commit's WAL flush, so that concurrent sends to one
// conversation would commit one flush at a time. There, a send takes no
// lock that another send waits for: it inserts its message and a tally of
// it (message_tallies: the message's id, conversation, sender and time),
// and makes sure the conversation and the sender's membership rows exist
// without writing them when they do. The tallies are folded into the
// counters later, under the conversation's row lock, by fold: before a
// conversation is read (GetConversation, ListConversations, MarkRead) and
// every foldEvery sends of a process. A fold counts each message in
// message_count, in its sender's own_count, in the read counts of the
// readers whose position is at or after it, and makes the newest the last
// message, then deletes the tallies it counted, in one transaction; so the
// counters of a conversation are always those of its folded messages, and
// the tallies the rest.
//
// Whatever reads or changes counters holds the conversation's row lock,
// as a fold does (sends do not): a delete removes its message's tally if
// there is one (its message was never counted) or uncounts it; MarkRead
// folds, then counts the messages after the new position less the tallies
// among them, in one statement (a send committing meanwhile adds both).
// A snapshot (storecopy) never writes: it adds the tallies it sees to the
// counters it reads.
//
// SQLite serializes every write on its one writer, so there a send counts
// its message in its own transaction (touchConversation): deferring would
// save no waiting.

// foldEvery is how many sends of a Store pass between two folds
// (Store.foldEvery, which tests change), so that tallies stay few.
const foldEvery = 64

// foldBatch is the most tallies one fold transaction counts.
const foldBatch = 1000

// deferred reports whether sends leave their counting to fold.
func (s *store) deferred() bool { return s.flavor != flavorSQLite }

// tallyRow is a message not counted yet.
type tallyRow struct {
	MessageID      string    `bun:"message_id"`
	ConversationID string    `bun:"conversation_id"`
	ContactID      string    `bun:"contact_id"`
	CreatedAt      time.Time `bun:"created_at"`
}

// ensureWith returns WITH queries that make sure that conversation conv
// (created at at) and contact's membership row in it exist (PostgreSQL).
// Where they do, they write nothing, and so wait for no lock.
func ensureWith(conv, contact string, at time.Time) (string, []any) {
	at = at.UTC()
	// Typed: prepared (execWrite), a SELECT's parameters would be text.
	return `c AS (INSERT INTO conversations (id, created_at, updated_at) SELECT CAST(? AS text), CAST(? AS timestamptz), CAST(? AS timestamptz)
			WHERE NOT EXISTS (SELECT 1 FROM conversations WHERE id = ?) ON CONFLICT (id) DO NOTHING),
		r AS (INSERT INTO conversation_members (conversation_id, contact_id) SELECT CAST(? AS text), CAST(? AS text)
			WHERE NOT EXISTS (SELECT 1 FROM conversation_members WHERE conversation_id = ? AND contact_id = ?)
			ON CONFLICT (conversation_id, contact_id) DO NOTHING)`,
		[]any{conv, at, at, conv, conv, contact, conv, contact}
}

// ensureRows is ensureWith on MySQL, in tx (READ COMMITTED: each NOT
// EXISTS is a consistent read, which takes no lock).
func (s *store) ensureRows(ctx context.Context, tx bun.Tx, conv, contact string, at time.Time) error {
	at = at.UTC()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT IGNORE INTO conversations (id, created_at, updated_at) SELECT ?, ?, ? FROM DUAL
			WHERE NOT EXISTS (SELECT 1 FROM conversations WHERE id = ?)`, []any{conv, at, at, conv}},
		{`INSERT IGNORE INTO conversation_members (conversation_id, contact_id) SELECT ?, ? FROM DUAL
			WHERE NOT EXISTS (SELECT 1 FROM conversation_members WHERE conversation_id = ? AND contact_id = ?)`, []any{conv, contact, conv, contact}},
	} {
		if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
			return err
		}
	}
	return nil
}

// tallyInsert is the statement that stores the tally of a new message,
// and its arguments.
func tallyInsert(conv, contact, id string, at time.Time) (string, []any) {
	return "INSERT INTO message_tallies (message_id, conversation_id, contact_id, created_at) VALUES (?, ?, ?, ?)",
		[]any{id, conv, contact, at.UTC()}
}

// sent notes a send to conv; every foldEvery sends, the process folds the
// tallies of every conversation, unless it is folding already, so that
// they stay few however many conversations the sends go to. The send has
// committed: a failed fold is only logged.
func (s *store) sent(ctx context.Context, conv string) {
	if !s.deferred() || s.sends.Add(1)%s.foldEvery != 0 || !s.folding.TryLock() {
		return
	}
	defer s.folding.Unlock()
	if err := s.fold(context.WithoutCancel(ctx), ""); err != nil {
		s.opts.Logger.WarnContext(ctx, "sqlstore: folding message tallies", "conversation", conv, "err", err)
	}
}

// Bounds of a fold: the conversations of one transaction, and the
// transactions of one fold (which then has folded at least what was there
// when it began, unless sends outran it; the next fold goes on).
const (
	foldConversations = 100
	foldRounds        = 64
)

// fold counts the tallies of conversation conv, or of every conversation
// when conv is "" (see the top of this file).
func (s *store) fold(ctx context.Context, conv string) error {
	if !s.deferred() {
		return nil
	}
	for range foldRounds {
		var convs []string
		q, args := "SELECT DISTINCT conversation_id FROM message_tallies ORDER BY conversation_id LIMIT ?", []any{foldConversations}
		if conv != "" {
			q, args = "SELECT conversation_id FROM message_tallies WHERE conversation_id = ? LIMIT 1", []any{conv}
		}
		if err := s.w.NewRaw(q, args...).Scan(ctx, &convs); err != nil || len(convs) == 0 {
			return err
		}
		n := 0
		err := s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
			var err error
			n, err = s.foldLocked(ctx, tx, convs)
			return err
		})
		if err != nil || n < foldBatch && len(convs) < foldConversations {
			return err
		}
	}
	return nil
}

// foldLocked counts up to foldBatch tallies of the conversations convs in
// tx, after locking their rows, and returns how many it counted.
func (s *store) foldLocked(ctx context.Context, tx bun.Tx, convs []string) (int, error) {
	type convRow struct {
		ID            string    `bun:"id"`
		UpdatedAt     time.Time `bun:"updated_at"`
		LastMessageID *string   `bun:"last_message_id"`
	}
	var bases []convRow
	if err := tx.NewRaw("SELECT id, updated_at, last_message_id FROM conversations WHERE id IN (?) ORDER BY id"+s.forUpdate(),
		bun.List(convs)).Scan(ctx, &bases); err != nil {
		return 0, err
	}
	// The tallies are read by a plain scan of their index, which marks the
	// entries of the tallies that earlier folds deleted, so that this one
	// and the next skip them; a bitmap scan, which the planner prefers for
	// the few live rows it expects, marks nothing and reads every tally
	// deleted since the last vacuum (measured: 21,536 entries, 5 ms, for
	// 73 tallies after 4 s of sends).
	if err := s.noBitmapScans(ctx, tx); err != nil {
		return 0, err
	}
	var tallies []tallyRow
	if err := tx.NewRaw(`SELECT message_id, conversation_id, contact_id, created_at FROM message_tallies
		WHERE conversation_id IN (?) ORDER BY conversation_id, created_at, message_id LIMIT ?`, bun.List(convs), foldBatch).Scan(ctx, &tallies); err != nil {
		return 0, err
	}
	if len(tallies) == 0 {
		return 0, nil
	}
	// A send makes its conversation's row (ensureWith), and none is ever
	// deleted; should one be missing, the fold makes it rather than drop
	// its count. (The tallies come by conversation, oldest first.)
	have := make(map[string]bool, len(bases))
	for _, b := range bases {
		have[b.ID] = true
	}
	for _, t := range tallies {
		if !have[t.ConversationID] {
			have[t.ConversationID] = true
			if err := s.fileConversation(ctx, tx, t.ConversationID, t.CreatedAt); err != nil {
				return 0, err
			}
			bases = append(bases, convRow{ID: t.ConversationID, UpdatedAt: t.CreatedAt})
		}
	}
	oldest := tallies[0].CreatedAt
	for _, t := range tallies {
		if t.CreatedAt.Before(oldest) {
			oldest = t.CreatedAt
		}
	}
	// The readers whose position is at or after a tallied message: none,
	// unless a message came with a time before someone's position.
	var readers []struct {
		ConversationID string    `bun:"conversation_id"`
		ContactID      string    `bun:"contact_id"`
		ReadCreated    time.Time `bun:"read_created"`
		ReadMessageID  string    `bun:"read_message_id"`
	}
	if err := tx.NewRaw(`SELECT conversation_id, contact_id, read_created, read_message_id FROM conversation_members
		WHERE conversation_id IN (?) AND read_created >= ?`, bun.List(convs), oldest.UTC()).Scan(ctx, &readers); err != nil {
		return 0, err
	}
	type key struct{ conv, contact string }
	type position struct {
		at time.Time
		id string
	}
	positions := make(map[key]position, len(readers))
	for _, r := range readers {
		positions[key{r.ConversationID, r.ContactID}] = position{r.ReadCreated, r.ReadMessageID}
	}

	byConv := make(map[string][]tallyRow, len(bases))
	ids := make([]string, len(tallies))
	for i, t := range tallies {
		ids[i] = t.MessageID
		byConv[t.ConversationID] = append(byConv[t.ConversationID], t)
	}
	var counted []string
	for _, b := range bases {
		ts := byConv[b.ID]
		if len(ts) == 0 {
			continue
		}
		last := ""
		if b.LastMessageID != nil {
			last = *b.LastMessageID
		}
		lastAt, last := newestTallied(ts, b.UpdatedAt, last)
		if _, err := tx.ExecContext(ctx, "UPDATE conversations SET message_count = message_count + ?, updated_at = ?, last_message_id = ? WHERE id = ?",
			len(ts), lastAt.UTC(), last, b.ID); err != nil {
			return 0, err
		}
		counted = append(counted, b.ID)
	}
	if err := s.placeThreads(ctx, tx, counted...); err != nil {
		return 0, err
	}
	// The members whose counters may change: the senders and those
	// readers, in the order of their rows.
	members := make(map[key]bool, len(positions))
	for _, t := range tallies {
		members[key{t.ConversationID, t.ContactID}] = true
	}
	for k := range positions {
		members[k] = true
	}
	keys := slices.Collect(maps.Keys(members))
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(strings.Compare(a.conv, b.conv), strings.Compare(a.contact, b.contact))
	})
	for _, k := range keys {
		pos := positions[k]
		d := talliedFor(byConv[k.conv], k.contact, pos.at, pos.id)
		if d == (memberTally{}) {
			continue // a reader before every tallied message
		}
		q := `INSERT INTO conversation_members (conversation_id, contact_id, own_count, read_count, own_read_count) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (conversation_id, contact_id) DO UPDATE SET own_count = conversation_members.own_count + EXCLUDED.own_count,
			read_count = conversation_members.read_count + EXCLUDED.read_count, own_read_count = conversation_members.own_read_count + EXCLUDED.own_read_count`
		if s.flavor == flavorMySQL {
			q = `INSERT INTO conversation_members (conversation_id, contact_id, own_count, read_count, own_read_count) VALUES (?, ?, ?, ?, ?)
				ON DUPLICATE KEY UPDATE own_count = own_count + VALUES(own_count), read_count = read_count + VALUES(read_count),
				own_read_count = own_read_count + VALUES(own_read_count)`
		}
		if _, err := tx.ExecContext(ctx, q, k.conv, k.contact, d.own, d.read, d.ownRead); err != nil {
			return 0, err
		}
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM message_tallies WHERE message_id IN (?)", bun.List(ids)); err != nil {
		return 0, err
	}
	return len(tallies), nil
}

// noBitmapScans makes the rest of tx on PostgreSQL read indexes by plain
// scans, which mark the entries of dead rows so that later scans skip
// them (folds and the sequencer read rows that churn). The reads it is for
// are not prepared statements: a plan made under it would be kept for the
// connection.
func (s *store) noBitmapScans(ctx context.Context, tx bun.Tx) error {
	if s.flavor != flavorPostgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, "SET LOCAL enable_bitmapscan = off")
	return err
}

// untally removes the tally of message id, about to be deleted in tx
// (which holds its conversation's row lock), and reports whether there
// was one: its message was never counted.
func (s *store) untally(ctx context.Context, tx bun.Tx, id string) (bool, error) {
	if !s.deferred() {
		return false, nil
	}
	res, err := s.execWrite(ctx, tx, "DELETE FROM message_tallies WHERE message_id = ?", id)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// memberTally is what tallies add to a member's counters.
type memberTally struct{ own, read, ownRead int64 }

// talliedFor returns what the tallies ts of a conversation add to the
// counters of contact, whose read position is (readAt, readID) (readID ""
// for none): its own messages, and those at or before its position (see
// the top of conversations.go). A fold writes it; a snapshot adds it.
func talliedFor(ts []tallyRow, contact string, readAt time.Time, readID string) memberTally {
	var d memberTally
	for _, t := range ts {
		own := t.ContactID == contact
		if own {
			d.own++
		}
		if readID != "" && placeCmp(t.CreatedAt, t.MessageID, readAt, readID) <= 0 {
			d.read++
			if own {
				d.ownRead++
			}
		}
	}
	return d
}

// newestTallied returns the newer of the message (at, id) (id "" for none)
// and the newest of the tallies ts of its conversation: the conversation's
// last message and time once they are counted.
func newestTallied(ts []tallyRow, at time.Time, id string) (time.Time, string) {
	for _, t := range ts {
		if id == "" || placeCmp(t.CreatedAt, t.MessageID, at, id) > 0 {
			at, id = t.CreatedAt, t.MessageID
		}
	}
	return at, id
}

// placeCmp compares the places (created_at, then id) of two messages in
// their conversation's order.
func placeCmp(at time.Time, id string, bt time.Time, bid string) int {
	return cmp.Or(at.Compare(bt), strings.Compare(id, bid))
}
