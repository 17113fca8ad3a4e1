package sqlstore

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
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
	SearchWords    string    `bun:"search_words"`
	CreatedAt      time.Time `bun:"created_at"`
}

var _ driver.MessageImporter = (*store)(nil)

// ImportMessages inserts msgs (driver.MessageImporter) in one transaction
// of multi-row INSERTs, counted in their conversations as sends are.
func (s *store) ImportMessages(ctx context.Context, msgs []messaging.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	s.eng.start(s)
	rows := make([]importRow, len(msgs))
	for i, m := range msgs {
		if len(m.Reactions) > 0 || len(m.Attachments) > 0 {
			return invalid("imported messages may not have reactions or attachments")
		}
		if m.ID == "" || m.ConversationID == "" || m.Contact.ID == "" || m.CreatedAt.IsZero() {
			return invalid("an imported message needs an id, a conversation, a contact and a creation time")
		}
		rows[i] = importRow{ID: m.ID, ConversationID: m.ConversationID, ContactID: m.Contact.ID, Text: m.Text, SearchWords: s.searchWords(m.Text), CreatedAt: m.CreatedAt.UTC()}
	}
	slices.SortStableFunc(rows, func(a, b importRow) int {
		return cmp.Or(strings.Compare(a.ConversationID, b.ConversationID), a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return wrapErr("sqlstore.ImportMessages", s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := s.placeImports(ctx, tx, rows); err != nil {
			return err
		}
		for batch := range slices.Chunk(rows, importBatch) {
			_, err := tx.NewInsert().Model(&batch).Exec(ctx)
			if isUniqueViolation(err) {
				return conflict("a message with this id exists")
			}
			if err != nil {
				return err
			}
		}
		var convs []string
		for i, r := range rows {
			if i == 0 || r.ConversationID != rows[i-1].ConversationID {
				convs = append(convs, r.ConversationID)
			}
		}
		if err := s.recountReaders(ctx, tx, convs); err != nil {
			return err
		}
		return s.placeThreads(ctx, tx, convs...)
	}))
}

// placeImports counts rows (sorted by conversation, then time) in their
// conversations' counters, as sends are; a reader whose position is after
// an imported message has its counts made again from the rows.
func (s *store) placeImports(ctx context.Context, tx bun.Tx, rows []importRow) error {
	for start := 0; start < len(rows); {
		conv := rows[start].ConversationID
		end := start
		own := map[string]int{}
		for end < len(rows) && rows[end].ConversationID == conv {
			own[rows[end].ContactID]++
			end++
		}
		n, first, last := end-start, rows[start], rows[end-1]
		if _, err := tx.ExecContext(ctx, s.sql.countSend, conv, first.CreatedAt, last.CreatedAt, n, last.ID); err != nil {
			return err
		}
		for contact, k := range own {
			if _, err := tx.ExecContext(ctx, s.sql.countOwn, conv, contact, k); err != nil {
				return err
			}
		}
		start = end
	}
	return nil
}

// recountReaders makes again, from the rows, the counts of the readers of
// convs who have a read position (after an import, whose messages may sit
// before some of them).
func (s *store) recountReaders(ctx context.Context, tx bun.Tx, convs []string) error {
	before := `m.conversation_id = conversation_members.conversation_id AND (m.created_at < conversation_members.read_created
		OR (m.created_at = conversation_members.read_created AND m.id <= conversation_members.read_message_id))`
	_, err := tx.ExecContext(ctx, `UPDATE conversation_members SET
		read_count = (SELECT COUNT(*) FROM messages AS m WHERE `+before+`),
		own_read_count = (SELECT COUNT(*) FROM messages AS m WHERE `+before+` AND m.contact_id = conversation_members.contact_id)
		WHERE conversation_id IN (?) AND read_created IS NOT NULL`, bun.List(convs))
	return err
}
