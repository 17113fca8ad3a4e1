package sqlstore

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging"
)

// importBatch is the number of rows of one multi-row INSERT of
// ImportMessages: large enough to amortise a round trip, small enough for
// every engine's statement size limits (bun formats the values into the
// statement, so no engine's parameter limit applies).
const importBatch = 1000

// importRow is the part of a messages row that ImportMessages writes; the
// other columns (read_at, updated_at) are NULL.
type importRow struct {
	bun.BaseModel `bun:"table:messages"`

	ID             string    `bun:"id"`
	ConversationID string    `bun:"conversation_id"`
	ContactID      string    `bun:"contact_id"`
	Text           string    `bun:"text"`
	CreatedAt      time.Time `bun:"created_at"`
}

// ImportMessages inserts msgs, for bulk loads and migrations: multi-row
// INSERTs of up to 1,000 rows, all of msgs in one transaction (pass chunks
// of some thousands to keep the transaction, and on SQLite the write lock,
// short). It is many times faster than one CreateMessage per message.
//
// It checks much less than CreateMessage, and the caller is responsible
// for the rest: each message needs an ID (time-ordered, as from
// internal/ids), a ConversationID, a CreatedAt, and a sender
// (Contact.ID) that exists (PutContact it first); their ReadAt and
// UpdatedAt are stored as unset, and their Reactions and Attachments must
// be empty (an import of messages with either fails with an error matching
// messaging.ErrInvalid, storing nothing). A message id that exists already
// fails the call with an error matching messaging.ErrConflict, storing
// nothing of it.
func (s *Store) ImportMessages(ctx context.Context, msgs []messaging.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	rows := make([]importRow, len(msgs))
	for i, m := range msgs {
		if len(m.Reactions) > 0 || len(m.Attachments) > 0 {
			return invalid("imported messages may not have reactions or attachments")
		}
		if m.ID == "" || m.ConversationID == "" || m.Contact.ID == "" || m.CreatedAt.IsZero() {
			return invalid("an imported message needs an id, a conversation, a contact and a creation time")
		}
		rows[i] = importRow{ID: m.ID, ConversationID: m.ConversationID, ContactID: m.Contact.ID, Text: m.Text, CreatedAt: m.CreatedAt.UTC()}
	}
	return wrapErr("sqlstore.ImportMessages", s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		for start := 0; start < len(rows); start += importBatch {
			batch := rows[start:min(start+importBatch, len(rows))]
			_, err := tx.NewInsert().Model(&batch).Exec(ctx)
			if isUniqueViolation(err) {
				return conflict("a message with this id exists")
			}
			if err != nil {
				return err
			}
		}
		return nil
	}))
}
