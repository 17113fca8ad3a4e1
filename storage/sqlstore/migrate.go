package sqlstore

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
)

// Tables of bun/migrate's bookkeeping.
const (
	migrationsTable      = "parley_migrations"
	migrationsLocksTable = "parley_migration_locks"
)

// version is one schema migration: the same change for each engine, in
// each engine's SQL. Versions are applied in Name order and never edited
// once released; a change to the schema is a new version.
type version struct {
	Name    string // sorts in the order of application
	Comment string
	SQL     map[flavor][]string
	// MySQLDone are the MySQL error codes that mean a statement of an
	// interrupted run was applied already (MySQL's DDL is not
	// transactional): the statement is skipped. 1060 (a column that
	// exists) always is.
	MySQLDone []uint16
}

var versions = []version{{
	Name:    "20260601000001",
	Comment: "create_tables",
	SQL: map[flavor][]string{
		flavorSQLite: {
			`CREATE TABLE IF NOT EXISTS contacts (
				id TEXT PRIMARY KEY NOT NULL,
				username TEXT NOT NULL UNIQUE,
				phone_number TEXT NOT NULL DEFAULT '',
				avatar_url TEXT NOT NULL DEFAULT '',
				last_active_at TIMESTAMP,
				created_at TIMESTAMP NOT NULL)`,
			`CREATE TABLE IF NOT EXISTS messages (
				id TEXT PRIMARY KEY NOT NULL,
				conversation_id TEXT NOT NULL,
				contact_id TEXT NOT NULL,
				text TEXT NOT NULL,
				read_at TIMESTAMP,
				created_at TIMESTAMP NOT NULL,
				updated_at TIMESTAMP)`,
			`CREATE INDEX IF NOT EXISTS messages_conversation_created ON messages (conversation_id, created_at DESC, id DESC)`,
			`CREATE INDEX IF NOT EXISTS messages_created ON messages (created_at DESC, id DESC)`,
			// A reaction name keeps its place (seq) while it has reactors;
			// reactors come in their own seq order. An INTEGER PRIMARY KEY is
			// the rowid: a new row gets one more than the largest.
			`CREATE TABLE IF NOT EXISTS reaction_names (
				seq INTEGER PRIMARY KEY,
				message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
				name TEXT NOT NULL,
				UNIQUE (message_id, name))`,
			`CREATE TABLE IF NOT EXISTS reactions (
				seq INTEGER PRIMARY KEY,
				message_id TEXT NOT NULL,
				name TEXT NOT NULL,
				reactor TEXT NOT NULL,
				UNIQUE (message_id, name, reactor),
				FOREIGN KEY (message_id, name) REFERENCES reaction_names (message_id, name) ON DELETE CASCADE)`,
			`CREATE TABLE IF NOT EXISTS attachments (
				id TEXT PRIMARY KEY NOT NULL,
				message_id TEXT REFERENCES messages (id),
				conversation_id TEXT,
				uploader_id TEXT NOT NULL,
				filename TEXT NOT NULL,
				file_type TEXT NOT NULL,
				file_size INTEGER NOT NULL,
				sha256 TEXT NOT NULL,
				blob_key TEXT NOT NULL UNIQUE,
				created_at TIMESTAMP NOT NULL)`,
			`CREATE INDEX IF NOT EXISTS attachments_conversation_created ON attachments (conversation_id, created_at DESC, id DESC)`,
			`CREATE INDEX IF NOT EXISTS attachments_uploader_created ON attachments (uploader_id, created_at DESC, id DESC)`,
			`CREATE INDEX IF NOT EXISTS attachments_created ON attachments (created_at DESC, id DESC)`,
			`CREATE INDEX IF NOT EXISTS attachments_message ON attachments (message_id)`,
			`CREATE TABLE IF NOT EXISTS pending_deletions (
				blob_key TEXT PRIMARY KEY NOT NULL,
				created_at TIMESTAMP NOT NULL)`,
			`CREATE INDEX IF NOT EXISTS pending_deletions_created ON pending_deletions (created_at, blob_key)`,
		},
		// Identifiers sort by bytes (COLLATE "C"), as Go compares strings.
		flavorPostgres: {
			`CREATE TABLE IF NOT EXISTS contacts (
				id text COLLATE "C" PRIMARY KEY,
				username text COLLATE "C" NOT NULL UNIQUE,
				phone_number text NOT NULL DEFAULT '',
				avatar_url text NOT NULL DEFAULT '',
				last_active_at timestamptz,
				created_at timestamptz NOT NULL)`,
			`CREATE TABLE IF NOT EXISTS messages (
				id text COLLATE "C" PRIMARY KEY,
				conversation_id text COLLATE "C" NOT NULL,
				contact_id text COLLATE "C" NOT NULL,
				text text NOT NULL,
				read_at timestamptz,
				created_at timestamptz NOT NULL,
				updated_at timestamptz)`,
			`CREATE INDEX IF NOT EXISTS messages_conversation_created ON messages (conversation_id, created_at DESC, id DESC)`,
			`CREATE INDEX IF NOT EXISTS messages_created ON messages (created_at DESC, id DESC)`,
			`CREATE TABLE IF NOT EXISTS reaction_names (
				seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
				message_id text COLLATE "C" NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
				name text COLLATE "C" NOT NULL,
				UNIQUE (message_id, name))`,
			`CREATE TABLE IF NOT EXISTS reactions (
				seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
				message_id text COLLATE "C" NOT NULL,
				name text COLLATE "C" NOT NULL,
				reactor text COLLATE "C" NOT NULL,
				UNIQUE (message_id, name, reactor),
				FOREIGN KEY (message_id, name) REFERENCES reaction_names (message_id, name) ON DELETE CASCADE)`,
			`CREATE TABLE IF NOT EXISTS attachments (
				id text COLLATE "C" PRIMARY KEY,
				message_id text COLLATE "C" REFERENCES messages (id),
				conversation_id text COLLATE "C",
				uploader_id text COLLATE "C" NOT NULL,
				filename text NOT NULL,
				file_type text NOT NULL,
				file_size bigint NOT NULL,
				sha256 text NOT NULL,
				blob_key text COLLATE "C" NOT NULL UNIQUE,
				created_at timestamptz NOT NULL)`,
			`CREATE INDEX IF NOT EXISTS attachments_conversation_created ON attachments (conversation_id, created_at DESC, id DESC)`,
			`CREATE INDEX IF NOT EXISTS attachments_uploader_created ON attachments (uploader_id, created_at DESC, id DESC)`,
			`CREATE INDEX IF NOT EXISTS attachments_created ON attachments (created_at DESC, id DESC)`,
			`CREATE INDEX IF NOT EXISTS attachments_message ON attachments (message_id)`,
			`CREATE TABLE IF NOT EXISTS pending_deletions (
				blob_key text COLLATE "C" PRIMARY KEY,
				created_at timestamptz NOT NULL)`,
			`CREATE INDEX IF NOT EXISTS pending_deletions_created ON pending_deletions (created_at, blob_key)`,
		},
		// MySQL has no CREATE INDEX IF NOT EXISTS (MariaDB has): indexes
		// are declared in CREATE TABLE IF NOT EXISTS. utf8mb4_bin compares
		// and sorts by bytes, as Go does, and makes usernames case-sensitive.
		flavorMySQL: {
			`CREATE TABLE IF NOT EXISTS contacts (
				id VARCHAR(64) NOT NULL PRIMARY KEY,
				username VARCHAR(255) NOT NULL,
				phone_number TEXT NOT NULL,
				avatar_url TEXT NOT NULL,
				last_active_at DATETIME(6) NULL,
				created_at DATETIME(6) NOT NULL,
				UNIQUE KEY contacts_username (username)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			`CREATE TABLE IF NOT EXISTS messages (
				id VARCHAR(64) NOT NULL PRIMARY KEY,
				conversation_id VARCHAR(128) NOT NULL,
				contact_id VARCHAR(64) NOT NULL,
				text TEXT NOT NULL,
				read_at DATETIME(6) NULL,
				created_at DATETIME(6) NOT NULL,
				updated_at DATETIME(6) NULL,
				KEY messages_conversation_created (conversation_id, created_at, id),
				KEY messages_created (created_at, id)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			`CREATE TABLE IF NOT EXISTS reaction_names (
				seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
				message_id VARCHAR(64) NOT NULL,
				name VARCHAR(64) NOT NULL,
				UNIQUE KEY reaction_names_message_name (message_id, name),
				CONSTRAINT reaction_names_message FOREIGN KEY (message_id) REFERENCES messages (id) ON DELETE CASCADE
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			`CREATE TABLE IF NOT EXISTS reactions (
				seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
				message_id VARCHAR(64) NOT NULL,
				name VARCHAR(64) NOT NULL,
				reactor VARCHAR(255) NOT NULL,
				UNIQUE KEY reactions_message_name_reactor (message_id, name, reactor),
				CONSTRAINT reactions_name FOREIGN KEY (message_id, name) REFERENCES reaction_names (message_id, name) ON DELETE CASCADE
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			`CREATE TABLE IF NOT EXISTS attachments (
				id VARCHAR(64) NOT NULL PRIMARY KEY,
				message_id VARCHAR(64) NULL,
				conversation_id VARCHAR(128) NULL,
				uploader_id VARCHAR(64) NOT NULL,
				filename VARCHAR(255) NOT NULL,
				file_type VARCHAR(255) NOT NULL,
				file_size BIGINT NOT NULL,
				sha256 VARCHAR(64) NOT NULL,
				blob_key VARCHAR(255) NOT NULL,
				created_at DATETIME(6) NOT NULL,
				UNIQUE KEY attachments_blob_key (blob_key),
				KEY attachments_conversation_created (conversation_id, created_at, id),
				KEY attachments_uploader_created (uploader_id, created_at, id),
				KEY attachments_created (created_at, id),
				KEY attachments_message (message_id),
				CONSTRAINT attachments_message FOREIGN KEY (message_id) REFERENCES messages (id)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			`CREATE TABLE IF NOT EXISTS pending_deletions (
				blob_key VARCHAR(255) NOT NULL PRIMARY KEY,
				created_at DATETIME(6) NOT NULL,
				KEY pending_deletions_created (created_at, blob_key)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
		},
	},
}, {
	// Counters of a message's reaction names and linked attachments, kept
	// in the transactions that change them, so that reading a message or a
	// page skips the reactions and attachments queries when there are none.
	// Backfilled from the rows already there.
	Name:    "20260601000002",
	Comment: "message_counters",
	SQL: map[flavor][]string{
		flavorSQLite: {
			`ALTER TABLE messages ADD COLUMN reaction_count INTEGER NOT NULL DEFAULT 0`,
			`ALTER TABLE messages ADD COLUMN attachment_count INTEGER NOT NULL DEFAULT 0`,
			backfillCounters,
		},
		flavorPostgres: {
			`ALTER TABLE messages ADD COLUMN IF NOT EXISTS reaction_count integer NOT NULL DEFAULT 0`,
			`ALTER TABLE messages ADD COLUMN IF NOT EXISTS attachment_count integer NOT NULL DEFAULT 0`,
			backfillCounters,
		},
		// Not transactional: up skips a column that exists (error 1060) when
		// an interrupted run is repeated; the backfill is idempotent.
		flavorMySQL: {
			`ALTER TABLE messages ADD COLUMN reaction_count INT NOT NULL DEFAULT 0`,
			`ALTER TABLE messages ADD COLUMN attachment_count INT NOT NULL DEFAULT 0`,
			backfillCounters,
		},
	},
}, {
	// Conversations as a resource: one row per conversation with its
	// counters and last message, and each contact's state in a
	// conversation (membership, read position and the counters its unread
	// count is made of). Filled from the rows already there: nobody has
	// read anything yet.
	Name:    "20261123000001",
	Comment: "conversations",
	SQL: map[flavor][]string{
		flavorSQLite: {
			`CREATE TABLE IF NOT EXISTS conversations (
				id TEXT PRIMARY KEY NOT NULL,
				created_at TIMESTAMP NOT NULL,
				updated_at TIMESTAMP NOT NULL,
				message_count INTEGER NOT NULL DEFAULT 0,
				last_message_id TEXT)`,
			`CREATE INDEX IF NOT EXISTS conversations_updated ON conversations (updated_at DESC, id DESC)`,
			`CREATE TABLE IF NOT EXISTS conversation_members (
				conversation_id TEXT NOT NULL,
				contact_id TEXT NOT NULL,
				is_member INTEGER NOT NULL DEFAULT 0,
				joined_at TIMESTAMP,
				read_created TIMESTAMP,
				read_message_id TEXT,
				read_count INTEGER NOT NULL DEFAULT 0,
				own_count INTEGER NOT NULL DEFAULT 0,
				own_read_count INTEGER NOT NULL DEFAULT 0,
				PRIMARY KEY (conversation_id, contact_id))`,
			`CREATE INDEX IF NOT EXISTS conversation_members_contact ON conversation_members (contact_id, is_member, conversation_id)`,
			`CREATE INDEX IF NOT EXISTS conversation_members_read ON conversation_members (conversation_id, read_created, read_message_id)`,
			backfillConversations,
			backfillLastMessages,
			backfillFiledConversations,
			backfillEarlierFiles,
			backfillSenders,
		},
		flavorPostgres: {
			`CREATE TABLE IF NOT EXISTS conversations (
				id text COLLATE "C" PRIMARY KEY,
				created_at timestamptz NOT NULL,
				updated_at timestamptz NOT NULL,
				message_count bigint NOT NULL DEFAULT 0,
				last_message_id text COLLATE "C")`,
			`CREATE INDEX IF NOT EXISTS conversations_updated ON conversations (updated_at DESC, id DESC)`,
			`CREATE TABLE IF NOT EXISTS conversation_members (
				conversation_id text COLLATE "C" NOT NULL,
				contact_id text COLLATE "C" NOT NULL,
				is_member boolean NOT NULL DEFAULT false,
				joined_at timestamptz,
				read_created timestamptz,
				read_message_id text COLLATE "C",
				read_count bigint NOT NULL DEFAULT 0,
				own_count bigint NOT NULL DEFAULT 0,
				own_read_count bigint NOT NULL DEFAULT 0,
				PRIMARY KEY (conversation_id, contact_id))`,
			`CREATE INDEX IF NOT EXISTS conversation_members_contact ON conversation_members (contact_id, is_member, conversation_id)`,
			`CREATE INDEX IF NOT EXISTS conversation_members_read ON conversation_members (conversation_id, read_created, read_message_id)`,
			backfillConversations,
			backfillLastMessages,
			backfillFiledConversations,
			backfillEarlierFiles,
			backfillSenders,
		},
		// Not transactional: a repeated run finds the tables there, and the
		// inserts ignore rows that exist.
		flavorMySQL: {
			`CREATE TABLE IF NOT EXISTS conversations (
				id VARCHAR(128) NOT NULL PRIMARY KEY,
				created_at DATETIME(6) NOT NULL,
				updated_at DATETIME(6) NOT NULL,
				message_count BIGINT NOT NULL DEFAULT 0,
				last_message_id VARCHAR(64) NULL,
				KEY conversations_updated (updated_at, id)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			`CREATE TABLE IF NOT EXISTS conversation_members (
				conversation_id VARCHAR(128) NOT NULL,
				contact_id VARCHAR(64) NOT NULL,
				is_member BOOLEAN NOT NULL DEFAULT FALSE,
				joined_at DATETIME(6) NULL,
				read_created DATETIME(6) NULL,
				read_message_id VARCHAR(64) NULL,
				read_count BIGINT NOT NULL DEFAULT 0,
				own_count BIGINT NOT NULL DEFAULT 0,
				own_read_count BIGINT NOT NULL DEFAULT 0,
				PRIMARY KEY (conversation_id, contact_id),
				KEY conversation_members_contact (contact_id, is_member, conversation_id),
				KEY conversation_members_read (conversation_id, read_created, read_message_id)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			"INSERT IGNORE" + backfillConversations[len("INSERT"):],
			backfillLastMessages,
			"INSERT IGNORE" + backfillFiledConversations[len("INSERT"):],
			backfillEarlierFiles,
			"INSERT IGNORE" + backfillSenders[len("INSERT"):],
		},
	},
}, {
	// The records of idempotency keys (one per caller and key, stored with
	// its result in the transaction of the write it answers, or claimed
	// first by a long write; pruned when expired) and the earlier texts of
	// edited messages (removed with their message). New tables only:
	// nothing to fill from the rows already there.
	Name:    "20261123000002",
	Comment: "idempotency_keys_and_revisions",
	SQL: map[flavor][]string{
		flavorSQLite: {
			`CREATE TABLE IF NOT EXISTS idempotency_keys (
				scope TEXT NOT NULL,
				client_key TEXT NOT NULL,
				fingerprint TEXT NOT NULL,
				lock_token TEXT NOT NULL DEFAULT '',
				result BLOB,
				created_at TIMESTAMP NOT NULL,
				expires_at TIMESTAMP NOT NULL,
				PRIMARY KEY (scope, client_key))`,
			`CREATE INDEX IF NOT EXISTS idempotency_keys_expires ON idempotency_keys (expires_at)`,
			`CREATE TABLE IF NOT EXISTS message_revisions (
				id TEXT PRIMARY KEY NOT NULL,
				message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
				text TEXT NOT NULL,
				created_at TIMESTAMP NOT NULL)`,
			`CREATE INDEX IF NOT EXISTS message_revisions_message_created ON message_revisions (message_id, created_at DESC, id DESC)`,
		},
		flavorPostgres: {
			`CREATE TABLE IF NOT EXISTS idempotency_keys (
				scope text COLLATE "C" NOT NULL,
				client_key text COLLATE "C" NOT NULL,
				fingerprint text NOT NULL,
				lock_token text NOT NULL DEFAULT '',
				result bytea,
				created_at timestamptz NOT NULL,
				expires_at timestamptz NOT NULL,
				PRIMARY KEY (scope, client_key))`,
			`CREATE INDEX IF NOT EXISTS idempotency_keys_expires ON idempotency_keys (expires_at)`,
			`CREATE TABLE IF NOT EXISTS message_revisions (
				id text COLLATE "C" PRIMARY KEY,
				message_id text COLLATE "C" NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
				text text NOT NULL,
				created_at timestamptz NOT NULL)`,
			`CREATE INDEX IF NOT EXISTS message_revisions_message_created ON message_revisions (message_id, created_at DESC, id DESC)`,
		},
		// A key is up to 255 characters: (64 + 255) × 4 bytes of primary
		// key, within InnoDB's 3072.
		flavorMySQL: {
			`CREATE TABLE IF NOT EXISTS idempotency_keys (
				scope VARCHAR(64) NOT NULL,
				client_key VARCHAR(255) NOT NULL,
				fingerprint VARCHAR(64) NOT NULL,
				lock_token VARCHAR(64) NOT NULL DEFAULT '',
				result MEDIUMBLOB NULL,
				created_at DATETIME(6) NOT NULL,
				expires_at DATETIME(6) NOT NULL,
				PRIMARY KEY (scope, client_key),
				KEY idempotency_keys_expires (expires_at)
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			`CREATE TABLE IF NOT EXISTS message_revisions (
				id VARCHAR(64) NOT NULL PRIMARY KEY,
				message_id VARCHAR(64) NOT NULL,
				text TEXT NOT NULL,
				created_at DATETIME(6) NOT NULL,
				KEY message_revisions_message_created (message_id, created_at, id),
				CONSTRAINT message_revisions_message FOREIGN KEY (message_id) REFERENCES messages (id) ON DELETE CASCADE
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
		},
	},
}, eventsVersion, installationVersion, eventIDsVersion, reactorsVersion, talliesVersion, reactorsEmbedVersion, postgresEventIDsVersion,
	uploaderSizeVersion}

// The backfill of version "conversations".
const (
	// backfillConversations stores the conversations of the messages.
	backfillConversations = `INSERT INTO conversations (id, created_at, updated_at, message_count)
		SELECT conversation_id, MIN(created_at), MAX(created_at), COUNT(*) FROM messages GROUP BY conversation_id`
	backfillLastMessages = `UPDATE conversations SET last_message_id = (SELECT m.id FROM messages AS m
		WHERE m.conversation_id = conversations.id ORDER BY m.created_at DESC, m.id DESC LIMIT 1)
		WHERE message_count > 0`
	// backfillFiledConversations stores the conversations that have filed
	// attachments and no message.
	backfillFiledConversations = `INSERT INTO conversations (id, created_at, updated_at)
		SELECT conversation_id, MIN(created_at), MIN(created_at) FROM attachments
		WHERE conversation_id IS NOT NULL AND conversation_id NOT IN (SELECT conversation_id FROM messages)
		GROUP BY conversation_id`
	// backfillEarlierFiles dates back a conversation whose first file came
	// before its first message.
	backfillEarlierFiles = `UPDATE conversations SET created_at =
		(SELECT MIN(a.created_at) FROM attachments AS a WHERE a.conversation_id = conversations.id)
		WHERE EXISTS (SELECT 1 FROM attachments AS a WHERE a.conversation_id = conversations.id AND a.created_at < conversations.created_at)`
	// backfillSenders counts each sender's messages in each conversation.
	backfillSenders = `INSERT INTO conversation_members (conversation_id, contact_id, own_count)
		SELECT conversation_id, contact_id, COUNT(*) FROM messages GROUP BY conversation_id, contact_id`
)

// backfillCounters sets the counters of the messages that have reaction
// names or attachments.
const backfillCounters = `UPDATE messages SET
	reaction_count = (SELECT COUNT(*) FROM reaction_names AS n WHERE n.message_id = messages.id),
	attachment_count = (SELECT COUNT(*) FROM attachments AS a WHERE a.message_id = messages.id)
	WHERE id IN (SELECT message_id FROM reaction_names) OR id IN (SELECT message_id FROM attachments WHERE message_id IS NOT NULL)`

// Migrate brings the schema up to date: it applies, in order, the versions
// that the database has not recorded (in the table parley_migrations). It
// is idempotent, and safe when several processes start at once: on
// PostgreSQL and MySQL it holds an advisory lock (pg_advisory_lock,
// GET_LOCK) of the database, or of Options.Schema, while it runs; on
// SQLite each version applies in one IMMEDIATE transaction that first
// checks it is not applied yet. With Options.Schema it first creates that
// schema if it does not exist.
//
// The tables are contacts, messages, reaction_names, reactions (by contact
// id),
// attachments, pending_deletions (the blob keys whose rows are gone),
// conversations and conversation_members, message_tallies (PostgreSQL and
// MySQL: the messages not counted in them yet), and bun/migrate's
// parley_migrations and parley_migration_locks.
func (s *Store) Migrate(ctx context.Context) error {
	err := s.migrate(ctx)
	if err == nil {
		s.prepareWrites(ctx)
		s.eventIDs.Store(eventIDsNumbered)
	}
	return wrapErr("sqlstore.Migrate", err)
}

func (s *Store) migrate(ctx context.Context) error {
	return s.migrateTo(ctx, versions[len(versions)-1].Name)
}

// migrateTo applies the versions up to and including the one named last.
func (s *Store) migrateTo(ctx context.Context, last string) error {
	unlock, err := s.lockMigrations(ctx)
	if err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	defer unlock()
	if s.opts.Schema != "" { // PostgreSQL; a valid identifier (Options.checkSchema)
		if _, err := s.w.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+s.opts.Schema); err != nil {
			return fmt.Errorf("migrate: create schema: %w", err)
		}
	}

	ms := migrate.NewMigrations()
	for _, v := range versions {
		if v.Name > last {
			break
		}
		ms.Add(migrate.Migration{Name: v.Name, Comment: v.Comment, Up: s.up(v)})
	}
	m := migrate.NewMigrator(s.w, ms,
		migrate.WithTableName(migrationsTable),
		migrate.WithLocksTableName(migrationsLocksTable),
		migrate.WithMarkAppliedOnSuccess(true),
		migrate.WithUpsert(true))
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("migrate: init: %w", err)
	}
	group, err := m.Migrate(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if !group.IsZero() {
		s.opts.Logger.InfoContext(ctx, "sqlstore: schema migrated", "engine", s.flavor.String(), "applied", group.Migrations.String())
	}
	return nil
}

// up returns the function that applies v. On engines with transactional
// DDL, v's statements and its record in the migrations table commit
// together, and v is skipped if another process recorded it meanwhile.
func (s *Store) up(v version) func(context.Context, *migrate.Migrator, *migrate.Migration) error {
	return func(ctx context.Context, _ *migrate.Migrator, mig *migrate.Migration) error {
		stmts := v.SQL[s.flavor]
		if s.flavor == flavorMySQL { // DDL commits implicitly: no transaction
			for _, q := range stmts {
				_, err := s.w.ExecContext(ctx, q)
				if code := mysqlCode(err); code == 1060 || (code != 0 && slices.Contains(v.MySQLDone, code)) { // ER_DUP_FIELDNAME: the column was added by an interrupted run
					continue
				}
				if err != nil {
					return err
				}
			}
			return nil
		}
		return s.w.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			var n int
			if err := tx.NewRaw("SELECT COUNT(*) FROM "+migrationsTable+" WHERE name = ?", v.Name).Scan(ctx, &n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			for _, q := range stmts {
				if _, err := tx.ExecContext(ctx, q); err != nil {
					return err
				}
			}
			_, err := tx.ExecContext(ctx, "INSERT INTO "+migrationsTable+" (name, group_id, migrated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING",
				v.Name, mig.GroupID, time.Now().UTC())
			return err
		})
	}
}

// lockMigrations takes the migration lock of the database (PostgreSQL: of
// the schema, Options.Schema or the current one, which need not exist
// yet), on PostgreSQL and MySQL, on a connection of its own; unlock
// releases it.
func (s *Store) lockMigrations(ctx context.Context) (unlock func(), err error) {
	var lock, release string
	var args []any
	switch s.flavor {
	case flavorPostgres:
		key := "hashtext('parley.migrate:' || current_database() || '.' || COALESCE(?, current_schema(), ''))"
		lock = "SELECT pg_advisory_lock(" + key + ")"
		release = "SELECT pg_advisory_unlock(" + key + ")"
		args = []any{nullable(s.opts.Schema)}
	case flavorMySQL:
		lock = "SELECT GET_LOCK(CONCAT('parley.migrate:', SHA1(DATABASE())), 600)"
		release = "SELECT RELEASE_LOCK(CONCAT('parley.migrate:', SHA1(DATABASE())))"
	default:
		return func() {}, nil
	}
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if s.flavor == flavorPostgres {
		_, err = conn.ExecContext(ctx, lock, args...)
	} else {
		var got *int64
		if err = conn.NewRaw(lock).Scan(ctx, &got); err == nil && (got == nil || *got != 1) {
			err = errors.New("timed out waiting for the migration lock")
		}
	}
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), release, args...); err != nil {
			// Drop the connection rather than return it to the pool with
			// the lock still held: closing it releases the lock.
			_ = conn.Raw(func(any) error { return sqldriver.ErrBadConn })
		}
		_ = conn.Close()
	}, nil
}
