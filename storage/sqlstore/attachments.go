package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// attachmentRow is a row of attachments; its fields are
// messaging.Attachment's, in order, so that one converts to the other.
type attachmentRow struct {
	ID             string    `bun:"id"`
	MessageID      string    `bun:"message_id"`
	ConversationID string    `bun:"conversation_id"`
	UploaderID     string    `bun:"uploader_id"`
	Filename       string    `bun:"filename"`
	FileType       string    `bun:"file_type"`
	FileSize       int64     `bun:"file_size"`
	SHA256         string    `bun:"sha256"`
	ImageWidth     int       `bun:"image_width"`
	ImageHeight    int       `bun:"image_height"`
	Key            string    `bun:"blob_key"`
	CreatedAt      time.Time `bun:"created_at"`
}

// attachmentCols are the columns of attachments AS a.
const attachmentCols = "a.id, a.message_id, a.conversation_id, a.uploader_id, a.filename, a.file_type, a.file_size, a.sha256, a.image_width, a.image_height, a.blob_key, a.created_at"

func (r attachmentRow) attachment() messaging.Attachment {
	a := messaging.Attachment(r)
	a.CreatedAt = utc(r.CreatedAt)
	return a
}

// attachmentsOf returns the attachments of rows.
func attachmentsOf(rows []attachmentRow) []messaging.Attachment {
	out := make([]messaging.Attachment, len(rows))
	for i, r := range rows {
		out[i] = r.attachment()
	}
	return out
}

// CreateAttachment stores a new attachment row. Errors: ErrConflict if its
// id or key exists.
func (s *store) CreateAttachment(ctx context.Context, a messaging.Attachment, rec driver.Recorder) error {
	return wrapErr("sqlstore.CreateAttachment", s.createAttachment(ctx, a, rec, nil, ""))
}

// CreateAttachmentKeyed is CreateAttachment that also stores done, the
// record of an idempotency key, in the same transaction; on any error
// neither is stored.
func (s *store) CreateAttachmentKeyed(ctx context.Context, a messaging.Attachment, rec driver.Recorder, done driver.IdempotencyRecord) error {
	return wrapErr("sqlstore.CreateAttachment", s.createAttachment(ctx, a, rec, &done, ""))
}

func (s *store) createAttachment(ctx context.Context, a messaging.Attachment, rec driver.Recorder, done *driver.IdempotencyRecord, reserved string) error {
	stored := a
	stored.CreatedAt = a.CreatedAt.UTC()
	change := driver.Change{Attachments: []messaging.Attachment{stored}}
	return s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := consumeReservation(ctx, tx, reserved); err != nil {
			return err
		}
		if done != nil {
			if err := s.storeKey(ctx, tx, *done); err != nil {
				return err
			}
		}
		switch {
		case a.MessageID != "":
			// Counted on its message, locked first as links do.
			if _, err := tx.ExecContext(ctx, "UPDATE messages SET attachment_count = attachment_count + 1 WHERE id = ?", a.MessageID); err != nil {
				return err
			}
		case a.ConversationID != "":
			// Filed in a conversation, which exists from then on.
			if err := s.fileConversation(ctx, tx, a.ConversationID, a.CreatedAt); err != nil {
				return err
			}
		}
		if err := insertAttachment(ctx, tx, a); err != nil {
			return err
		}
		return s.record(ctx, tx, rec, change)
	})
}

// insertAttachment inserts the row of a.
func insertAttachment(ctx context.Context, db bun.IConn, a messaging.Attachment) error {
	_, err := db.ExecContext(ctx, `INSERT INTO attachments (id, message_id, conversation_id, uploader_id, filename, file_type, file_size, sha256, image_width, image_height, blob_key, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, nullable(a.MessageID), nullable(a.ConversationID), a.UploaderID, a.Filename, a.FileType, a.FileSize, a.SHA256, a.ImageWidth, a.ImageHeight, a.Key, a.CreatedAt.UTC())
	if isUniqueViolation(err) {
		return conflict("an attachment with this id or key exists")
	}
	return err
}

// GetAttachment returns the attachment, or an error matching ErrNotFound.
func (s *store) GetAttachment(ctx context.Context, id string) (messaging.Attachment, error) {
	a, err := getAttachment(ctx, s.readPrepared, id)
	return a, wrapErr("sqlstore.GetAttachment", err)
}

func getAttachment(ctx context.Context, query queryFn, id string) (messaging.Attachment, error) {
	r, err := readOne[attachmentRow](ctx, query, "attachment", "SELECT "+attachmentCols+" FROM attachments AS a WHERE a.id = ?", id)
	return r.attachment(), err
}

// ListAttachments returns up to q.Limit attachments matching q, newest
// first, and whether more exist beyond them in the direction of travel.
func (s *store) ListAttachments(ctx context.Context, q driver.AttachmentQuery) (_ []messaging.Attachment, _ bool, err error) {
	defer wrapTo("sqlstore.ListAttachments", &err)
	if q.Limit < 1 {
		return nil, false, invalid("limit must be at least 1")
	}
	p := pageQuery{cols: attachmentCols, from: "attachments AS a", alias: "a", after: q.After, before: q.Before, limit: q.Limit}
	convs, member, err := s.scope(ctx, q.All, q.MemberID, q.ConversationIDs, maxBranches)
	if err != nil {
		return nil, false, err
	}
	switch {
	case q.All && q.UploaderID != "":
		p.branches = []branch{{where: "(a.conversation_id IS NOT NULL OR a.uploader_id = ?)", args: []any{q.UploaderID}}}
	case q.All:
		p.branches = []branch{{where: "a.conversation_id IS NOT NULL"}}
	default:
		p.branches = s.conversationBranches("a.conversation_id", member, dedupe(convs))
	}
	if !q.All && q.UploaderID != "" {
		p.branches = append(p.branches, branch{where: "a.uploader_id = ? AND a.conversation_id IS NULL", args: []any{q.UploaderID}})
	}
	if len(p.branches) == 0 {
		return []messaging.Attachment{}, false, nil
	}
	query, args := s.pageSQL(p)
	var rows []attachmentRow
	if err := s.read(ctx, &rows, query, args...); err != nil {
		return nil, false, err
	}
	rows, more := trimPage(rows, q.Limit, q.Before != nil)
	return attachmentsOf(rows), more, nil
}

// RenameAttachment sets the file name and returns the updated row, or an
// error matching ErrNotFound.
func (s *store) RenameAttachment(ctx context.Context, id, filename string, rec driver.Recorder) (messaging.Attachment, error) {
	return s.renameAttachment(ctx, id, filename, rec, nil)
}

func (s *store) renameAttachment(ctx context.Context, id, filename string, rec driver.Recorder, done *driver.IdempotencyRecord) (messaging.Attachment, error) {
	var out messaging.Attachment
	err := s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		const update = "UPDATE attachments SET filename = ? WHERE id = ?"
		if s.sql.returning {
			r, err := readOne[attachmentRow](ctx, txQuery(tx), "attachment", update+" RETURNING "+strings.ReplaceAll(attachmentCols, "a.", ""), filename, id)
			if err != nil {
				return err
			}
			out = r.attachment()
		} else if _, err := tx.ExecContext(ctx, update, filename, id); err != nil {
			return err
		} else if out, err = getAttachment(ctx, txQuery(tx), id); err != nil {
			return err
		}
		if err := s.record(ctx, tx, rec, driver.Change{Attachments: []messaging.Attachment{out}}); err != nil {
			return err
		}
		if done != nil {
			return s.storeKey(ctx, tx, *done)
		}
		return nil
	})
	return out, wrapErr("sqlstore.RenameAttachment", err)
}

// DeleteAttachment removes the row and records its key as a pending
// deletion, in one transaction; it returns the removed row, or an error
// matching ErrNotFound. A linked one's message is locked first, as links do.
func (s *store) DeleteAttachment(ctx context.Context, id string, rec driver.Recorder) (messaging.Attachment, error) {
	var out messaging.Attachment
	err := s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if out, err = getAttachment(ctx, txQuery(tx), id); err != nil {
			return err
		}
		del, gone := "DELETE FROM attachments WHERE id = ?", notFound("attachment") // deleted meanwhile
		// Unlinked: unless a link came since the read. Linked: uncounted.
		if out.MessageID == "" {
			del, gone = del+" AND message_id IS NULL", errRelinked
		} else if _, err := tx.ExecContext(ctx, "UPDATE messages SET attachment_count = attachment_count - 1 WHERE id = ?", out.MessageID); err != nil {
			return err
		}
		if n, err := affected(tx.ExecContext(ctx, del, id)); err != nil || n == 0 {
			return cmp.Or(err, gone)
		}
		if err := s.addPending(ctx, tx, out.Key); err != nil {
			return err
		}
		c := driver.Change{Removed: []messaging.Attachment{out}}
		if out.MessageID != "" {
			// The message without the attachment, for the event.
			m, err := readMessage(ctx, s.sql, txQuery(tx), txQuery(tx), out.MessageID)
			if err != nil {
				return err
			}
			c.Message = &m
		}
		return s.record(ctx, tx, rec, c)
	})
	if errors.Is(err, errRelinked) {
		// Linked meanwhile: once more, now by the linked path.
		return s.DeleteAttachment(ctx, id, rec)
	}
	return out, wrapErr("sqlstore.DeleteAttachment", err)
}

// errRelinked is DeleteAttachment's signal that the attachment it read
// unlinked was linked before it could delete it.
var errRelinked = errors.New("sqlstore: attachment linked meanwhile")

// addPending records keys as pending deletions, unless already pending.
func (s *store) addPending(ctx context.Context, tx bun.Tx, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	now := time.Now().UTC()
	values := strings.Repeat("(?, ?), ", len(keys))
	args := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		args = append(args, k, now)
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO pending_deletions (blob_key, created_at) VALUES "+values[:len(values)-2]+s.sql.skipTail("blob_key"), args...)
	return err
}

// PendingDeletions returns up to limit pending keys, oldest first.
func (s *store) PendingDeletions(ctx context.Context, limit int) ([]string, error) {
	if limit < 1 {
		return []string{}, nil
	}
	keys := []string{}
	err := s.read(ctx, &keys, "SELECT blob_key FROM pending_deletions ORDER BY created_at, blob_key LIMIT ?", limit)
	if err != nil {
		return nil, wrapErr("sqlstore.PendingDeletions", err)
	}
	return keys, nil
}

// ForgetDeletion removes key from the pending deletions, if there.
func (s *store) ForgetDeletion(ctx context.Context, key string) error {
	return wrapErr("sqlstore.ForgetDeletion", s.retry(ctx, func(ctx context.Context) error {
		_, err := s.w.ExecContext(ctx, "DELETE FROM pending_deletions WHERE blob_key = ?", key)
		return err
	}))
}

// UploadedBytes returns the sum of the sizes of the attachments that
// uploaderID uploaded and of its reservations, read from indexes
// (attachments_uploader_size, upload_reservations_uploader_size) alone.
func (s *store) UploadedBytes(ctx context.Context, uploaderID string) (int64, error) {
	n, err := readOne[int64](ctx, s.readPrepared, "sum", uploadedBytesSQL, uploaderID, uploaderID)
	return n, wrapErr("sqlstore.UploadedBytes", err)
}

const uploadedBytesSQL = "SELECT (SELECT COALESCE(SUM(file_size), 0) FROM attachments WHERE uploader_id = ?)" +
	" + (SELECT COALESCE(SUM(file_size), 0) FROM upload_reservations WHERE uploader_id = ?)"

// KeysInUse reports which of keys belong to an attachment row, a
// pending deletion or an upload reservation.
func (s *store) KeysInUse(ctx context.Context, keys []string) (map[string]bool, error) {
	used := make(map[string]bool)
	const batch = 500
	for chunk := range slices.Chunk(keys, batch) {
		var found []string
		err := s.read(ctx, &found, "SELECT blob_key FROM attachments WHERE blob_key IN (?) UNION SELECT blob_key FROM pending_deletions WHERE blob_key IN (?)"+
			" UNION SELECT blob_key FROM upload_reservations WHERE blob_key IN (?)",
			idList(chunk), idList(chunk), idList(chunk))
		if err != nil {
			return nil, wrapErr("sqlstore.KeysInUse", err)
		}
		for _, k := range found {
			used[k] = true
		}
	}
	return used, nil
}
