package sqlstore

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"strconv"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// mysqlEngine is MySQL 8 and MariaDB 10.6+ (go-sql-driver/mysql), InnoDB
// with utf8mb4 and a binary collation. Transactions run at READ COMMITTED:
// REPEATABLE READ (InnoDB's default) takes gap locks and reads a snapshot
// after a locking read, and the store wants neither.
type mysqlEngine struct{}

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
	claimKey:     `INSERT IGNORE INTO idempotency_keys (scope, client_key, fingerprint, lock_token, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)`,
	pruneKeys:    "DELETE FROM idempotency_keys WHERE expires_at <= ? ORDER BY expires_at LIMIT %[1]d",
	pruneKeyArgs: 1,
	wordMark:     mysqlWordMark,
}

func (mysqlEngine) opened(*store, *sql.DB, *sql.DB) {}

func (mysqlEngine) start(*store) {}

func (mysqlEngine) genericPlans(context.Context, *store) bool { return true }

func (mysqlEngine) initMigrations(ctx context.Context, _ *store, m *migrate.Migrator) error {
	return m.Init(ctx)
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

func (mysqlEngine) claimMigration(context.Context, *store, bun.IConn) error { return nil }

// putContact updates, or inserts: ON DUPLICATE KEY UPDATE would fire on
// the username's key too, and update the other contact.
func (mysqlEngine) putContact(ctx context.Context, s *store, args []any) error {
	id, username := args[0], args[1]
	return s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		update := func() error {
			_, err := tx.ExecContext(ctx, `UPDATE contacts SET username = ?, phone_number = ?, avatar_url = ?,
				last_active_at = ?, created_at = ? WHERE id = ?`, append(args[1:], id)...)
			if isUniqueViolation(err) {
				return errUsernameTaken
			}
			return err
		}
		var n int
		if err := tx.NewRaw("SELECT COUNT(*) FROM contacts WHERE id = ? FOR UPDATE", id).Scan(ctx, &n); err != nil {
			return err
		}
		if n > 0 {
			return update()
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO contacts (`+contactCols+`) VALUES (?, ?, ?, ?, ?, ?)`, args...)
		if !isUniqueViolation(err) {
			return err
		}
		// Either the username is taken, or a concurrent call inserted this
		// id first (a failed statement leaves a MySQL transaction usable).
		var other []string
		if err := tx.NewRaw("SELECT id FROM contacts WHERE username = ? AND id <> ?", username, id).Scan(ctx, &other); err != nil {
			return err
		}
		if len(other) > 0 {
			return errUsernameTaken
		}
		return update()
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

// numberEvents gives each row its seq by a CASE of its position.
func (mysqlEngine) numberEvents(ctx context.Context, tx bun.Tx, last int64) (int, error) {
	pending, err := pendingEvents(ctx, tx)
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

func (mysqlEngine) search(ctx context.Context, s *store, q driver.SearchQuery) ([]messaging.Message, bool, error) {
	return s.searchMySQL(ctx, q)
}
