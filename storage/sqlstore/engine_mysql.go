package sqlstore

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
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

func (mysqlEngine) name() string { return "mysql" }

func (mysqlEngine) dialect() *dialectSQL { return &mysqlSQL }

var mysqlSQL = dialectSQL{
	rangeAfterCursor: true,
	txOptions:        &sql.TxOptions{Isolation: sql.LevelReadCommitted},
	snapshotOptions:  &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
	forUpdate:        " FOR UPDATE",
	skip:             " ON DUPLICATE KEY UPDATE %[1]s = %[1]s",
	// ON DUPLICATE KEY UPDATE would count the row found (the driver sets
	// clientFoundRows), INSERT IGNORE does not. Its users check every
	// value before, so IGNORE hides no other error.
	insertNew: "INSERT IGNORE INTO",
	// Not EXISTS: MySQL/MariaDB would turn it into a semi-join that reads
	// every membership and sorts their rows; a scalar subquery keeps the
	// walk of the time index.
	memberOf:    standardMemberOf,
	beforeSlash: "SUBSTRING_INDEX(%[1]s, '/', 1)",
	// Without the contact: a locking read would lock the contact's row
	// too. The message is read again with it after the change.
	lockMessage: "SELECT " + messageOwnCols + " FROM messages AS m WHERE m.id = ? FOR UPDATE",
	// One row a reactor: GROUP_CONCAT is cut at group_concat_max_len
	// (1,024 bytes by default).
	reactions:      reactionsRowsSQL,
	reactionsOrder: " ORDER BY n.message_id, n.seq, r.seq",
	eventLog:       "events",
	pruneEvents:    standardPruneEvents,
	eventsOfFew:    "events AS e",
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
}

// lockMigrations takes the migration lock of the database on a connection
// of its own (GET_LOCK is held by the session; MySQL does not sit behind a
// transaction pooler): its DDL commits implicitly, so no transaction could
// hold it. unlock releases it, or closes the connection if that fails.
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
	// drop closes the connection rather than return it to the pool with
	// the lock perhaps held: closing the session releases the lock.
	drop := func() {
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
			return
		}
		_ = conn.Close()
	}, nil
}

// putContact updates, or inserts: ON DUPLICATE KEY UPDATE would fire on
// the username's key too, and update the other contact. An insert that
// meets a taken key looks again, once: a concurrent call may have
// inserted the id (a failed statement leaves a MySQL transaction usable).
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

// storeKey reads the row in the way, locked: MySQL has no conditional
// upsert.
func (mysqlEngine) storeKey(ctx context.Context, _ *store, tx bun.Tx, done driver.IdempotencyRecord, taken error) error {
	var rows []keyRow
	if err := tx.NewRaw("SELECT "+keyCols+" FROM idempotency_keys WHERE scope = ? AND client_key = ? FOR UPDATE", done.Scope, done.Key).Scan(ctx, &rows); err != nil {
		return err
	}
	if len(rows) == 0 {
		_, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (scope, client_key, fingerprint, lock_token, result, created_at, expires_at)
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

// sequence numbers the committed events that have no seq yet, in
// batches of maxSequence (see the top of outbox.go).
func (mysqlEngine) sequence(ctx context.Context, s *store) error {
	for {
		// A probe outside the lock, so that a reader finding nothing to
		// number writes nothing.
		var pending []int64
		if err := s.read(ctx, &pending, "SELECT pos FROM events WHERE seq IS NULL ORDER BY pos LIMIT 1"); err != nil || len(pending) == 0 {
			return err
		}
		s.seqMu.Lock() // one sequencer of this process at a time; others wait, then find less to do
		n := 0
		err := s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
			last, err := readOne[int64](ctx, s.txReads(tx), "event sequence", "SELECT last_seq FROM event_sequence WHERE id = 1 FOR UPDATE")
			if err != nil {
				return err
			}
			// The engine reads them again under the lock: another
			// sequencer may have numbered them meanwhile; what committed
			// since is taken too.
			if n, err = numberEvents(ctx, tx, last); err != nil || n == 0 {
				return err
			}
			_, err = tx.ExecContext(ctx, "UPDATE event_sequence SET last_seq = ? WHERE id = 1", last+int64(n))
			return err
		})
		s.seqMu.Unlock()
		if err != nil || n < maxSequence {
			return err
		}
	}
}

// numberEvents gives the committed events that have no seq yet (up to
// maxSequence, read through the seq index's NULLs), in pos order, the seqs
// after last, in tx, which holds the sequencer's lock, and returns how
// many it numbered.
func numberEvents(ctx context.Context, tx bun.Tx, last int64) (int, error) {
	var pending []int64
	err := tx.NewRaw("SELECT pos FROM events WHERE seq IS NULL ORDER BY pos LIMIT ?", maxSequence).Scan(ctx, &pending)
	if err != nil || len(pending) == 0 {
		return 0, err
	}
	var b strings.Builder
	b.WriteString("UPDATE events SET seq = CASE pos")
	for i, pos := range pending {
		b.WriteString(" WHEN " + strconv.FormatInt(pos, 10) + " THEN " + strconv.FormatInt(last+int64(i)+1, 10))
	}
	b.WriteString(" END WHERE pos IN (")
	for i, pos := range pending {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(pos, 10))
	}
	b.WriteString(")")
	_, err = tx.ExecContext(ctx, b.String())
	return len(pending), err
}

// mysqlWordMark is written before every word on MySQL.
const mysqlWordMark = "ww"

// mysqlSearchMatch returns the condition on m (messages) of the messages
// whose words match q by the FULLTEXT index, and its arguments, on MySQL
// and MariaDB.
func mysqlSearchMatch(q driver.SearchQuery) (string, []any) {
	var b strings.Builder
	for _, w := range q.Words {
		b.WriteString("+" + mysqlWordMark + w + " ")
	}
	if q.Prefix != "" {
		b.WriteString("+" + mysqlWordMark + q.Prefix + "*")
	}
	return "MATCH (m.search_words) AGAINST (? IN BOOLEAN MODE)", []any{strings.TrimSpace(b.String())}
}

// maxSearchScan is the most rows of named conversations (the sum of their
// message_count) that a search reads and tests one by one rather than
// asking FULLTEXT, which reads every match in the table (DESIGN.md §4.10).
var maxSearchScan int64 = 50_000

// searchWindow and maxSearchWindow bound the rows beyond the cursor that a
// search of every conversation walks and tests before it asks FULLTEXT:
// searchWindow, then as many as the matches found say a page needs, up to
// maxSearchWindow.
var searchWindow, maxSearchWindow = 1_000, 20_000

// mysqlWords returns the condition on m that its words hold q's (the
// last as a prefix), tested on the row by LIKE, and its arguments.
func mysqlWords(q driver.SearchQuery) (string, []any) {
	var b strings.Builder
	args := make([]any, 0, len(q.Words)+1)
	for _, w := range q.Words {
		if b.Len() > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString("CONCAT(' ', m.search_words, ' ') LIKE ?")
		args = append(args, "% "+mysqlWordMark+w+" %")
	}
	if q.Prefix != "" {
		if b.Len() > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString("CONCAT(' ', m.search_words) LIKE ?")
		args = append(args, "% "+mysqlWordMark+q.Prefix+"%")
	}
	return b.String(), args
}

// search is SearchMessages on MySQL and MariaDB. FULLTEXT reads every
// match in the table before it returns a row, so rows are read and tested
// by LIKE instead where they cost less (DESIGN.md §4.10): the rows of
// named conversations, up to maxSearchScan; for every conversation, a
// window of messages_created beyond the cursor (searchMySQLWindow).
func (mysqlEngine) search(ctx context.Context, s *store, q driver.SearchQuery, convs []string, member string) ([]messaging.Message, bool, error) {
	like, likeArgs := mysqlWords(q)
	page := func(index string, b branch) (string, []any) {
		return s.pageSQL(pageQuery{cols: messageCols, alias: "m", after: q.After, before: q.Before, limit: q.Limit,
			from:     "messages AS m FORCE INDEX (" + index + ") LEFT JOIN contacts AS c ON c.id = m.contact_id",
			branches: []branch{b}})
	}
	switch {
	case q.All:
		items, more, ok, err := s.searchMySQLWindow(ctx, q, like, likeArgs, page)
		if err != nil || ok {
			return items, more, err
		}
	case member == "":
		n, err := s.searchRows(ctx, convs)
		if err != nil {
			return nil, false, err
		}
		if n <= maxSearchScan {
			b, _ := s.searchScope(false, "", convs)
			b.where, b.args = b.where+" AND "+like, append(b.args, likeArgs...)
			query, args := page("messages_conversation_created", b)
			return s.searchPage(ctx, q, query, args)
		}
	}
	b, _ := s.searchScope(q.All, member, convs)
	match, args := mysqlSearchMatch(q)
	if b.where != "" {
		match = b.where + " AND " + match
		args = append(b.args, args...)
	}
	b = branch{where: match, args: args}
	query, qargs := s.pageSQL(pageQuery{cols: messageCols, from: messageFrom, alias: "m", after: q.After, before: q.Before,
		limit: q.Limit, branches: []branch{b}})
	return s.searchPage(ctx, q, query, qargs)
}

// searchMySQLWindow reads the page of q, a search of every conversation,
// from the rows of messages_created beyond q's cursor, testing each row's
// words (like), in a window of rows (searchWindow): ok is false when the
// window holds less than a page and more rows follow it.
func (s *store) searchMySQLWindow(ctx context.Context, q driver.SearchQuery, like string, likeArgs []any,
	page func(index string, b branch) (string, []any)) (items []messaging.Message, more, ok bool, err error) {
	dir, cmp, cur, edge := "DESC", "<", q.After, ">="
	if q.Before != nil {
		dir, cmp, cur, edge = "ASC", ">", q.Before, "<="
	}
	var seek string
	var seekArgs []any
	if cur != nil {
		t := cur.Time.UTC()
		seek = " WHERE m.created_at " + cmp + "= ? AND (m.created_at " + cmp + " ? OR m.id " + cmp + " ?)"
		seekArgs = []any{t, t, cur.ID}
	}
	for window := searchWindow; ; {
		// The time of the row window rows beyond the cursor, from the
		// index alone.
		var at []time.Time
		if err := s.read(ctx, &at, "SELECT m.created_at FROM messages AS m FORCE INDEX (messages_created)"+seek+
			" ORDER BY m.created_at "+dir+", m.id "+dir+" LIMIT 1 OFFSET "+strconv.Itoa(window), seekArgs...); err != nil {
			return nil, false, false, err
		}
		b := branch{where: like, args: likeArgs}
		if len(at) > 0 {
			// Every row from the cursor to at (ties included) is
			// tested, so a page found there is the page.
			b.where, b.args = "m.created_at "+edge+" ? AND "+like, append([]any{at[0]}, likeArgs...)
		}
		query, args := page("messages_created", b)
		rows := make([]messageRow, 0, q.Limit+1)
		if err := s.read(ctx, &rows, query, args...); err != nil {
			return nil, false, false, err
		}
		if len(at) == 0 || len(rows) > q.Limit {
			items, more, err = s.searchDone(ctx, q, rows)
			return items, more, true, err
		}
		// The rows a page needs at the rate of the matches found, and a
		// half more.
		need := max(window, 1) * (q.Limit + 1) / max(len(rows), 1) * 3 / 2
		if len(rows) == 0 || window >= maxSearchWindow || need > maxSearchWindow {
			return nil, false, false, nil
		}
		window = need
	}
}
