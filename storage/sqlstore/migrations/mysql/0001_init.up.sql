-- The schema of MySQL and MariaDB. Until the first release it is changed
-- in place; from then on migrations are immutable.
--
-- MySQL's DDL is not transactional: every statement can be run again, so
-- that Migrate completes a run that was interrupted. MySQL has no CREATE
-- INDEX IF NOT EXISTS (MariaDB has): indexes are declared in CREATE TABLE.
-- utf8mb4_bin compares and sorts by bytes, as Go does, and makes usernames
-- case-sensitive.

CREATE TABLE IF NOT EXISTS contacts (
	id VARCHAR(64) NOT NULL PRIMARY KEY,
	username VARCHAR(255) NOT NULL,
	phone_number TEXT NOT NULL,
	avatar_url TEXT NOT NULL,
	last_active_at DATETIME(6) NULL,
	created_at DATETIME(6) NOT NULL,
	UNIQUE KEY contacts_username (username)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

--bun:split

-- reaction_count and attachment_count count the message's reaction names
-- and linked attachments, so that a read skips those queries when there
-- are none.
CREATE TABLE IF NOT EXISTS messages (
	id VARCHAR(64) NOT NULL PRIMARY KEY,
	conversation_id VARCHAR(200) NOT NULL,
	contact_id VARCHAR(64) NOT NULL,
	text TEXT NOT NULL,
	search_words TEXT NOT NULL DEFAULT (''),
	read_at DATETIME(6) NULL,
	created_at DATETIME(6) NOT NULL,
	updated_at DATETIME(6) NULL,
	reaction_count INT NOT NULL DEFAULT 0,
	attachment_count INT NOT NULL DEFAULT 0,
	thread BOOLEAN NOT NULL DEFAULT FALSE,
	deleted BOOLEAN NOT NULL DEFAULT FALSE,
	KEY messages_conversation_created (conversation_id, created_at, id),
	KEY messages_created (created_at, id),
	-- Search: the folded words of the text, each after "ww" (see
	-- sqlstore's search.go), so that no word is shorter than the server's
	-- innodb_ft_min_token_size (3) or one of its stop words.
	FULLTEXT KEY messages_search (search_words)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

--bun:split

-- A reaction name keeps its place (seq) while it has reactors (counted in
-- place); reactors come in their own seq order. head_seq is the seq of the
-- name's last embedded reactor, or the largest BIGINT.
CREATE TABLE IF NOT EXISTS reaction_names (
	seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
	message_id VARCHAR(64) NOT NULL,
	name VARCHAR(64) NOT NULL,
	reactors BIGINT NOT NULL DEFAULT 0,
	head_seq BIGINT NOT NULL DEFAULT 9223372036854775807,
	UNIQUE KEY reaction_names_message_name (message_id, name),
	KEY reaction_names_order (message_id, seq),
	CONSTRAINT reaction_names_message FOREIGN KEY (message_id) REFERENCES messages (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

--bun:split

-- Reactions by the reactor's contact id, so that a renamed contact keeps
-- its reactions. reactions_embed holds the contact of each reactor: the
-- embedded reactors are read from the index alone; it serves the foreign
-- key of (message_id, name) too.
CREATE TABLE IF NOT EXISTS reactions (
	seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
	message_id VARCHAR(64) NOT NULL,
	name VARCHAR(64) NOT NULL,
	contact_id VARCHAR(64) NOT NULL,
	created_at DATETIME(6) NOT NULL,
	UNIQUE KEY reactions_message_contact_name (message_id, contact_id, name),
	KEY reactions_embed (message_id, name, seq, contact_id),
	CONSTRAINT reactions_name FOREIGN KEY (message_id, name) REFERENCES reaction_names (message_id, name) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

--bun:split

-- attachments_uploader_size: UploadedBytes reads this index alone.
CREATE TABLE IF NOT EXISTS attachments (
	id VARCHAR(64) NOT NULL PRIMARY KEY,
	message_id VARCHAR(64) NULL,
	conversation_id VARCHAR(128) NULL,
	uploader_id VARCHAR(64) NOT NULL,
	filename VARCHAR(255) NOT NULL,
	file_type VARCHAR(255) NOT NULL,
	file_size BIGINT NOT NULL,
	sha256 VARCHAR(64) NOT NULL,
	image_width INT NOT NULL DEFAULT 0,
	image_height INT NOT NULL DEFAULT 0,
	blob_key VARCHAR(255) NOT NULL,
	created_at DATETIME(6) NOT NULL,
	UNIQUE KEY attachments_blob_key (blob_key),
	KEY attachments_conversation_created (conversation_id, created_at, id),
	KEY attachments_uploader_created (uploader_id, created_at, id),
	KEY attachments_created (created_at, id),
	KEY attachments_message (message_id),
	KEY attachments_uploader_size (uploader_id, file_size),
	CONSTRAINT attachments_message FOREIGN KEY (message_id) REFERENCES messages (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

--bun:split

-- The blob keys whose rows are gone.
CREATE TABLE IF NOT EXISTS pending_deletions (
	blob_key VARCHAR(255) NOT NULL PRIMARY KEY,
	created_at DATETIME(6) NOT NULL,
	KEY pending_deletions_created (created_at, blob_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

--bun:split

-- upload_reservations: direct uploads reserved and not yet completed or
-- swept (attachments.Service.Reserve); blob_key counts as in use.
-- upload_reservations_uploader_size: UploadedBytes reads this index alone.
CREATE TABLE IF NOT EXISTS upload_reservations (
	id VARCHAR(64) NOT NULL PRIMARY KEY,
	attachment_id VARCHAR(64) NOT NULL,
	uploader_id VARCHAR(64) NOT NULL,
	conversation_id VARCHAR(128) NOT NULL,
	message_id VARCHAR(64) NOT NULL,
	filename VARCHAR(255) NOT NULL,
	file_type VARCHAR(255) NOT NULL,
	file_size BIGINT NOT NULL,
	sha256 VARCHAR(64) NOT NULL,
	blob_key VARCHAR(255) NOT NULL,
	checked BOOLEAN NOT NULL,
	created_at DATETIME(6) NOT NULL,
	expires_at DATETIME(6) NOT NULL,
	UNIQUE KEY upload_reservations_blob_key (blob_key),
	KEY upload_reservations_expires (expires_at, id),
	KEY upload_reservations_uploader_size (uploader_id, file_size)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

--bun:split

-- One row per conversation with its counters and last message.
CREATE TABLE IF NOT EXISTS conversations (
	id VARCHAR(200) NOT NULL PRIMARY KEY,
	created_at DATETIME(6) NOT NULL,
	updated_at DATETIME(6) NOT NULL,
	message_count BIGINT NOT NULL DEFAULT 0,
	last_message_id VARCHAR(64) NULL,
	KEY conversations_updated (updated_at, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

--bun:split

-- Each contact's state in a conversation: membership, read position and
-- the counters its unread count is made of. thread_at, on the row of one
-- who takes part in a thread, is the thread's last reply time while it has
-- replies (threads.go; conversation_members_threads lists a caller's).
CREATE TABLE IF NOT EXISTS conversation_members (
	conversation_id VARCHAR(200) NOT NULL,
	contact_id VARCHAR(64) NOT NULL,
	is_member BOOLEAN NOT NULL DEFAULT FALSE,
	joined_at DATETIME(6) NULL,
	read_created DATETIME(6) NULL,
	read_message_id VARCHAR(64) NULL,
	read_count BIGINT NOT NULL DEFAULT 0,
	own_count BIGINT NOT NULL DEFAULT 0,
	own_read_count BIGINT NOT NULL DEFAULT 0,
	thread_at DATETIME(6) NULL,
	PRIMARY KEY (conversation_id, contact_id),
	KEY conversation_members_contact (contact_id, is_member, conversation_id),
	KEY conversation_members_read (conversation_id, read_created, read_message_id),
	KEY conversation_members_threads (contact_id, thread_at, conversation_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

--bun:split

-- One record per caller and idempotency key, stored with its result in the
-- transaction of the write it answers, or claimed first by a long write;
-- pruned when expired. A key is up to 255 characters, its bytes of UTF-8
-- compared as they are: utf8mb4_bin pads with spaces (a key "k" would be
-- "k "), VARBINARY does not. 64 × 4 + 1020 bytes of primary key, within
-- InnoDB's 3072.
CREATE TABLE IF NOT EXISTS idempotency_keys (
	scope VARCHAR(64) NOT NULL,
	client_key VARBINARY(1020) NOT NULL,
	fingerprint VARCHAR(64) NOT NULL,
	lock_token VARCHAR(64) NOT NULL DEFAULT '',
	result MEDIUMBLOB NULL,
	created_at DATETIME(6) NOT NULL,
	expires_at DATETIME(6) NOT NULL,
	PRIMARY KEY (scope, client_key),
	KEY idempotency_keys_expires (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

--bun:split

-- The earlier texts of edited messages, removed with their message.
CREATE TABLE IF NOT EXISTS message_revisions (
	id VARCHAR(64) NOT NULL PRIMARY KEY,
	message_id VARCHAR(64) NOT NULL,
	text TEXT NOT NULL,
	created_at DATETIME(6) NOT NULL,
	KEY message_revisions_message_created (message_id, created_at, id),
	CONSTRAINT message_revisions_message FOREIGN KEY (message_id) REFERENCES messages (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

--bun:split

-- The outbox (storage/sqlstore/outbox.go, DESIGN.md §4.3). Writers insert
-- their events into event_log, which is only inserted into and pruned;
-- the statement first takes a shared lock on the gate (event_sequence's
-- row 2), then draws each pos. The sequencer (engine_mysql.go) copies the
-- committed rows of the log into events, numbered in pos order after the
-- greatest seq given: readers read events alone, and no row is updated
-- per event.
CREATE TABLE IF NOT EXISTS event_log (
	pos BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
	type VARCHAR(64) NOT NULL,
	conversation_id VARCHAR(128) NULL,
	audience_id VARCHAR(64) NULL,
	created_at DATETIME(6) NOT NULL,
	payload MEDIUMTEXT NOT NULL,
	deleted_id VARCHAR(64) NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

--bun:split

-- The events in commit order, copied from event_log (pos) by the
-- sequencer. No id is stored: readers are given one made of the seq,
-- sealed (eventSealer). deleted_id is the message or attachment a delete
-- event deleted, for the reads that redact it from older events.
CREATE TABLE IF NOT EXISTS events (
	seq BIGINT NOT NULL PRIMARY KEY,
	pos BIGINT NOT NULL,
	type VARCHAR(64) NOT NULL,
	conversation_id VARCHAR(128) NULL,
	audience_id VARCHAR(64) NULL,
	created_at DATETIME(6) NOT NULL,
	payload MEDIUMTEXT NOT NULL,
	deleted_id VARCHAR(64) NULL,
	KEY events_conversation (conversation_id, seq),
	KEY events_deleted (deleted_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

--bun:split

-- Row 1 is the sequencer's state: the last seq given; high_pos, the
-- position up to which every row of event_log is copied or a hole; the
-- holes below it, positions the sequencer passed that were not visible
-- to its read, as ranges "from:to:found" (found: when first kept, in Unix
-- milliseconds), space-separated. Row 2 is the gate: writers hold it
-- shared from before their positions to their commit; the sequencer takes
-- it exclusively, rarely, to prove holes rolled back. It is never
-- updated.
CREATE TABLE IF NOT EXISTS event_sequence (
	id INT NOT NULL PRIMARY KEY,
	last_seq BIGINT NOT NULL,
	high_pos BIGINT NOT NULL DEFAULT 0,
	holes MEDIUMTEXT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

--bun:split

INSERT IGNORE INTO event_sequence (id, last_seq, holes) VALUES (1, 0, ''), (2, 0, '')

--bun:split

-- The handlers' positions.
CREATE TABLE IF NOT EXISTS event_cursors (
	name VARCHAR(191) NOT NULL PRIMARY KEY,
	seq BIGINT NOT NULL,
	owner VARCHAR(191) NOT NULL DEFAULT '',
	lease_until DATETIME(6) NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

--bun:split

-- The database's identity: one row holding a random installation id, made
-- here, the reconcile epoch (see driver.Installation) and the secret key
-- of the event ids (event_key: hex, made at the first read of events,
-- eventSealer). A repeated run
-- keeps the row that exists.
CREATE TABLE IF NOT EXISTS parley_installation (
	one INT NOT NULL PRIMARY KEY,
	id VARCHAR(64) NOT NULL,
	epoch BIGINT NOT NULL DEFAULT 0,
	created_at DATETIME(6) NOT NULL,
	event_key VARCHAR(64) NOT NULL DEFAULT ''
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin

--bun:split

INSERT IGNORE INTO parley_installation (one, id, epoch, created_at)
	VALUES (1, CONCAT('ins_', LEFT(SHA2(CONCAT(UUID(), RAND(), SYSDATE(6)), 256), 32)), 0, UTC_TIMESTAMP(6))
