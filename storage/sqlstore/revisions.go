package sqlstore

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// revisionRow is a row of message_revisions.
type revisionRow struct {
	ID        string    `bun:"id"`
	MessageID string    `bun:"message_id"`
	Text      string    `bun:"text"`
	CreatedAt time.Time `bun:"created_at"`
}

// revisionCols are the columns of message_revisions AS r.
const revisionCols = "r.id, r.message_id, r.text, r.created_at"

func (r revisionRow) revision() messaging.Revision {
	return messaging.Revision{ID: r.ID, MessageID: r.MessageID, Text: r.Text, CreatedAt: utc(r.CreatedAt)}
}

// keepRevision keeps old, the text of the locked message id, as a revision
// when ch replaces it with another text (see MessageChange.RevisionID).
func (s *store) keepRevision(ctx context.Context, tx bun.Tx, id, old string, ch driver.MessageChange) error {
	if ch.Text == nil || ch.RevisionID == "" || *ch.Text == old {
		return nil
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO message_revisions (id, message_id, text, created_at) VALUES (?, ?, ?, ?)",
		ch.RevisionID, id, old, ch.UpdatedAt.UTC())
	if isUniqueViolation(err) {
		return conflict("a revision with this id exists")
	}
	return err
}

// ListRevisions returns up to q.Limit revisions of the message, newest
// first, and whether more exist beyond them in the direction of travel, in
// one query along the index of the message's revisions.
func (s *store) ListRevisions(ctx context.Context, q driver.RevisionQuery) (_ []messaging.Revision, _ bool, err error) {
	defer wrapTo("sqlstore.ListRevisions", &err)
	if q.Limit < 1 {
		return nil, false, invalid("limit must be at least 1")
	}
	p := pageQuery{cols: revisionCols, from: "message_revisions AS r", alias: "r", after: q.After, before: q.Before, limit: q.Limit,
		branches: []branch{{where: "r.message_id = ?", args: []any{q.MessageID}}}}
	query, args := s.pageSQL(p)
	var rows []revisionRow
	if err := s.read(ctx, &rows, query, args...); err != nil {
		return nil, false, err
	}
	rows, more := trimPage(rows, q.Limit, q.Before != nil)
	out := make([]messaging.Revision, len(rows))
	for i, r := range rows {
		out[i] = r.revision()
	}
	return out, more, nil
}

// GetRevision returns the revision, or an error matching ErrNotFound.
func (s *store) GetRevision(ctx context.Context, id string) (messaging.Revision, error) {
	r, err := readOne[revisionRow](ctx, s.read, "revision", "SELECT "+revisionCols+" FROM message_revisions AS r WHERE r.id = ?", id)
	return r.revision(), wrapErr("sqlstore.GetRevision", err)
}
