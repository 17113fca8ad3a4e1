package sqlstore

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// mysqlEngine is MySQL 8 and MariaDB 10.6+ (package mysql). Transactions
// run at READ COMMITTED: REPEATABLE READ, InnoDB's default, takes gap
// locks and reads a snapshot after a locking read.
type mysqlEngine struct{ engineDefaults }

var mysqlSQL = withStandard(dialectSQL{
	rangeAfterCursor: true,
	txOptions:        &sql.TxOptions{Isolation: sql.LevelReadCommitted},
	snapshotOptions:  &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
	forUpdate:        " FOR UPDATE",
	skip:             " ON DUPLICATE KEY UPDATE %[1]s = %[1]s",
	// Not ON DUPLICATE KEY UPDATE, which counts the row found (clientFoundRows);
	// its users check every value before, so IGNORE hides no other error.
	insertNew:   "INSERT IGNORE INTO",
	beforeSlash: "SUBSTRING_INDEX(%[1]s, '/', 1)",
	// Without the contact, whose row a locking read would lock too.
	lockMessage: "SELECT " + messageOwnCols + " FROM messages AS m WHERE m.id = ? FOR UPDATE",
	// One row a reactor: GROUP_CONCAT is cut at group_concat_max_len (1 KiB).
	reactions:      reactionsRowsSQL,
	reactionsOrder: " ORDER BY n.message_id, n.seq, r.seq",
	eventGate:      mysqlGate,
	// The log's rows with their copies, counted with them.
	pruneEvents:    "DELETE e, l FROM events AS e JOIN event_log AS l ON l.pos = e.pos WHERE e.seq > 0 AND e.seq <= ?",
	prunedPerEvent: 2,
	// Assignments run in order, each seeing those before it.
	countSend: `INSERT INTO conversations (id, created_at, updated_at, message_count, last_message_id)
		VALUES (?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE message_count = message_count + VALUES(message_count),
		last_message_id = IF(last_message_id IS NULL OR VALUES(updated_at) > updated_at
			OR (VALUES(updated_at) = updated_at AND VALUES(last_message_id) > last_message_id), VALUES(last_message_id), last_message_id),
		updated_at = IF(last_message_id = VALUES(last_message_id), VALUES(updated_at), updated_at)`,
	countOwn: `INSERT INTO conversation_members (conversation_id, contact_id, own_count) VALUES (?, ?, ?)
		ON DUPLICATE KEY UPDATE own_count = own_count + VALUES(own_count)`,
	addMember: `INSERT INTO conversation_members (conversation_id, contact_id, is_member, joined_at) VALUES (?, ?, TRUE, ?)
		ON DUPLICATE KEY UPDATE joined_at = IF(is_member, joined_at, VALUES(joined_at)), is_member = TRUE`,
	takers: `INSERT INTO conversation_members (conversation_id, contact_id, joined_at) VALUES %[1]s
		ON DUPLICATE KEY UPDATE joined_at = COALESCE(joined_at, VALUES(joined_at))`,
	pruneKeys:    "DELETE FROM idempotency_keys WHERE expires_at <= ? ORDER BY expires_at LIMIT %[1]d",
	pruneKeyArgs: 1,
	wordMark:     mysqlWordMark,
})

// lockMigrations holds GET_LOCK on a connection of its own, as DDL commits
// implicitly (DESIGN.md §4.1); unlock releases it, or drops the connection.
func (mysqlEngine) lockMigrations(ctx context.Context, s *store) (unlock func(), err error) {
	const key = "CONCAT('parley.migrate:', SHA1(DATABASE()))"
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return nil, err
	}
	var got *int64
	if err = conn.NewRaw("SELECT GET_LOCK("+key+", 600)").Scan(ctx, &got); err == nil && (got == nil || *got != 1) {
		err = errors.New("timed out waiting for the migration lock")
	}
	drop := func() { // the session ends, and its lock with it
		_ = conn.Raw(func(any) error { return sqldriver.ErrBadConn })
		_ = conn.Close()
	}
	if err != nil {
		drop()
		return nil, err
	}
	return func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK("+key+")"); err != nil {
			drop()
		}
		_ = conn.Close()
	}, nil
}

// putContact updates, or inserts: ON DUPLICATE KEY UPDATE would fire on
// the username's key too. An insert that meets a taken key looks again,
// once, for a concurrent insert of the id.
func (mysqlEngine) putContact(ctx context.Context, s *store, args []any) error {
	return s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		for range 2 {
			var n int
			if err := tx.NewRaw("SELECT COUNT(*) FROM contacts WHERE id = ? FOR UPDATE", args[0]).Scan(ctx, &n); err != nil {
				return err
			}
			query, qargs := `INSERT INTO contacts (`+contactCols+`) VALUES (?, ?, ?, ?, ?, ?)`, args
			if n > 0 {
				query, qargs = `UPDATE contacts SET username = ?, phone_number = ?, avatar_url = ?,
					last_active_at = ?, created_at = ? WHERE id = ?`, append(args[1:len(args):len(args)], args[0])
			}
			_, err := tx.ExecContext(ctx, query, qargs...)
			switch {
			case !isUniqueViolation(err):
				return err
			case n > 0:
				return errUsernameTaken
			}
		}
		return errUsernameTaken
	})
}

// storeKey reads the row in the way, locked: MySQL has no conditional upsert.
func (mysqlEngine) storeKey(ctx context.Context, _ *store, tx bun.Tx, done driver.IdempotencyRecord, taken error) error {
	var rows []keyRow
	if err := tx.NewRaw("SELECT "+keyCols+" FROM idempotency_keys WHERE scope = ? AND client_key = ? FOR UPDATE", done.Scope, done.Key).Scan(ctx, &rows); err != nil {
		return err
	}
	if len(rows) == 0 {
		_, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (`+keyCols+`)
			VALUES (?, ?, ?, '', ?, ?, ?)`, done.Scope, done.Key, done.Fingerprint, done.Result, done.CreatedAt.UTC(), done.ExpiresAt.UTC())
		if isUniqueViolation(err) {
			return taken // stored by another call meanwhile
		}
		return err
	}
	if cur := rows[0].record(); cur.ExpiresAt.After(done.CreatedAt) && (cur.Lock == "" || cur.Lock != done.Lock) {
		return taken
	}
	_, err := tx.ExecContext(ctx, `UPDATE idempotency_keys SET fingerprint = ?, lock_token = '', result = ?, created_at = ?, expires_at = ?
		WHERE scope = ? AND client_key = ?`, done.Fingerprint, done.Result, done.CreatedAt.UTC(), done.ExpiresAt.UTC(), done.Scope, done.Key)
	return err
}

// mysqlGate is an event's type read through the gate's shared lock
// (DESIGN.md §4.3; MariaDB has no FOR SHARE).
const mysqlGate = "(SELECT ? FROM event_sequence WHERE id = 2 LOCK IN SHARE MODE)"

// A hole older than gateAge makes passes try the gate (NOWAIT); older than
// gateWait, wait for it: most holes are writers in flight (DESIGN.md §4.3).
var gateAge, gateWait = time.Second, 10 * time.Second

// hole is a range of positions a pass found unseen, first at found (Unix
// ms, which only paces the gate), kept as "from:to:found" in event_sequence.
type hole struct{ from, to, found int64 }

func parseHoles(text string) ([]hole, error) {
	var hs []hole
	for _, f := range strings.Fields(text) {
		var h hole
		if _, err := fmt.Sscanf(f, "%d:%d:%d", &h.from, &h.to, &h.found); err != nil {
			return nil, fmt.Errorf("sqlstore: bad hole %q in event_sequence: %w", f, err)
		}
		hs = append(hs, h)
	}
	return hs, nil
}

func holesText(hs []hole) string {
	fs := make([]string, len(hs))
	for i, h := range hs {
		fs[i] = fmt.Sprintf("%d:%d:%d", h.from, h.to, h.found)
	}
	return strings.Join(fs, " ")
}

// cutHole appends to dst what a read of the positions got (sorted) left of h.
func cutHole(dst []hole, h hole, got []int64) []hole {
	lo := h.from
	for i, _ := slices.BinarySearch(got, h.from); i < len(got) && got[i] <= h.to; i++ {
		if got[i] > lo {
			dst = append(dst, hole{lo, got[i] - 1, h.found})
		}
		lo = got[i] + 1
	}
	if lo <= h.to {
		dst = append(dst, hole{lo, h.to, h.found})
	}
	return dst
}

// sequence copies the committed rows of event_log into events, numbered,
// by passes (mysqlPass) while a pass reads a full batch (DESIGN.md §4.3).
func (mysqlEngine) sequence(ctx context.Context, s *store) error {
	for {
		// The probe, outside the lock: a reader with nothing to copy writes nothing.
		var probe []struct {
			Holes string `bun:"holes"`
			High  int64  `bun:"high_pos"`
		}
		if err := s.read(ctx, &probe, `SELECT COALESCE(q.holes, '') AS holes, q.high_pos FROM event_sequence AS q
			WHERE q.id = 1 AND (q.holes <> '' OR (SELECT MAX(l.pos) FROM event_log AS l) > q.high_pos)`); err != nil || len(probe) == 0 {
			return err
		}
		known, err := parseHoles(probe[0].Holes)
		if err != nil {
			return err
		}
		s.seqMu.Lock() // one sequencer of this process at a time; others wait, then find less to do
		proven := int64(0)
		now := time.Now().UnixMilli()
		oldest := now
		for _, h := range known {
			oldest = min(oldest, h.found)
		}
		if len(known) > 0 && now-oldest >= gateAge.Milliseconds() {
			// The gate, exclusively, released at once: granted, the known
			// holes' writers have ended. Failed, the holes wait a later pass.
			gate := "SELECT id FROM event_sequence WHERE id = 2 FOR UPDATE"
			if now-oldest < gateWait.Milliseconds() {
				gate += " NOWAIT"
			}
			err := s.w.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				_, err := tx.ExecContext(ctx, gate)
				return err
			})
			switch {
			case err == nil:
				proven = probe[0].High
			case ctx.Err() != nil:
				s.seqMu.Unlock()
				return err
			}
		}
		n := 0
		err = s.write(ctx, func(ctx context.Context, tx bun.Tx) (err error) {
			n, err = mysqlPass(ctx, s, tx, proven)
			return err
		})
		s.seqMu.Unlock()
		if err != nil || n < maxSequence {
			return err
		}
	}
}

// mysqlPass copies up to maxSequence committed rows of event_log past
// high_pos, and those of the holes, into events, numbered, and returns how
// many it read past high_pos; it forgets the holes up to proven it does not
// read. A pass that copies nothing and forgets nothing writes nothing.
func mysqlPass(ctx context.Context, s *store, tx bun.Tx, proven int64) (int, error) {
	type state struct {
		Last  int64  `bun:"last_seq"`
		High  int64  `bun:"high_pos"`
		Holes string `bun:"holes"`
	}
	st, err := readOne[state](ctx, s.txReads(tx), "event sequence", "SELECT last_seq, high_pos, COALESCE(holes, '') AS holes FROM event_sequence WHERE id = 1 FOR UPDATE")
	if err != nil {
		return 0, err
	}
	holes, err := parseHoles(st.Holes)
	if err != nil {
		return 0, err
	}
	// The positions to copy: a consistent read, after the lock and the gate.
	query, args := "(SELECT pos FROM event_log WHERE pos > ? ORDER BY pos LIMIT ?)", []any{st.High, maxSequence}
	if len(holes) > 0 {
		query += " UNION ALL (SELECT pos FROM event_log WHERE " + strings.Repeat(" OR pos BETWEEN ? AND ?", len(holes))[4:] + ")"
		for _, h := range holes {
			args = append(args, h.from, h.to)
		}
	}
	var got []int64
	if err := tx.NewRaw(query, args...).Scan(ctx, &got); err != nil {
		return 0, err
	}
	slices.Sort(got)
	past, _ := slices.BinarySearch(got, st.High+1)
	past = len(got) - past
	top := st.High
	if past > 0 {
		top = got[len(got)-1]
	}
	var kept []hole
	for _, h := range holes {
		if h.to > proven {
			kept = cutHole(kept, h, got)
		}
	}
	kept = cutHole(kept, hole{st.High + 1, top, time.Now().UnixMilli()}, got)
	if len(got) == 0 && len(kept) == len(holes) {
		return 0, nil // nothing copied, nothing forgotten
	}
	n := int64(0)
	if len(got) > 0 {
		if n, err = affected(tx.ExecContext(ctx, `INSERT INTO events (seq, pos, type, conversation_id, audience_id, created_at, payload, deleted_id)
			SELECT ? + ROW_NUMBER() OVER (ORDER BY l.pos), l.pos, l.type, l.conversation_id, l.audience_id, l.created_at, l.payload, l.deleted_id
			FROM event_log AS l WHERE l.pos IN (?)`, st.Last, bun.List(got))); err != nil {
			return 0, err
		}
		if n != int64(len(got)) {
			return 0, fmt.Errorf("sqlstore: the sequencer copied %d of %d events", n, len(got))
		}
	}
	_, err = tx.ExecContext(ctx, "UPDATE event_sequence SET last_seq = ?, high_pos = ?, holes = ? WHERE id = 1", st.Last+n, top, holesText(kept))
	return past, err
}

const mysqlWordMark = "ww" // before every word, so none is shorter than innodb_ft_min_token_size

// maxSearchScan is the most rows of named conversations (their
// message_count) that a search tests one by one rather than ask FULLTEXT.
var maxSearchScan int64 = 50_000

// searchWindow, then as many as the matches found say a page needs up to
// maxSearchWindow, are the rows a search of all walks before FULLTEXT.
var searchWindow, maxSearchWindow = 1_000, 20_000

// mysqlWords returns the condition on m, by LIKE, that its words hold q's,
// with its arguments, and q as a query of FULLTEXT in boolean mode.
func mysqlWords(q driver.SearchQuery) (like string, args []any, boolean string) {
	var conds, terms []string
	for _, w := range q.Words {
		conds, args = append(conds, "CONCAT(' ', m.search_words, ' ') LIKE ?"), append(args, "% "+mysqlWordMark+w+" %")
		terms = append(terms, "+"+mysqlWordMark+w)
	}
	if q.Prefix != "" {
		conds, args = append(conds, "CONCAT(' ', m.search_words) LIKE ?"), append(args, "% "+mysqlWordMark+q.Prefix+"%")
		terms = append(terms, "+"+mysqlWordMark+q.Prefix+"*")
	}
	return strings.Join(conds, " AND "), args, strings.Join(terms, " ")
}

// search is SearchMessages on MySQL and MariaDB: FULLTEXT reads every
// match in the table first, so rows are tested by LIKE where they cost
// less (DESIGN.md §4.10): named conversations' up to maxSearchScan, or a
// window of every conversation's (searchMySQLWindow).
func (mysqlEngine) search(ctx context.Context, s *store, q driver.SearchQuery, convs []string, member string) ([]messaging.Message, bool, error) {
	like, likeArgs, boolean := mysqlWords(q)
	match, args, from := "MATCH (m.search_words) AGAINST (? IN BOOLEAN MODE)", []any{boolean}, messageFrom
	switch {
	case q.All:
		items, more, ok, err := s.searchMySQLWindow(ctx, q, like, likeArgs)
		if err != nil || ok {
			return items, more, err
		}
	case member == "":
		n, err := s.searchRows(ctx, convs)
		if err != nil {
			return nil, false, err
		}
		if n <= maxSearchScan {
			match, args, from = like, likeArgs, fmt.Sprintf(forcedFrom, "messages_conversation_created")
		}
	}
	p := s.matchPage(q, member, convs, match, args)
	p.from = from
	query, args := s.pageSQL(p)
	return s.searchPage(ctx, q, query, args)
}

// forcedFrom is messageFrom read by index %s.
const forcedFrom = "messages AS m FORCE INDEX (%s) LEFT JOIN contacts AS c ON c.id = m.contact_id"

// searchMySQLWindow reads the page of q, a search of every conversation,
// from a window of messages_created beyond q's cursor, testing each row
// (like): ok is false when it held less than a page and more rows follow.
func (s *store) searchMySQLWindow(ctx context.Context, q driver.SearchQuery, like string, likeArgs []any) (items []messaging.Message, more, ok bool, err error) {
	dir, cmp, cur, edge := "DESC", "<", q.After, ">="
	if q.Before != nil {
		dir, cmp, cur, edge = "ASC", ">", q.Before, "<="
	}
	var seek string
	var seekArgs []any
	if cur != nil {
		seek, seekArgs = s.seek("m.created_at", "m.id", cmp, cur.Time.UTC(), cur.ID)
		seek = " WHERE " + seek
	}
	for window := searchWindow; ; {
		// The time of the row window rows beyond the cursor, from the index alone.
		var at []time.Time
		if err := s.read(ctx, &at, "SELECT m.created_at FROM messages AS m FORCE INDEX (messages_created)"+seek+
			" ORDER BY m.created_at "+dir+", m.id "+dir+" LIMIT 1 OFFSET "+strconv.Itoa(window), seekArgs...); err != nil {
			return nil, false, false, err
		}
		where, args := like, likeArgs
		if len(at) > 0 {
			// Every row from the cursor to at (ties included) is tested.
			where, args = "m.created_at "+edge+" ? AND "+like, append([]any{at[0]}, likeArgs...)
		}
		p := s.matchPage(q, "", nil, where, args)
		p.from = fmt.Sprintf(forcedFrom, "messages_created")
		query, args := s.pageSQL(p)
		rows := make([]messageRow, 0, q.Limit+1)
		if err := s.read(ctx, &rows, query, args...); err != nil {
			return nil, false, false, err
		}
		if len(at) == 0 || len(rows) > q.Limit {
			items, more, err = s.searchDone(ctx, q, rows)
			return items, more, true, err
		}
		// The rows a page needs at the rate of the matches found, and half more.
		need := max(window, 1) * (q.Limit + 1) / max(len(rows), 1) * 3 / 2
		if len(rows) == 0 || window >= maxSearchWindow || need > maxSearchWindow {
			return nil, false, false, nil
		}
		window = need
	}
}
