-- The schema of SQLite, applied in one transaction. Until the first
-- release it is changed in place; from then on migrations are immutable.

CREATE TABLE contacts (
	id TEXT PRIMARY KEY NOT NULL,
	username TEXT NOT NULL UNIQUE,
	phone_number TEXT NOT NULL DEFAULT '',
	avatar_url TEXT NOT NULL DEFAULT '',
	last_active_at TIMESTAMP,
	created_at TIMESTAMP NOT NULL)

--bun:split

-- reaction_count and attachment_count count the message's reaction names
-- and linked attachments, so that a read skips those queries when there
-- are none. A reply is stored in its thread's own conversation,
-- "<conversation id>/<root id>" (no conversation id holds a slash), whose
-- counters and read positions are the thread's; thread marks a root that
-- had replies, deleted the tombstone of a root deleted with replies left.
-- seq numbers the messages in the order they were stored (an INTEGER
-- PRIMARY KEY, the rowid: one more than the greatest at insert, kept by
-- VACUUM), which the search index follows (message_search_mark).
CREATE TABLE messages (
	seq INTEGER PRIMARY KEY,
	id TEXT NOT NULL UNIQUE,
	conversation_id TEXT NOT NULL,
	contact_id TEXT NOT NULL,
	text TEXT NOT NULL,
	search_words TEXT NOT NULL DEFAULT '',
	read_at TIMESTAMP,
	created_at TIMESTAMP NOT NULL,
	updated_at TIMESTAMP,
	reaction_count INTEGER NOT NULL DEFAULT 0,
	attachment_count INTEGER NOT NULL DEFAULT 0,
	thread INTEGER NOT NULL DEFAULT 0,
	deleted INTEGER NOT NULL DEFAULT 0)

--bun:split

CREATE INDEX messages_conversation_created ON messages (conversation_id, created_at DESC, id DESC)

--bun:split

CREATE INDEX messages_created ON messages (created_at DESC, id DESC)

--bun:split

-- Search: messages.search_words holds the folded words of the text
-- (driver.SearchWords, space-separated), which FTS5 indexes with its
-- ascii tokenizer, so that its own folding and splitting change nothing.
--
-- The index is kept behind the sends, in batches (searchindex.go): FTS5
-- writes a segment at every commit, which cost a create 0.4 of its speed.
-- message_search_mark holds the seq up to which every message is indexed;
-- moving it forward indexes the messages it passes, in the transaction
-- that moves it (message_search_index). A search reads FTS5 for the
-- messages up to the mark and scans the few beyond it (the tail) as they
-- are. An edit or a delete changes the index in its transaction when its
-- message is indexed, and nothing more when it is in the tail.
--
-- FTS5 rowids follow time: a message's is its created_at in milliseconds
-- (SQLite's own, rounded) times 2^20, plus the first number free among
-- those of its millisecond, so that FTS5, which returns matches in rowid
-- order, gives them newest first and a page stops after a page of
-- matches (search.go orders the ties of a millisecond exactly).
-- message_search_ids maps them to the messages' seq; a message's row is
-- found by its millisecond's range of rowids, without an index of
-- message_seq that every batch would write too.
--
-- Besides its words, a message's row holds one token of its conversation
-- (of the thread's conversation for a reply): "§" and the id's bytes in
-- hex, which no word can be ("§" is no letter, digit or mark), so that a
-- search of some conversations is one full-text query,
-- words AND (conversation OR …), which reads no row outside them.
CREATE TABLE message_search_ids (
	rowid INTEGER PRIMARY KEY,
	message_seq INTEGER NOT NULL)

--bun:split

CREATE VIRTUAL TABLE message_search USING fts5(words, tokenize = 'ascii', content = '', contentless_delete = 1, detail = 'none')

--bun:split

-- The words of the index, by which a search turns its last word (a
-- prefix) into the words it begins: FTS5 reads every match of a prefix
-- query before the first, but those of a few words in rowid order.
CREATE VIRTUAL TABLE message_search_terms USING fts5vocab(message_search, 'row')

--bun:split

-- Every message whose seq is at most seq is indexed, and every message
-- stored from now on gets a greater seq (messages_search_delete keeps the
-- mark at most the greatest seq, which the next insert exceeds).
CREATE TABLE message_search_mark (
	one INTEGER PRIMARY KEY NOT NULL CHECK (one = 1),
	seq INTEGER NOT NULL)

--bun:split

INSERT INTO message_search_mark (one, seq) VALUES (1, 0)

--bun:split

-- Moving the mark forward indexes the messages it passes, in one
-- statement: the rowids of a millisecond's messages follow the greatest
-- of that millisecond already there, numbered by row_number (the SELECT
-- reads the table it fills, so SQLite runs it whole first), and
-- message_search_ids_insert writes each one's words.
CREATE TRIGGER message_search_index AFTER UPDATE OF seq ON message_search_mark BEGIN
	INSERT INTO message_search_ids (rowid, message_seq)
		SELECT b + COALESCE((SELECT MAX(i.rowid) + 1 FROM message_search_ids AS i WHERE i.rowid >= b AND i.rowid < b + 1048576) - b, 0)
			+ row_number() OVER (PARTITION BY b ORDER BY seq) - 1, seq
		FROM (SELECT seq, CAST(round(unixepoch(created_at, 'subsec') * 1000) AS INTEGER) * 1048576 AS b
			FROM messages WHERE seq > old.seq AND seq <= new.seq);
END

--bun:split

CREATE TRIGGER message_search_ids_insert AFTER INSERT ON message_search_ids BEGIN
	INSERT INTO message_search (rowid, words) SELECT new.rowid,
		search_words || ' §' || hex(CASE WHEN instr(conversation_id, '/') > 0 THEN substr(conversation_id, 1, instr(conversation_id, '/') - 1) ELSE conversation_id END)
		FROM messages WHERE seq = new.message_seq;
END

--bun:split

-- The tail is bounded: a send that finds more than 2,000 messages beyond
-- the mark (an indexer that fell behind, or none running) indexes them
-- in its own transaction.
CREATE TRIGGER messages_search_tail AFTER INSERT ON messages
	WHEN new.seq > (SELECT seq FROM message_search_mark) + 2000 BEGIN
	UPDATE message_search_mark SET seq = new.seq;
END

--bun:split

CREATE TRIGGER messages_search_update AFTER UPDATE OF search_words ON messages BEGIN
	DELETE FROM message_search WHERE rowid = (SELECT i.rowid FROM message_search_ids AS i,
		(SELECT CAST(round(unixepoch(old.created_at, 'subsec') * 1000) AS INTEGER) * 1048576 AS b)
		WHERE i.rowid >= b AND i.rowid < b + 1048576 AND i.message_seq = old.seq);
	INSERT INTO message_search (rowid, words) SELECT i.rowid,
		new.search_words || ' §' || hex(CASE WHEN instr(new.conversation_id, '/') > 0 THEN substr(new.conversation_id, 1, instr(new.conversation_id, '/') - 1) ELSE new.conversation_id END)
		FROM message_search_ids AS i, (SELECT CAST(round(unixepoch(old.created_at, 'subsec') * 1000) AS INTEGER) * 1048576 AS b)
		WHERE i.rowid >= b AND i.rowid < b + 1048576 AND i.message_seq = old.seq;
END

--bun:split

-- When the last message is deleted, its seq would be given again to the
-- next one: the mark goes back to the greatest seq left (the messages
-- between are gone).
CREATE TRIGGER messages_search_delete AFTER DELETE ON messages BEGIN
	DELETE FROM message_search WHERE rowid = (SELECT i.rowid FROM message_search_ids AS i,
		(SELECT CAST(round(unixepoch(old.created_at, 'subsec') * 1000) AS INTEGER) * 1048576 AS b)
		WHERE i.rowid >= b AND i.rowid < b + 1048576 AND i.message_seq = old.seq);
	DELETE FROM message_search_ids WHERE rowid = (SELECT i.rowid FROM message_search_ids AS i,
		(SELECT CAST(round(unixepoch(old.created_at, 'subsec') * 1000) AS INTEGER) * 1048576 AS b)
		WHERE i.rowid >= b AND i.rowid < b + 1048576 AND i.message_seq = old.seq);
	UPDATE message_search_mark SET seq = (SELECT COALESCE(MAX(seq), 0) FROM messages)
		WHERE seq > (SELECT COALESCE(MAX(seq), 0) FROM messages);
END

--bun:split

-- A reaction name keeps its place (seq) while it has reactors (counted in
-- place); reactors come in their own seq order. An INTEGER PRIMARY KEY is
-- the rowid: a new row gets one more than the largest. head_seq is the seq
-- of the name's last embedded reactor, or the largest integer.
CREATE TABLE reaction_names (
	seq INTEGER PRIMARY KEY,
	message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
	name TEXT NOT NULL,
	reactors INTEGER NOT NULL DEFAULT 0,
	head_seq INTEGER NOT NULL DEFAULT 9223372036854775807,
	UNIQUE (message_id, name))

--bun:split

CREATE INDEX reaction_names_order ON reaction_names (message_id, seq)

--bun:split

-- Reactions by the reactor's contact id, so that a renamed contact keeps
-- its reactions.
CREATE TABLE reactions (
	seq INTEGER PRIMARY KEY,
	message_id TEXT NOT NULL,
	name TEXT NOT NULL,
	contact_id TEXT NOT NULL,
	created_at TIMESTAMP NOT NULL,
	UNIQUE (message_id, contact_id, name),
	FOREIGN KEY (message_id, name) REFERENCES reaction_names (message_id, name) ON DELETE CASCADE)

--bun:split

-- Holds the contact of each reactor: embedded reactors are read from the
-- index alone. It serves the foreign key of (message_id, name) too.
CREATE INDEX reactions_embed ON reactions (message_id, name, seq, contact_id)

--bun:split

CREATE TABLE attachments (
	id TEXT PRIMARY KEY NOT NULL,
	message_id TEXT REFERENCES messages (id),
	conversation_id TEXT,
	uploader_id TEXT NOT NULL,
	filename TEXT NOT NULL,
	file_type TEXT NOT NULL,
	file_size INTEGER NOT NULL,
	sha256 TEXT NOT NULL,
	image_width INTEGER NOT NULL DEFAULT 0,
	image_height INTEGER NOT NULL DEFAULT 0,
	blob_key TEXT NOT NULL UNIQUE,
	created_at TIMESTAMP NOT NULL)

--bun:split

CREATE INDEX attachments_conversation_created ON attachments (conversation_id, created_at DESC, id DESC)

--bun:split

CREATE INDEX attachments_uploader_created ON attachments (uploader_id, created_at DESC, id DESC)

--bun:split

CREATE INDEX attachments_created ON attachments (created_at DESC, id DESC)

--bun:split

CREATE INDEX attachments_message ON attachments (message_id)

--bun:split

-- UploadedBytes reads this index alone.
CREATE INDEX attachments_uploader_size ON attachments (uploader_id, file_size)

--bun:split

-- The blob keys whose rows are gone.
CREATE TABLE pending_deletions (
	blob_key TEXT PRIMARY KEY NOT NULL,
	created_at TIMESTAMP NOT NULL)

--bun:split

-- upload_reservations: direct uploads reserved and not yet completed or
-- swept (attachments.Service.Reserve); blob_key counts as in use.
CREATE TABLE upload_reservations (
	id TEXT PRIMARY KEY NOT NULL,
	attachment_id TEXT NOT NULL,
	uploader_id TEXT NOT NULL,
	conversation_id TEXT NOT NULL,
	message_id TEXT NOT NULL,
	filename TEXT NOT NULL,
	file_type TEXT NOT NULL,
	file_size INTEGER NOT NULL,
	sha256 TEXT NOT NULL,
	blob_key TEXT NOT NULL UNIQUE,
	checked INTEGER NOT NULL,
	created_at TIMESTAMP NOT NULL,
	expires_at TIMESTAMP NOT NULL)

--bun:split

CREATE INDEX upload_reservations_expires ON upload_reservations (expires_at, id)

--bun:split

-- UploadedBytes counts a caller's reservations from this index alone.
CREATE INDEX upload_reservations_uploader_size ON upload_reservations (uploader_id, file_size)

--bun:split

CREATE INDEX pending_deletions_created ON pending_deletions (created_at, blob_key)

--bun:split

-- One row per conversation with its counters and last message.
CREATE TABLE conversations (
	id TEXT PRIMARY KEY NOT NULL,
	created_at TIMESTAMP NOT NULL,
	updated_at TIMESTAMP NOT NULL,
	message_count INTEGER NOT NULL DEFAULT 0,
	last_message_id TEXT)

--bun:split

CREATE INDEX conversations_updated ON conversations (updated_at DESC, id DESC)

--bun:split

-- Each contact's state in a conversation: membership, read position and
-- the counters its unread count is made of. thread_at, on the row of one
-- who takes part in a thread, is the thread's last reply time while it has
-- replies (threads.go; conversation_members_threads lists a caller's).
CREATE TABLE conversation_members (
	conversation_id TEXT NOT NULL,
	contact_id TEXT NOT NULL,
	is_member INTEGER NOT NULL DEFAULT 0,
	joined_at TIMESTAMP,
	read_created TIMESTAMP,
	read_message_id TEXT,
	read_count INTEGER NOT NULL DEFAULT 0,
	own_count INTEGER NOT NULL DEFAULT 0,
	own_read_count INTEGER NOT NULL DEFAULT 0,
	thread_at TIMESTAMP,
	PRIMARY KEY (conversation_id, contact_id))

--bun:split

CREATE INDEX conversation_members_contact ON conversation_members (contact_id, is_member, conversation_id)

--bun:split

CREATE INDEX conversation_members_read ON conversation_members (conversation_id, read_created, read_message_id)

--bun:split

CREATE INDEX conversation_members_threads ON conversation_members (contact_id, thread_at DESC, conversation_id DESC)
	WHERE thread_at IS NOT NULL

--bun:split

-- One record per caller and idempotency key, stored with its result in the
-- transaction of the write it answers, or claimed first by a long write;
-- pruned when expired.
CREATE TABLE idempotency_keys (
	scope TEXT NOT NULL,
	client_key TEXT NOT NULL,
	fingerprint TEXT NOT NULL,
	lock_token TEXT NOT NULL DEFAULT '',
	result BLOB,
	created_at TIMESTAMP NOT NULL,
	expires_at TIMESTAMP NOT NULL,
	PRIMARY KEY (scope, client_key))

--bun:split

CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at)

--bun:split

-- The earlier texts of edited messages, removed with their message.
CREATE TABLE message_revisions (
	id TEXT PRIMARY KEY NOT NULL,
	message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
	text TEXT NOT NULL,
	created_at TIMESTAMP NOT NULL)

--bun:split

CREATE INDEX message_revisions_message_created ON message_revisions (message_id, created_at DESC, id DESC)

--bun:split

-- The outbox. The rowid is the seq: one more than the greatest at insert
-- (PruneEvents keeps the newest, so none is given twice). No id is stored
-- (id stays NULL: readers are given one made of the seq, sealed:
-- eventSealer). The index by conversation and seq (as on the server
-- engines) makes a resume or a list of a caller's conversations read those
-- conversations' events, not the seq range of the whole installation
-- (BENCHMARKS.md §5: a resume after 100 events costs the same with 10,000
-- or 1,000,000 events of other conversations); it is a page more that a
-- send writes to the WAL.
CREATE TABLE events (
	seq INTEGER PRIMARY KEY,
	id TEXT,
	type TEXT NOT NULL,
	conversation_id TEXT,
	audience_id TEXT,
	created_at TIMESTAMP NOT NULL,
	payload TEXT NOT NULL,
	deleted_id TEXT)

--bun:split

CREATE UNIQUE INDEX events_stored_id ON events (id) WHERE id IS NOT NULL

--bun:split

CREATE INDEX events_conversation ON events (conversation_id, seq)

--bun:split

-- The message or attachment a delete event deleted (deleted_id), for the
-- reads that redact it from older events (EventQuery.Redact): only delete
-- events are in the index, so a send writes nothing to it.
CREATE INDEX events_deleted ON events (deleted_id) WHERE deleted_id IS NOT NULL

--bun:split

-- The handlers' positions.
CREATE TABLE event_cursors (
	name TEXT PRIMARY KEY NOT NULL,
	seq INTEGER NOT NULL,
	owner TEXT NOT NULL DEFAULT '',
	lease_until TIMESTAMP)

--bun:split

-- The database's identity: one row holding a random installation id, made
-- here, the reconcile epoch (see driver.Installation) and the secret key
-- of the event ids (event_key: hex, made at the first read of events,
-- eventSealer).
CREATE TABLE parley_installation (
	one INTEGER PRIMARY KEY NOT NULL CHECK (one = 1),
	id TEXT NOT NULL,
	epoch INTEGER NOT NULL DEFAULT 0,
	created_at TIMESTAMP NOT NULL,
	event_key TEXT NOT NULL DEFAULT '')

--bun:split

INSERT INTO parley_installation (one, id, epoch, created_at)
	VALUES (1, 'ins_' || lower(hex(randomblob(16))), 0, strftime('%Y-%m-%d %H:%M:%f', 'now'))
