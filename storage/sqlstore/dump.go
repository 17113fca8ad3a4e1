package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"reflect"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/storage/storecopy"
)

// The copies of whole stores, for storage/storecopy: DESIGN.md §4.9.

var _ storecopy.Sink = (*store)(nil)

// Snapshot opens a read-only transaction that sees the rows as of one
// moment (storecopy.Source), on one connection until closed. The schema
// must be this version's (Migrate).
func (s *store) Snapshot(ctx context.Context) (_ storecopy.Snapshot, err error) {
	defer wrapTo("sqlstore.Snapshot", &err)
	if err := s.checkVersion(ctx); err != nil {
		return nil, err
	}
	tx, err := s.r.BeginTx(ctx, s.sql.snapshotOptions)
	if err != nil {
		return nil, err
	}
	snap := &snapshot{s: s, tx: tx}
	// The first read fixes the snapshot (SQLite, InnoDB).
	if snap.in, err = installation(ctx, tx); err != nil {
		_ = tx.Rollback()
		return nil, err
	}
	return snap, nil
}

// snapshot is a Store's storecopy.Snapshot.
type snapshot struct {
	s  *store
	tx bun.Tx
	in storecopy.Installation
}

func (p *snapshot) Installation(ctx context.Context) (storecopy.Installation, error) {
	return p.in, nil
}

func (p *snapshot) Close() error { return p.tx.Rollback() }

// A dumpTable is where Rows reads, and Load writes, the rows of a kind:
// cols in Load's order, the first a column of the key (skipTail), and the
// ORDER BY of Rows.
type dumpTable struct{ table, where, cols, order string }

// rows is the query of Rows.
func (t dumpTable) rows() string {
	return "SELECT " + t.cols + " FROM " + t.table + t.where + " ORDER BY " + t.order
}

var dumpTables = map[storecopy.Kind]dumpTable{
	storecopy.Contacts:      {"contacts", "", contactCols, "id"},
	storecopy.Conversations: {"conversations", "", "id, created_at, updated_at, message_count, last_message_id", "id"},
	// The members with something to say (joined_at alone: one who takes
	// part in a thread).
	storecopy.Members: {"conversation_members", " WHERE (is_member = TRUE OR joined_at IS NOT NULL OR read_created IS NOT NULL OR own_count <> 0)",
		"conversation_id, contact_id, is_member, joined_at, read_created, read_message_id, read_count, own_count, own_read_count", "conversation_id, contact_id"},
	storecopy.Messages:        {"messages", "", strings.ReplaceAll(messageOwnCols, "m.", ""), "id"},
	storecopy.ReactionNames:   {"reaction_names", "", "seq, message_id, name", "message_id, seq"},
	storecopy.Reactions:       {"reactions", "", "seq, message_id, name, contact_id, created_at", ""}, // Rows reads them in their names' order
	storecopy.Attachments:     {"attachments", "", strings.ReplaceAll(attachmentCols, "a.", ""), "id"},
	storecopy.Revisions:       {"message_revisions", "", strings.ReplaceAll(revisionCols, "r.", ""), "id"},
	storecopy.IdempotencyKeys: {"idempotency_keys", "", keyCols, "scope, client_key"},
}

func (p *snapshot) Count(ctx context.Context, k storecopy.Kind) (int64, error) {
	t, ok := dumpTables[k]
	if !ok {
		return 0, nil
	}
	var n int64
	err := p.tx.NewRaw("SELECT COUNT(*) FROM "+t.table+t.where).Scan(ctx, &n)
	return n, wrapErr("sqlstore.Snapshot", err)
}

// Rows yields the rows of kind k in batches (storecopy.Snapshot), scanned
// into storecopy's types, whose fields are named as the columns, their
// times made UTC.
func (p *snapshot) Rows(ctx context.Context, k storecopy.Kind, size int) iter.Seq2[*storecopy.Batch, error] {
	size = max(size, 1)
	t := dumpTables[k]
	switch k {
	case storecopy.Contacts:
		return scanBatches(ctx, p, k, t.rows(), size, func(b *storecopy.Batch, r contactRow) {
			b.Contacts = append(b.Contacts, r.contact())
		})
	case storecopy.Conversations:
		return scanBatches(ctx, p, k, t.rows(), size, func(b *storecopy.Batch, r storecopy.Conversation) {
			r.CreatedAt, r.UpdatedAt = utc(r.CreatedAt), utc(r.UpdatedAt)
			b.Conversations = append(b.Conversations, r)
		})
	case storecopy.Members:
		return scanBatches(ctx, p, k, t.rows(), size, func(b *storecopy.Batch, r storecopy.Member) {
			r.JoinedAt, r.ReadCreated = utc(r.JoinedAt), utc(r.ReadCreated)
			if !r.IsMember && !strings.Contains(r.ConversationID, "/") { // neither a member nor a thread's taker
				r.JoinedAt = time.Time{}
			}
			b.Members = append(b.Members, r)
		})
	case storecopy.Messages:
		return scanBatches(ctx, p, k, t.rows(), size, func(b *storecopy.Batch, r storecopy.Message) {
			r.ReadAt, r.CreatedAt, r.UpdatedAt = utc(r.ReadAt), utc(r.CreatedAt), utc(r.UpdatedAt)
			b.Messages = append(b.Messages, r)
		})
	case storecopy.ReactionNames:
		return scanBatches(ctx, p, k, t.rows(), size, func(b *storecopy.Batch, r storecopy.ReactionName) {
			b.ReactionNames = append(b.ReactionNames, r)
		})
	case storecopy.Reactions:
		return scanBatches(ctx, p, k, `SELECT r.message_id, r.name, r.seq, r.contact_id, r.created_at AS reacted_at FROM reactions AS r
			JOIN reaction_names AS n ON n.message_id = r.message_id AND n.name = r.name ORDER BY r.message_id, n.seq, r.seq`, size,
			func(b *storecopy.Batch, r storecopy.Reaction) {
				r.ReactedAt = utc(r.ReactedAt)
				b.Reactions = append(b.Reactions, r)
			})
	case storecopy.Attachments:
		return scanBatches(ctx, p, k, t.rows(), size, func(b *storecopy.Batch, r attachmentRow) {
			b.Attachments = append(b.Attachments, r.attachment())
		})
	case storecopy.Revisions:
		return scanBatches(ctx, p, k, t.rows(), size, func(b *storecopy.Batch, r revisionRow) {
			b.Revisions = append(b.Revisions, r.revision())
		})
	case storecopy.IdempotencyKeys:
		return scanBatches(ctx, p, k, t.rows(), size, func(b *storecopy.Batch, r keyRow) {
			b.IdempotencyKeys = append(b.IdempotencyKeys, r.record())
		})
	}
	return func(func(*storecopy.Batch, error) bool) {}
}

// batchBytes bounds the bytes of the rows of a batch, besides their number,
// so that a copy's memory stays bounded whatever its source holds (a
// tampered source had 30 MB texts, and a batch of 100 rows took 126 MB): a
// batch ends with the row that reaches it. A copy holds about three
// batches at once (one read, one queued, one loaded).
var batchBytes = 8 << 20

// rowBytes returns about how many bytes row r, a struct, holds: its own
// size and its strings' and byte slices' contents.
func rowBytes(r any) int {
	v := reflect.ValueOf(r)
	n := int(v.Type().Size())
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.String || f.Kind() == reflect.Slice {
			n += f.Len()
		}
	}
	return n
}

// scanBatches runs query in the snapshot's transaction and yields its
// rows, scanned into T and added by add to batches of kind k, of size
// rows (and batchBytes).
func scanBatches[T any](ctx context.Context, p *snapshot, k storecopy.Kind, query string, size int, add func(*storecopy.Batch, T)) iter.Seq2[*storecopy.Batch, error] {
	return func(yield func(*storecopy.Batch, error) bool) {
		rows, err := p.tx.QueryContext(ctx, query)
		if err != nil {
			yield(nil, wrapErr("sqlstore.Snapshot", err))
			return
		}
		defer rows.Close()
		b, bytes := &storecopy.Batch{Kind: k}, 0
		for rows.Next() {
			var r T
			if err = p.s.r.ScanRow(ctx, rows, &r); err != nil {
				break
			}
			add(b, r)
			bytes += rowBytes(r)
			if b.Len() == size || bytes >= batchBytes {
				if !yield(b, nil) {
					return
				}
				b, bytes = &storecopy.Batch{Kind: k}, 0
			}
		}
		if err = cmp.Or(err, rows.Err()); err != nil {
			yield(nil, wrapErr("sqlstore.Snapshot", err))
		} else if b.Len() > 0 {
			yield(b, nil)
		}
	}
}

// SetInstallation gives the database the installation id and epoch of in
// (storecopy.Sink).
func (s *store) SetInstallation(ctx context.Context, in storecopy.Installation) error {
	_, err := s.exec(ctx, "UPDATE parley_installation SET id = ?, epoch = ? WHERE one = 1", in.ID, in.Epoch)
	return wrapErr("sqlstore.SetInstallation", err)
}

// Uncopied returns the number of the database's rows that no copy carries
// (storecopy.Sink): events, handler positions, upload reservations and
// pending deletions. Events are counted where writers insert them (the
// log, on the server engines, that the sequencer numbers).
func (s *store) Uncopied(ctx context.Context) (map[string]int64, error) {
	var events, cursors, reservations, deletions int64
	err := s.r.NewRaw(`SELECT (SELECT COUNT(*) FROM `+s.sql.eventLog+`), (SELECT COUNT(*) FROM event_cursors),
		(SELECT COUNT(*) FROM upload_reservations), (SELECT COUNT(*) FROM pending_deletions)`).Scan(ctx, &events, &cursors, &reservations, &deletions)
	if err != nil {
		return nil, wrapErr("sqlstore.Uncopied", err)
	}
	return map[string]int64{"events": events, "handler positions": cursors, "upload reservations": reservations, "pending deletions": deletions}, nil
}

// Load stores the rows of b as they are, counters included, skipping those
// whose key (or other unique key) is stored already, in one transaction of
// multi-row INSERTs (storecopy.Sink).
func (s *store) Load(ctx context.Context, b *storecopy.Batch) error {
	t := dumpTables[b.Kind]
	key, _, _ := strings.Cut(t.cols, ",")
	if b.Kind == storecopy.Messages {
		s.eng.start(s) // SQLite's search indexer, as a send starts it
	}
	return wrapErr("sqlstore.Load", s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		ins := inserter{tx: tx, ctx: ctx, head: "INSERT INTO " + t.table + " (" + t.cols + ") " + s.sql.overriding + "VALUES ", tail: s.sql.skipTail(key)}
		var threads []string // the threads whose takers' thread_at follows (threads.go)
		switch b.Kind {
		case storecopy.Contacts:
			for _, c := range b.Contacts {
				ins.add(c.ID, c.Username, c.PhoneNumber, c.AvatarURL, ts(c.LastActiveAt), c.CreatedAt.UTC())
			}
		case storecopy.Conversations:
			for _, c := range b.Conversations {
				ins.add(c.ID, c.CreatedAt.UTC(), c.UpdatedAt.UTC(), c.MessageCount, nullable(c.LastMessageID))
				threads = append(threads, c.ID)
			}
		case storecopy.Members:
			for _, m := range b.Members {
				ins.add(m.ConversationID, m.ContactID, m.IsMember, ts(m.JoinedAt), ts(m.ReadCreated), nullable(m.ReadMessageID),
					m.ReadCount, m.OwnCount, m.OwnReadCount)
				if !m.JoinedAt.IsZero() && (len(threads) == 0 || threads[len(threads)-1] != m.ConversationID) {
					threads = append(threads, m.ConversationID)
				}
			}
		case storecopy.Messages:
			// search_words is made again from the text: its form is the
			// engine's (search.go), and the source's may be another.
			ins.head = "INSERT INTO messages (" + t.cols + ", search_words) VALUES "
			for _, m := range b.Messages {
				ins.add(m.ID, m.ConversationID, m.ContactID, m.Text, ts(m.ReadAt), m.CreatedAt.UTC(), ts(m.UpdatedAt), m.ReactionCount, m.AttachmentCount,
					m.Thread, m.Deleted, s.searchWords(m.Text))
			}
		case storecopy.ReactionNames:
			for _, r := range b.ReactionNames {
				ins.add(r.Seq, r.MessageID, r.Name)
			}
		case storecopy.Reactions:
			for _, r := range b.Reactions {
				ins.add(r.Seq, r.MessageID, r.Name, r.ContactID, r.ReactedAt.UTC())
			}
		case storecopy.Attachments:
			for _, a := range b.Attachments {
				ins.add(a.ID, nullable(a.MessageID), nullable(a.ConversationID), a.UploaderID, a.Filename, a.FileType, a.FileSize, a.SHA256, a.ImageWidth, a.ImageHeight, a.Key, a.CreatedAt.UTC())
			}
		case storecopy.Revisions:
			for _, r := range b.Revisions {
				ins.add(r.ID, r.MessageID, r.Text, r.CreatedAt.UTC())
			}
		case storecopy.IdempotencyKeys:
			for _, r := range b.IdempotencyKeys {
				ins.add(r.Scope, r.Key, r.Fingerprint, r.Lock, r.Result, r.CreatedAt.UTC(), r.ExpiresAt.UTC())
			}
		}
		if err := ins.flush(); err != nil {
			return err
		}
		if b.Kind == storecopy.ReactionNames || b.Kind == storecopy.Reactions {
			return s.loadedReactions(ctx, tx, t.table, b.Reactions)
		}
		return s.placeThreads(ctx, tx, threads...)
	}))
}

// loadStatementBytes is about the most bytes of values one INSERT of Load
// carries: well within MySQL's and MariaDB's max_allowed_packet.
const loadStatementBytes = 1 << 20

// inserter builds multi-row INSERTs that skip rows whose keys exist, and
// runs one whenever its values reach loadStatementBytes.
type inserter struct {
	tx     bun.Tx
	ctx    context.Context //nolint:containedctx // the transaction's, for the INSERTs that add runs
	head   string          // INSERT INTO t (cols) VALUES
	tail   string          // the clause that skips existing rows
	values strings.Builder
	args   []any
	size   int
	err    error
}

// add adds a row of values.
func (ins *inserter) add(vals ...any) {
	if ins.err != nil {
		return
	}
	if ins.values.Len() > 0 {
		ins.values.WriteString(", ")
	}
	ins.values.WriteString("(" + strings.Repeat("?, ", len(vals)-1) + "?)")
	for _, v := range vals {
		switch v := v.(type) {
		case string:
			ins.size += len(v) + 8
		case []byte:
			ins.size += 2*len(v) + 8
		default:
			ins.size += 16
		}
	}
	ins.args = append(ins.args, vals...)
	if ins.size >= loadStatementBytes {
		ins.err = ins.flush()
	}
}

// flush runs the INSERT of the rows added since the last.
func (ins *inserter) flush() error {
	if ins.err != nil || ins.values.Len() == 0 {
		return ins.err
	}
	_, err := ins.tx.ExecContext(ins.ctx, ins.head+ins.values.String()+ins.tail, ins.args...)
	ins.values.Reset()
	ins.args, ins.size = ins.args[:0], 0
	return err
}

// loadedReactions follows Load's insert of reaction names or reactions
// (of table) with their seq, which keeps their order: a name's counters
// are made anew from the reactors loaded, and PostgreSQL's identity
// continues after the greatest.
func (s *store) loadedReactions(ctx context.Context, tx bun.Tx, table string, reactions []storecopy.Reaction) error {
	if len(reactions) > 0 {
		// The counters of the names of the batch's messages, from their
		// reactors loaded so far (a message's reactors may span batches:
		// the last one counts them all).
		var msgs []string
		for _, r := range reactions {
			if len(msgs) == 0 || msgs[len(msgs)-1] != r.MessageID {
				msgs = append(msgs, r.MessageID)
			}
		}
		if _, err := tx.ExecContext(ctx, backfillReactorCounts+" WHERE message_id IN (?)", bun.List(msgs)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE reaction_names SET head_seq = "+headSQL("reaction_names.message_id", "reaction_names.name")+
			" WHERE message_id IN (?)", bun.List(msgs)); err != nil {
			return err
		}
	}
	if s.sql.resetSeq != "" {
		_, err := tx.ExecContext(ctx, fmt.Sprintf(s.sql.resetSeq, table))
		return err
	}
	return nil
}
