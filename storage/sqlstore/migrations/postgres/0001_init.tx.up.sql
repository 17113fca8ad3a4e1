-- The schema of PostgreSQL, applied in one transaction. Until the first
-- release it is changed in place; from then on migrations are immutable.
-- Identifiers sort by bytes (COLLATE "C"), as Go compares strings.

CREATE TABLE contacts (
	id text COLLATE "C" PRIMARY KEY,
	username text COLLATE "C" NOT NULL UNIQUE,
	phone_number text NOT NULL DEFAULT '',
	avatar_url text NOT NULL DEFAULT '',
	last_active_at timestamptz,
	created_at timestamptz NOT NULL)

--bun:split

-- reaction_count and attachment_count count the message's reaction names
-- and linked attachments, so that a read skips those queries when there
-- are none.
CREATE TABLE messages (
	id text COLLATE "C" PRIMARY KEY,
	conversation_id text COLLATE "C" NOT NULL,
	contact_id text COLLATE "C" NOT NULL,
	text text NOT NULL,
	search_words text NOT NULL DEFAULT '',
	read_at timestamptz,
	created_at timestamptz NOT NULL,
	updated_at timestamptz,
	reaction_count integer NOT NULL DEFAULT 0,
	attachment_count integer NOT NULL DEFAULT 0,
	thread boolean NOT NULL DEFAULT false,
	deleted boolean NOT NULL DEFAULT false)

--bun:split

CREATE INDEX messages_conversation_created ON messages (conversation_id, created_at DESC, id DESC)

--bun:split

CREATE INDEX messages_created ON messages (created_at DESC, id DESC)

--bun:split

-- Search: messages.search_words holds the folded words of the text
-- (driver.SearchWords, space-separated), indexed as a tsvector of exactly
-- those words (array_to_tsvector: no parser, no dictionary, no stop
-- words), for a search of every conversation.
CREATE INDEX messages_search ON messages USING gin ((array_to_tsvector(string_to_array(search_words, ' '))))

--bun:split

-- For a search of some conversations, the same words each qualified by
-- the conversation (of the thread's conversation for a reply): the first
-- 8 hex digits of the md5 of its id, then the word. The query asks
-- (h1word | h2word | …) of this index, which reads the short lists of the
-- word in those conversations (a prefix: their short ranges of words,
-- h1proj:*) rather than the word's list in the whole store, and tests
-- each row's conversation (two conversations' hashes may meet). Its own
-- index, so that a walk of messages_created tests each row's words by
-- the plain expression above, without computing this one. Not a
-- composite GIN index with the conversation first (btree_gin): an
-- extension is the database's, not the schema's, and CREATE EXTENSION
-- needs rights and a lock that a host's schema of its own may not give.
CREATE INDEX messages_search_conversation ON messages USING gin ((array_to_tsvector(string_to_array(regexp_replace(search_words, '[^ ]+', left(md5(split_part(conversation_id, '/', 1)), 8) || '\&', 'g'), ' '))))

--bun:split

-- A reaction name keeps its place (seq) while it has reactors (counted in
-- place); reactors come in their own seq order. head_seq is the seq of the
-- name's last embedded reactor, or the largest bigint.
CREATE TABLE reaction_names (
	seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	message_id text COLLATE "C" NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
	name text COLLATE "C" NOT NULL,
	reactors bigint NOT NULL DEFAULT 0,
	head_seq bigint NOT NULL DEFAULT 9223372036854775807,
	UNIQUE (message_id, name))

--bun:split

CREATE INDEX reaction_names_order ON reaction_names (message_id, seq)

--bun:split

-- Reactions by the reactor's contact id, so that a renamed contact keeps
-- its reactions. seq has no index of its own: with one, the planner read
-- a name's first reactors in seq order through it and filtered them,
-- walking every reactor of the message's other names (a name of one
-- reactor beside one of 10,000: 6-9 ms a reaction, against 1 ms from
-- reactions_embed, which gives each name's reactors in seq order).
CREATE TABLE reactions (
	seq bigint GENERATED ALWAYS AS IDENTITY,
	message_id text COLLATE "C" NOT NULL,
	name text COLLATE "C" NOT NULL,
	contact_id text COLLATE "C" NOT NULL,
	created_at timestamptz NOT NULL,
	CONSTRAINT reactions_message_contact_name PRIMARY KEY (message_id, contact_id, name),
	FOREIGN KEY (message_id, name) REFERENCES reaction_names (message_id, name) ON DELETE CASCADE)

--bun:split

-- Holds the contact of each reactor: embedded reactors are read from the
-- index alone. It serves the foreign key of (message_id, name) too.
CREATE INDEX reactions_embed ON reactions (message_id, name, seq, contact_id)

--bun:split

-- parley_react makes the reaction changes of one message (locked by the
-- caller), given as steps in order, and returns after each step the
-- message's reactions: the changes of a combined transaction
-- (storage/sqlstore/combine.go) in one call rather than a round trip
-- each. A step adds the names add_names[st_first : st_first + st_count -
-- 1] of the reactor st_contacts, at st_ats, or (st_removes not '') takes
-- that one name back; st_updated, when not '', is the message's new
-- updated_at. Each step is one statement, which sees the rows as the
-- steps before left them, and whose data-modifying parts see them as they
-- were before it, so each counts what the others change from what they
-- return:
--
--   - an added name is inserted with its one reactor counted, and an
--     existing one gains a reactor only when the reactor's row is
--     inserted, and gets its head_seq when it reaches 100: the greatest
--     seq of its 100 reactors (the new reactor's, or, should the sequence
--     of seqs ever have gone back after a copy, an older one's);
--   - a reactor taken back is deleted, and its name's row counts one
--     reactor fewer and moves head_seq past it, or, when it was the last,
--     goes after the statement (parley_react_gone; the foreign key's
--     cascade then finds nothing to delete);
--   - the message's row gets updated_at and its number of names, unless
--     the step sets no updated_at and changes no name;
--   - the reactions after the step are the names and reactors before it,
--     with those inserted and without those deleted: each name's first
--     100 reactors by seq (those up to its head_seq) and its count.
--
-- A step returns a row for each name after it, in the names' order (one
-- without a name when none is left), with r_own the names the reactor had
-- before (adds), r_names and r_reactors the change in the number of names
-- and reactor rows, r_updated 1 and the message's row when it was
-- updated. The usernames of a name's first reactors (r_embedded, joined by
-- chr(31)) are looked up at the first step only, and again at a step that
-- changed them (r_same false): the first 100 reactors of a name of 10,000
-- are read once a call, not once a change. The statements' plans are
-- generic: a custom plan for each run of these large statements was a
-- third of the call's CPU.
-- parley_react_gone deletes the reaction name of a message whose last
-- reactor parley_react took back (it loses its place). Its statement and
-- that of the foreign key's cascade to reactions are planned as the
-- server chooses: the plans of parley_react's statements are generic
-- (they do not depend on the values: each reads an index by its key or a
-- range of it), but the cascade's generic plan would scan every reaction
-- when the statistics say that most reactions are of one message.
CREATE FUNCTION parley_react_gone(msg text, gone_name text) RETURNS void
	LANGUAGE plpgsql SET plan_cache_mode = auto AS $$
BEGIN
	DELETE FROM reaction_names WHERE message_id = msg AND name = gone_name AND reactors <= 0;
END
$$

--bun:split

CREATE FUNCTION parley_react(msg text, st_contacts text[], st_first integer[], st_count integer[], add_names text[],
	st_removes text[], st_ats timestamptz[], st_updated text[])
	RETURNS TABLE (r_step integer, r_own bigint, r_names bigint, r_reactors bigint, r_updated bigint,
		r_text text, r_read_at timestamptz, r_updated_at timestamptz, r_name text, r_count bigint, r_embedded text, r_same boolean)
	LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
	i integer;
	who text;
	gone_name text;
	added text[];
	react_at timestamptz;
	upd timestamptz;
BEGIN
	FOR i IN 1 .. coalesce(array_length(st_contacts, 1), 0) LOOP
		who := st_contacts[i];
		upd := NULLIF(st_updated[i], '')::timestamptz;
		IF st_removes[i] <> '' THEN
			gone_name := st_removes[i];
			RETURN QUERY WITH d AS (DELETE FROM reactions WHERE message_id = msg AND name = gone_name AND contact_id = who RETURNING seq),
				hd AS (SELECT n.head_seq FROM reaction_names AS n WHERE n.message_id = msg AND n.name = gone_name),
				up AS (UPDATE reaction_names AS n SET reactors = n.reactors - 1,
					head_seq = CASE WHEN n.reactors > 1 AND n.head_seq >= d.seq THEN COALESCE((SELECT h.seq FROM reactions AS h
						WHERE h.message_id = n.message_id AND h.name = n.name AND h.seq <> d.seq
						ORDER BY h.seq LIMIT 1 OFFSET 99), 9223372036854775807) ELSE n.head_seq END
					FROM d WHERE n.message_id = msg AND n.name = gone_name RETURNING n.reactors),
				gone AS (SELECT 1 FROM up WHERE up.reactors <= 0),
				m AS (UPDATE messages SET updated_at = COALESCE(upd, messages.updated_at), reaction_count = reaction_count - (SELECT COUNT(*) FROM gone)
					WHERE id = msg AND (upd IS NOT NULL OR EXISTS (SELECT 1 FROM gone)) RETURNING messages.text, messages.read_at, messages.updated_at),
				-- the embedded reactors of the name changed: one of them went
				ch AS (SELECT 1 FROM d, hd WHERE d.seq <= hd.head_seq),
				a AS (SELECT n.name, n.seq, n.reactors - CASE WHEN n.name = gone_name THEN (SELECT COUNT(*) FROM d) ELSE 0 END AS cnt
					FROM reaction_names AS n WHERE n.message_id = msg),
				e AS (SELECT a.name, a.seq, a.cnt, i = 1 OR (a.name = gone_name AND EXISTS (SELECT 1 FROM ch)) AS fresh FROM a WHERE a.cnt > 0)
				SELECT i, 0::bigint, -(SELECT COUNT(*) FROM gone), -(SELECT COUNT(*) FROM d), (SELECT COUNT(*) FROM m),
					m.text::text, m.read_at::timestamptz, m.updated_at::timestamptz, e.name, e.cnt,
					CASE WHEN e.fresh THEN (SELECT string_agg(COALESCE((SELECT c.username FROM contacts AS c WHERE c.id = x.contact_id), ''), chr(31) ORDER BY x.seq)
						FROM (SELECT h.seq, h.contact_id FROM reactions AS h WHERE h.message_id = msg AND h.name = e.name
							AND NOT (h.name = gone_name AND h.contact_id = who) ORDER BY h.seq LIMIT 100) AS x) END,
					NOT coalesce(e.fresh, true)
				FROM (SELECT 1) AS one LEFT JOIN m ON true LEFT JOIN e ON true ORDER BY e.seq;
			PERFORM parley_react_gone(msg, gone_name);
		ELSE
			added := add_names[st_first[i] : st_first[i] + st_count[i] - 1];
			react_at := st_ats[i];
			RETURN QUERY WITH own AS (SELECT COUNT(*) AS k FROM reactions WHERE message_id = msg AND contact_id = who),
				nm AS (INSERT INTO reaction_names (message_id, name, reactors)
					SELECT msg, u.nm, 1 FROM unnest(added) WITH ORDINALITY AS u(nm, o) ORDER BY u.o
					ON CONFLICT DO NOTHING RETURNING reaction_names.name, reaction_names.seq),
				r AS (INSERT INTO reactions (message_id, name, contact_id, created_at)
					SELECT msg, u.nm, who, react_at FROM unnest(added) WITH ORDINALITY AS u(nm, o) ORDER BY u.o
					ON CONFLICT DO NOTHING RETURNING reactions.name, reactions.seq, reactions.contact_id),
				up AS (UPDATE reaction_names AS n SET reactors = n.reactors + 1,
					head_seq = CASE WHEN n.reactors + 1 = 100 THEN GREATEST(r.seq,
						(SELECT max(h.seq) FROM reactions AS h WHERE h.message_id = n.message_id AND h.name = n.name)) ELSE n.head_seq END
					FROM r WHERE n.message_id = msg AND n.name = r.name RETURNING n.name),
				m AS (UPDATE messages SET updated_at = COALESCE(upd, messages.updated_at), reaction_count = reaction_count + (SELECT COUNT(*) FROM nm)
					WHERE id = msg AND (upd IS NOT NULL OR EXISTS (SELECT 1 FROM nm)) RETURNING messages.text, messages.read_at, messages.updated_at),
				a AS (SELECT n.name, n.seq, n.reactors + (SELECT COUNT(*) FROM r WHERE r.name = n.name) AS cnt,
						-- the embedded reactors of the name changed: a reactor came among them
						i = 1 OR EXISTS (SELECT 1 FROM r WHERE r.name = n.name AND (n.reactors < 100 OR r.seq <= n.head_seq)) AS fresh
					FROM reaction_names AS n WHERE n.message_id = msg
					UNION ALL SELECT nm.name, nm.seq, 1, true FROM nm)
				SELECT i, (SELECT k FROM own), (SELECT COUNT(*) FROM nm), (SELECT COUNT(*) FROM r), (SELECT COUNT(*) FROM m),
					m.text::text, m.read_at::timestamptz, m.updated_at::timestamptz, a.name, a.cnt,
					CASE WHEN a.fresh THEN (SELECT string_agg(COALESCE((SELECT c.username FROM contacts AS c WHERE c.id = x.contact_id), ''), chr(31) ORDER BY x.seq)
						FROM (SELECT y.seq, y.contact_id FROM ((SELECT h.seq, h.contact_id FROM reactions AS h
							WHERE h.message_id = msg AND h.name = a.name ORDER BY h.seq LIMIT 100)
							UNION ALL SELECT r.seq, r.contact_id FROM r WHERE r.name = a.name) AS y ORDER BY y.seq LIMIT 100) AS x) END,
					NOT coalesce(a.fresh, true)
				FROM (SELECT 1) AS one LEFT JOIN m ON true LEFT JOIN a ON true ORDER BY a.seq;
		END IF;
	END LOOP;
END
$$

--bun:split

CREATE TABLE attachments (
	id text COLLATE "C" PRIMARY KEY,
	message_id text COLLATE "C" REFERENCES messages (id),
	conversation_id text COLLATE "C",
	uploader_id text COLLATE "C" NOT NULL,
	filename text NOT NULL,
	file_type text NOT NULL,
	file_size bigint NOT NULL,
	sha256 text NOT NULL,
	image_width integer NOT NULL DEFAULT 0,
	image_height integer NOT NULL DEFAULT 0,
	blob_key text COLLATE "C" NOT NULL UNIQUE,
	created_at timestamptz NOT NULL)

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
	blob_key text COLLATE "C" PRIMARY KEY,
	created_at timestamptz NOT NULL)

--bun:split

-- upload_reservations: direct uploads reserved and not yet completed or
-- swept (attachments.Service.Reserve); blob_key counts as in use.
CREATE TABLE upload_reservations (
	id text COLLATE "C" PRIMARY KEY,
	attachment_id text COLLATE "C" NOT NULL,
	uploader_id text COLLATE "C" NOT NULL,
	conversation_id text COLLATE "C" NOT NULL,
	message_id text COLLATE "C" NOT NULL,
	filename text NOT NULL,
	file_type text NOT NULL,
	file_size bigint NOT NULL,
	sha256 text NOT NULL,
	blob_key text COLLATE "C" NOT NULL UNIQUE,
	checked boolean NOT NULL,
	created_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL)

--bun:split

CREATE INDEX upload_reservations_expires ON upload_reservations (expires_at, id)

--bun:split

-- UploadedBytes counts a caller's reservations from this index alone.
CREATE INDEX upload_reservations_uploader_size ON upload_reservations (uploader_id, file_size)

--bun:split

CREATE INDEX pending_deletions_created ON pending_deletions (created_at, blob_key)

--bun:split

-- One row per conversation with its counters and last message.
-- listed_at is updated_at truncated to the second; the list's index
-- (conversations_listed) holds it, not updated_at, so that a send's
-- update of the row changes no indexed column but once a second and is
-- HOT (the list orders by listed_at, updated_at, id: DESIGN.md §4.12).
CREATE TABLE conversations (
	id text COLLATE "C" PRIMARY KEY,
	created_at timestamptz NOT NULL,
	updated_at timestamptz NOT NULL,
	message_count bigint NOT NULL DEFAULT 0,
	last_message_id text COLLATE "C",
	listed_at timestamptz NOT NULL
		GENERATED ALWAYS AS (date_trunc('second', updated_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') STORED)

--bun:split

CREATE INDEX conversations_listed ON conversations (listed_at DESC, id DESC)

--bun:split

-- Each contact's state in a conversation: membership, read position and
-- the counters its unread count is made of. thread_at, on the row of one
-- who takes part in a thread (joined_at set, the thread's key), is the
-- thread's last reply time, its conversation's updated_at, while it has
-- replies (threads.go): a caller's threads are a range of
-- conversation_members_threads in the order of their lists.
CREATE TABLE conversation_members (
	conversation_id text COLLATE "C" NOT NULL,
	contact_id text COLLATE "C" NOT NULL,
	is_member boolean NOT NULL DEFAULT false,
	joined_at timestamptz,
	read_created timestamptz,
	read_message_id text COLLATE "C",
	read_count bigint NOT NULL DEFAULT 0,
	own_count bigint NOT NULL DEFAULT 0,
	own_read_count bigint NOT NULL DEFAULT 0,
	thread_at timestamptz,
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
	scope text COLLATE "C" NOT NULL,
	client_key text COLLATE "C" NOT NULL,
	fingerprint text NOT NULL,
	lock_token text NOT NULL DEFAULT '',
	result bytea,
	created_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL,
	PRIMARY KEY (scope, client_key))

--bun:split

CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at)

--bun:split

-- The earlier texts of edited messages, removed with their message.
CREATE TABLE message_revisions (
	id text COLLATE "C" PRIMARY KEY,
	message_id text COLLATE "C" NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
	text text NOT NULL,
	created_at timestamptz NOT NULL)

--bun:split

CREATE INDEX message_revisions_message_created ON message_revisions (message_id, created_at DESC, id DESC)

--bun:split

-- The outbox (storage/sqlstore/outbox.go, DESIGN.md §4.3). Writers
-- insert their events into event_log, which is only inserted into and
-- pruned: pos is drawn from a sequence of CACHE 1 after the writer's xid
-- is given (the CASE), so a writer holds its xid before its position. The
-- sequencer (parley_sequence) copies the committed rows of the log into
-- events, numbered in pos order after the greatest seq given: readers read
-- events alone, and no row is updated per event.
CREATE SEQUENCE event_log_pos CACHE 1

--bun:split

CREATE TABLE event_log (
	pos bigint PRIMARY KEY DEFAULT CASE WHEN pg_current_xact_id() IS NOT NULL THEN nextval('event_log_pos') END,
	type text NOT NULL,
	conversation_id text COLLATE "C",
	audience_id text COLLATE "C",
	created_at timestamptz NOT NULL,
	payload text NOT NULL,
	deleted_id text COLLATE "C")

--bun:split

ALTER SEQUENCE event_log_pos OWNED BY event_log.pos

--bun:split

-- The events in commit order, copied from event_log (pos) by the
-- sequencer. No id is stored: readers are given one made of the seq,
-- sealed (eventSealer).
CREATE TABLE events (
	seq bigint PRIMARY KEY,
	pos bigint NOT NULL,
	type text NOT NULL,
	conversation_id text COLLATE "C",
	audience_id text COLLATE "C",
	created_at timestamptz NOT NULL,
	payload text NOT NULL,
	deleted_id text COLLATE "C")

--bun:split

CREATE INDEX events_conversation ON events (conversation_id, seq)

--bun:split

-- The message or attachment a delete event deleted (deleted_id), for the
-- reads that redact it from older events (EventQuery.Redact): only delete
-- events are in the index, so a copy of a send writes nothing to it.
CREATE INDEX events_deleted ON events (deleted_id) WHERE deleted_id IS NOT NULL

--bun:split

-- The sequencer's state: the last seq given; high_pos, the position up to
-- which every row of event_log is copied or a hole; the holes below it,
-- as ranges of positions (hole_from[i] .. hole_to[i]) whose rows were not
-- visible to the read that passed them, each with its fence (hole_fence:
-- the xid of the pass that found it, given after its read).
CREATE TABLE event_sequence (
	id integer PRIMARY KEY,
	last_seq bigint NOT NULL,
	high_pos bigint NOT NULL DEFAULT 0,
	hole_from bigint[] NOT NULL DEFAULT '{}',
	hole_to bigint[] NOT NULL DEFAULT '{}',
	hole_fence xid8[] NOT NULL DEFAULT '{}')

--bun:split

INSERT INTO event_sequence (id, last_seq) VALUES (1, 0)

--bun:split

-- parley_sequence copies up to batch committed rows of event_log past
-- high_pos, and those of the holes, into events, numbered after last_seq
-- in pos order, and returns how many it read past high_pos (batch: there
-- may be more). One statement reads the rows and the xmin of its own
-- snapshot. Rules (DESIGN.md §4.3):
--
--   - LOCK TABLE in SHARE ROW EXCLUSIVE mode serializes sequencers and
--     gives no xid (FOR UPDATE would give one before the read);
--   - a position between high_pos and the greatest position read that
--     was not read is a hole, fenced by this pass's xid, given after the
--     read (by its insert): the hole's writer had its xid before its
--     position, its position before a greater one that had committed by
--     the read, so its xid is below the fence;
--   - a hole is forgotten only when the xmin of the snapshot of a read
--     that still does not find it is at or past its fence: its writer had
--     ended, without committing it (a rollback).
--
-- A pass with nothing to copy and no hole to forget writes nothing.
CREATE FUNCTION parley_sequence(batch integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
	st event_sequence;
	got bigint[];
	top bigint;
	horizon xid8;
	fence xid8;
	n integer;
BEGIN
	-- The probe, without the lock: the last entry of the log's key (an
	-- EXISTS of pos > high_pos was planned as a scan of the log).
	IF NOT EXISTS (SELECT 1 FROM event_sequence AS q WHERE q.id = 1 AND (cardinality(q.hole_from) > 0
		OR (SELECT max(l.pos) FROM event_log AS l) > q.high_pos)) THEN
		RETURN 0;
	END IF;
	IF current_setting('transaction_isolation') <> 'read committed' THEN
		-- Each statement must read with a snapshot of its own, taken
		-- after the lock.
		RAISE EXCEPTION 'parley_sequence must run in READ COMMITTED, not %', current_setting('transaction_isolation');
	END IF;
	LOCK TABLE event_sequence IN SHARE ROW EXCLUSIVE MODE;
	SELECT * INTO STRICT st FROM event_sequence WHERE id = 1;
	WITH r AS MATERIALIZED (
		(SELECT l.* FROM event_log AS l WHERE l.pos > st.high_pos ORDER BY l.pos LIMIT batch)
		UNION ALL
		SELECT l.* FROM unnest(st.hole_from, st.hole_to) AS h(lo, hi) JOIN event_log AS l ON l.pos BETWEEN h.lo AND h.hi),
	c AS (INSERT INTO events (seq, pos, type, conversation_id, audience_id, created_at, payload, deleted_id)
		SELECT st.last_seq + row_number() OVER (ORDER BY r.pos), r.pos, r.type, r.conversation_id, r.audience_id,
			r.created_at, r.payload, r.deleted_id
		FROM r ORDER BY r.pos
		RETURNING pos)
	SELECT coalesce(array_agg(c.pos ORDER BY c.pos), '{}'), max(c.pos), pg_snapshot_xmin(pg_current_snapshot())
		INTO got, top, horizon FROM c;
	n := cardinality(got);
	IF top <= st.high_pos THEN
		top := NULL; -- only holes' rows were read
	END IF;
	IF n = 0 AND NOT EXISTS (SELECT 1 FROM unnest(st.hole_fence) AS f WHERE f <= horizon) THEN
		RETURN 0;
	END IF;
	fence := pg_current_xact_id(); -- after the read: given by the insert, or now
	-- The ranges to keep: each kept hole's, and the new one past high_pos,
	-- cut at the positions read.
	WITH iv AS (
		SELECT h.lo, h.hi, h.f FROM unnest(st.hole_from, st.hole_to, st.hole_fence) AS h(lo, hi, f) WHERE h.f > horizon
		UNION ALL
		SELECT st.high_pos + 1, top, fence WHERE top IS NOT NULL),
	cut AS (
		SELECT iv.lo, iv.f, p.at, lead(p.at) OVER (PARTITION BY iv.lo ORDER BY p.at) AS nxt
		FROM iv CROSS JOIN LATERAL (
			SELECT iv.lo - 1 AS at
			UNION ALL SELECT g FROM unnest(got) AS g WHERE g BETWEEN iv.lo AND iv.hi
			UNION ALL SELECT iv.hi + 1) AS p),
	kept AS (SELECT cut.at + 1 AS lo, cut.nxt - 1 AS hi, cut.f FROM cut WHERE cut.nxt > cut.at + 1)
	UPDATE event_sequence SET last_seq = st.last_seq + n, high_pos = GREATEST(st.high_pos, coalesce(top, 0)),
		hole_from = coalesce((SELECT array_agg(kept.lo ORDER BY kept.lo) FROM kept), '{}'),
		hole_to = coalesce((SELECT array_agg(kept.hi ORDER BY kept.lo) FROM kept), '{}'),
		hole_fence = coalesce((SELECT array_agg(kept.f ORDER BY kept.lo) FROM kept), '{}')
	WHERE id = 1;
	RETURN (SELECT count(*) FROM unnest(got) AS g WHERE g > st.high_pos);
END
$$

--bun:split

-- The handlers' positions.
CREATE TABLE event_cursors (
	name text COLLATE "C" PRIMARY KEY,
	seq bigint NOT NULL,
	owner text COLLATE "C" NOT NULL DEFAULT '',
	lease_until timestamptz)

--bun:split

-- The database's identity: one row holding a random installation id, made
-- here, the reconcile epoch (see driver.Installation) and the secret key
-- of the event ids (event_key: hex, made at the first read of events,
-- eventSealer).
CREATE TABLE parley_installation (
	one integer PRIMARY KEY CHECK (one = 1),
	id text COLLATE "C" NOT NULL,
	epoch bigint NOT NULL DEFAULT 0,
	created_at timestamptz NOT NULL,
	event_key text NOT NULL DEFAULT '')

--bun:split

INSERT INTO parley_installation (one, id, epoch, created_at)
	VALUES (1, 'ins_' || replace(gen_random_uuid()::text, '-', ''), 0, now())

--bun:split

-- Sends (storage/sqlstore/sends.go) are statements that call one of these
-- two functions: PL/pgSQL keeps the plan of a function's statement on the
-- server's connection, so that their large statements are parsed and
-- planned once a connection, also behind a pooler that keeps no prepared
-- statement (PgBouncer in transaction mode), where each run of the
-- statement of combined sends planned it anew (about 1 ms).
--
-- parley_send_many stores sends alone given as arrays, a column each:
-- their messages, key records and events, and their counts. Each
-- conversation's row is written once, with the count and the newest
-- message of its sends (made when missing), in the order of the ids, and
-- only then the rows of its members (the senders', once each, made when
-- missing, and those of the readers whose position is after one of its
-- messages); so the statement holds the locks of its conversations' rows
-- in one order, and takes a member's row only with its conversation's, as
-- MarkRead and deletes do: statements of sends cannot deadlock, with each
-- other or with them. A read_at or updated_at is '' when null.
CREATE FUNCTION parley_send_many(msg_ids text[], msg_convs text[], msg_contacts text[], msg_texts text[], msg_words text[],
	msg_read_ats text[], msg_created_ats timestamptz[], msg_updated_ats text[],
	key_scopes text[], key_keys text[], key_fps text[], key_results bytea[], key_ats timestamptz[], key_exps timestamptz[],
	ev_types text[], ev_convs text[], ev_audiences text[], ev_ats timestamptz[], ev_payloads text[], ev_deleted text[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	WITH sent AS MATERIALIZED (
		SELECT * FROM unnest(msg_ids, msg_convs, msg_contacts, msg_texts, msg_words, msg_read_ats, msg_created_ats, msg_updated_ats)
		WITH ORDINALITY AS u(id, conv, contact, text, words, read_at, created_at, updated_at, ord)),
	c AS (INSERT INTO conversations (id, created_at, updated_at, message_count, last_message_id)
		SELECT sent.conv, min(sent.created_at), max(sent.created_at), count(*),
			(array_agg(sent.id ORDER BY sent.created_at DESC, sent.id DESC))[1]
		FROM sent GROUP BY sent.conv ORDER BY sent.conv
		ON CONFLICT (id) DO UPDATE SET message_count = conversations.message_count + EXCLUDED.message_count,
			last_message_id = CASE WHEN (conversations.last_message_id IS NULL OR EXCLUDED.updated_at > conversations.updated_at
	OR (EXCLUDED.updated_at = conversations.updated_at AND EXCLUDED.last_message_id > conversations.last_message_id)) THEN EXCLUDED.last_message_id ELSE conversations.last_message_id END,
			updated_at = CASE WHEN (conversations.last_message_id IS NULL OR EXCLUDED.updated_at > conversations.updated_at
	OR (EXCLUDED.updated_at = conversations.updated_at AND EXCLUDED.last_message_id > conversations.last_message_id)) THEN EXCLUDED.updated_at ELSE conversations.updated_at END
		RETURNING id),
	r AS (INSERT INTO conversation_members (conversation_id, contact_id, own_count)
		SELECT sent.conv, sent.contact, count(*) FROM sent WHERE (SELECT count(*) FROM c) > 0
		GROUP BY sent.conv, sent.contact ORDER BY sent.conv, sent.contact
		ON CONFLICT (conversation_id, contact_id) DO UPDATE SET own_count = conversation_members.own_count + EXCLUDED.own_count,
			read_count = conversation_members.read_count + (SELECT count(*) FROM sent AS b
				WHERE b.conv = conversation_members.conversation_id AND (b.created_at < conversation_members.read_created
	OR (b.created_at = conversation_members.read_created AND b.id < conversation_members.read_message_id))),
			own_read_count = conversation_members.own_read_count + (SELECT count(*) FROM sent AS b
				WHERE b.conv = conversation_members.conversation_id AND b.contact = conversation_members.contact_id AND (b.created_at < conversation_members.read_created
	OR (b.created_at = conversation_members.read_created AND b.id < conversation_members.read_message_id)))),
	rd AS (UPDATE conversation_members SET read_count = conversation_members.read_count + (SELECT count(*) FROM sent AS b
			WHERE b.conv = conversation_members.conversation_id AND (b.created_at < conversation_members.read_created
	OR (b.created_at = conversation_members.read_created AND b.id < conversation_members.read_message_id)))
		FROM (SELECT sent.conv, min(sent.created_at) AS at FROM sent GROUP BY sent.conv) AS lo
		WHERE conversation_members.conversation_id = lo.conv AND conversation_members.read_created >= lo.at AND (SELECT count(*) FROM c) > 0
			AND NOT EXISTS (SELECT 1 FROM sent AS b WHERE b.conv = lo.conv AND b.contact = conversation_members.contact_id)
			AND EXISTS (SELECT 1 FROM sent AS b WHERE b.conv = lo.conv AND (b.created_at < conversation_members.read_created
	OR (b.created_at = conversation_members.read_created AND b.id < conversation_members.read_message_id)))),
	k AS (INSERT INTO idempotency_keys (scope, client_key, fingerprint, lock_token, result, created_at, expires_at)
		SELECT k.scope, k.key, k.fp, '', k.result, k.at, k.exp
		FROM unnest(key_scopes, key_keys, key_fps, key_results, key_ats, key_exps) AS k(scope, key, fp, result, at, exp)),
	ev AS (INSERT INTO event_log (type, conversation_id, audience_id, created_at, payload, deleted_id)
	SELECT u.t, NULLIF(u.c, ''), NULLIF(u.a, ''), u.at, u.p, NULLIF(u.d, '')
	FROM unnest(ev_types, ev_convs, ev_audiences, ev_ats, ev_payloads, ev_deleted) WITH ORDINALITY AS u(t, c, a, at, p, d, ord)
	ORDER BY u.ord)
	INSERT INTO messages (id, conversation_id, contact_id, text, search_words, read_at, created_at, updated_at, attachment_count)
	SELECT sent.id, sent.conv, sent.contact, sent.text, sent.words, NULLIF(sent.read_at, '')::timestamptz, sent.created_at,
		NULLIF(sent.updated_at, '')::timestamptz, 0
	FROM sent ORDER BY sent.ord;
END
$$

--bun:split

-- parley_send stores one send as parley_send_many does, from its columns:
-- the same rows and counts, in the same order of locks, without the
-- aggregates, sorts and joins that combine a batch (a send alone costs
-- PostgreSQL about 15% less CPU this way).
CREATE FUNCTION parley_send(msg_id text, msg_conv text, msg_contact text, msg_text text, msg_words text,
	msg_read_at text, msg_created_at timestamptz, msg_updated_at text,
	key_scopes text[], key_keys text[], key_fps text[], key_results bytea[], key_ats timestamptz[], key_exps timestamptz[],
	ev_types text[], ev_convs text[], ev_audiences text[], ev_ats timestamptz[], ev_payloads text[], ev_deleted text[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	WITH b AS NOT MATERIALIZED (
		SELECT msg_id AS id, msg_conv AS conv, msg_contact AS contact, msg_text AS text, msg_words AS words,
			NULLIF(msg_read_at, '')::timestamptz AS read_at, msg_created_at AS created_at, NULLIF(msg_updated_at, '')::timestamptz AS updated_at),
	c AS (INSERT INTO conversations (id, created_at, updated_at, message_count, last_message_id)
		SELECT b.conv, b.created_at, b.created_at, 1, b.id FROM b
		ON CONFLICT (id) DO UPDATE SET message_count = conversations.message_count + 1,
			last_message_id = CASE WHEN (conversations.last_message_id IS NULL OR EXCLUDED.updated_at > conversations.updated_at
	OR (EXCLUDED.updated_at = conversations.updated_at AND EXCLUDED.last_message_id > conversations.last_message_id)) THEN EXCLUDED.last_message_id ELSE conversations.last_message_id END,
			updated_at = CASE WHEN (conversations.last_message_id IS NULL OR EXCLUDED.updated_at > conversations.updated_at
	OR (EXCLUDED.updated_at = conversations.updated_at AND EXCLUDED.last_message_id > conversations.last_message_id)) THEN EXCLUDED.updated_at ELSE conversations.updated_at END
		RETURNING id),
	r AS (INSERT INTO conversation_members (conversation_id, contact_id, own_count)
		SELECT c.id, b.contact, 1 FROM c, b
		ON CONFLICT (conversation_id, contact_id) DO UPDATE SET own_count = conversation_members.own_count + 1,
			read_count = conversation_members.read_count + (SELECT count(*) FROM b WHERE (b.created_at < conversation_members.read_created
	OR (b.created_at = conversation_members.read_created AND b.id < conversation_members.read_message_id))),
			own_read_count = conversation_members.own_read_count + (SELECT count(*) FROM b WHERE (b.created_at < conversation_members.read_created
	OR (b.created_at = conversation_members.read_created AND b.id < conversation_members.read_message_id)))),
	rd AS (UPDATE conversation_members SET read_count = conversation_members.read_count + 1
		FROM c, b
		WHERE conversation_members.conversation_id = c.id AND conversation_members.read_created >= b.created_at
			AND conversation_members.contact_id <> b.contact AND (b.created_at < conversation_members.read_created
	OR (b.created_at = conversation_members.read_created AND b.id < conversation_members.read_message_id))),
	k AS (INSERT INTO idempotency_keys (scope, client_key, fingerprint, lock_token, result, created_at, expires_at)
		SELECT k.scope, k.key, k.fp, '', k.result, k.at, k.exp
		FROM unnest(key_scopes, key_keys, key_fps, key_results, key_ats, key_exps) AS k(scope, key, fp, result, at, exp)),
	ev AS (INSERT INTO event_log (type, conversation_id, audience_id, created_at, payload, deleted_id)
	SELECT u.t, NULLIF(u.c, ''), NULLIF(u.a, ''), u.at, u.p, NULLIF(u.d, '')
	FROM unnest(ev_types, ev_convs, ev_audiences, ev_ats, ev_payloads, ev_deleted) WITH ORDINALITY AS u(t, c, a, at, p, d, ord)
	ORDER BY u.ord)
	INSERT INTO messages (id, conversation_id, contact_id, text, search_words, read_at, created_at, updated_at, attachment_count)
	SELECT b.id, b.conv, b.contact, b.text, b.words, b.read_at, b.created_at, b.updated_at, 0 FROM b;
END
$$
