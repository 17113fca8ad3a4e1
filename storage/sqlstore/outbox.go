package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

var _ driver.EventStore = (*store)(nil)

// maxSequence is the most rows one pass of the outbox's sequencer
// numbers (DESIGN.md §4.3).
const maxSequence = 1000

// eventRow is a row of events.
type eventRow struct {
	Seq            int64     `bun:"seq"`
	Type           string    `bun:"type"`
	ConversationID string    `bun:"conversation_id"`
	AudienceID     string    `bun:"audience_id"`
	CreatedAt      time.Time `bun:"created_at"`
	Payload        string    `bun:"payload"`
}

// eventSealer returns the Sealer of the event ids, under the key of the
// installation row, which the installation's first caller makes.
func (s *store) eventSealer(ctx context.Context) (*ids.Sealer, error) {
	if sl := s.sealer.Load(); sl != nil {
		return sl, nil
	}
	var key string
	read := func() error {
		err := s.w.NewRaw("SELECT event_key FROM parley_installation WHERE one = 1").Scan(ctx, &key)
		if errors.Is(err, sql.ErrNoRows) {
			return errNoInstallation
		}
		return err
	}
	err := read()
	if err == nil && key == "" { // 16 random bytes, hex
		k := make([]byte, 16)
		rand.Read(k)
		if _, err = s.exec(ctx, "UPDATE parley_installation SET event_key = ? WHERE one = 1 AND event_key = ''", hex.EncodeToString(k)); err == nil {
			err = read() // ours, or another instance's made first
		}
	}
	if err != nil {
		return nil, err
	}
	k, err := hex.DecodeString(key)
	if err != nil {
		return nil, fmt.Errorf("the installation's event_key is not hex: %w", err)
	}
	sl, err := ids.NewSealer(k)
	if err != nil {
		return nil, err
	}
	s.sealer.Store(sl)
	return sl, nil
}

const eventCols = "e.seq, e.type, e.conversation_id, e.audience_id, e.created_at, e.payload"

// eventPayload is the object of an event, as stored.
type eventPayload struct {
	Message      *messaging.Message      `json:",omitempty"`
	Attachment   *messaging.Attachment   `json:",omitempty"`
	Conversation *messaging.Conversation `json:",omitempty"`
	DeletedID    string                  `json:",omitempty"`
	DeletedPID   string                  `json:",omitempty"`
	Thread       *messaging.Thread       `json:",omitempty"`
}

// payloadOf returns the stored payload of e: the JSON of its eventPayload.
func payloadOf(e messaging.Event) ([]byte, error) {
	return json.Marshal(eventPayload{Message: e.Message, Attachment: e.Attachment, Conversation: e.Conversation, DeletedID: e.DeletedID,
		DeletedPID: e.DeletedParentID, Thread: e.Thread})
}

// record stores the events rec makes of c, if any, in tx.
func (s *store) record(ctx context.Context, tx bun.Tx, rec driver.Recorder, c driver.Change) error {
	if rec == nil {
		return nil
	}
	return s.insertEvents(ctx, tx, rec(c))
}

// insertEvents stores evs in tx, in their order: on PostgreSQL in one
// statement, elsewhere in statements of powers of two of them (few shapes
// to prepare). No id is stored (eventSealer).
func (s *store) insertEvents(ctx context.Context, tx bun.Tx, evs []messaging.Event) error {
	if s.sql.arrays && len(evs) > 1 {
		args, err := eventsArrays(evs)
		if err == nil {
			_, err = s.execWrite(ctx, tx, insertEventsArraysSQL, args...)
		}
		return err
	}
	for len(evs) > 0 {
		n := 1 << (bits.Len(uint(len(evs))) - 1)
		args := make([]any, 0, 6*n)
		for _, e := range evs[:n] {
			p, err := payloadOf(e)
			if err != nil {
				return err
			}
			args = append(args, string(e.Type), nullable(e.ConversationID), nullable(e.AudienceID), e.Created.UTC(), string(p), nullable(e.DeletedID))
		}
		if _, err := s.execWrite(ctx, tx, insertEventsSQL(s.sql, n), args...); err != nil {
			return err
		}
		evs = evs[n:]
	}
	return nil
}

// insertEventsArraysSQL inserts events into PostgreSQL's event_log in
// their order, given as arrays, a column each (eventsArrays): one shape
// for any number of events. insertEventsArraysFrom is it without its
// order, for a condition to follow.
const insertEventsArraysSQL = insertEventsArraysFrom + `
	ORDER BY u.ord`

const insertEventsArraysFrom = `INSERT INTO event_log (type, conversation_id, audience_id, created_at, payload, deleted_id)
	SELECT u.t, NULLIF(u.c, ''), NULLIF(u.a, ''), u.at, u.p, NULLIF(u.d, '')
	FROM unnest(?::text[], ?::text[], ?::text[], ?::timestamptz[], ?::text[], ?::text[]) WITH ORDINALITY AS u(t, c, a, at, p, d, ord)`

// eventsArrays returns evs as the arguments of insertEventsArraysSQL.
func eventsArrays(evs []messaging.Event) ([]any, error) {
	cols := make(pgArrays, 6)
	for _, e := range evs {
		p, err := payloadOf(e)
		if err != nil {
			return nil, err
		}
		for c, v := range [6]string{string(e.Type), e.ConversationID, e.AudienceID, driverTime(e.Created), string(p), e.DeletedID} {
			cols.add(c, v)
		}
	}
	return cols.args(make([]any, 0, len(cols))), nil
}

// pgArrays builds PostgreSQL array literals of text, a column each, an
// element at a time.
type pgArrays [][]byte

// add appends v to the column c.
func (a pgArrays) add(c int, v string) {
	b := append(a[c], ',', '"')
	if len(a[c]) == 0 {
		b[0] = '{'
	}
	for i := 0; i < len(v); i++ {
		if v[i] == '"' || v[i] == '\\' {
			b = append(b, '\\')
		}
		b = append(b, v[i])
	}
	a[c] = append(b, '"')
}

// args appends the literals to dst, in the order of the columns.
func (a pgArrays) args(dst []any) []any {
	for _, col := range a {
		if len(col) == 0 {
			dst = append(dst, "{}")
		} else {
			dst = append(dst, string(append(col, '}')))
		}
	}
	return dst
}

// insertEventsSQL is the statement that inserts n events into d's
// eventLog, the first row's type through d's eventGate if it has one.
func insertEventsSQL(d *dialectSQL, n int) string {
	values := strings.Repeat("(?, ?, ?, ?, ?, ?), ", n)
	if d.eventGate != "" {
		values = "(" + d.eventGate + values[2:]
	}
	return "INSERT INTO " + d.eventLog + " (type, conversation_id, audience_id, created_at, payload, deleted_id) VALUES " + values[:len(values)-2]
}

// ReadEvents returns up to q.Limit events matching q in seq order, after
// numbering those committed since (PostgreSQL, MySQL).
func (s *store) ReadEvents(ctx context.Context, q driver.EventQuery) (_ []messaging.Event, err error) {
	defer wrapTo("sqlstore.ReadEvents", &err)
	if q.Limit < 1 {
		return nil, invalid("limit must be at least 1")
	}
	if err := s.eng.sequence(ctx, s); err != nil {
		return nil, err
	}
	convs, member, err := s.scope(ctx, q.All, q.MemberID, q.ConversationIDs, maxBranches)
	if err != nil {
		return nil, err
	}
	var scope []string
	var args []any
	from := "events AS e"
	if q.After > 0 && !q.All && member == "" && len(convs) > 0 { // a resume of a few conversations
		from = s.sql.eventsOfFew
	}
	if b, ok := s.scopeBranch("e.conversation_id", q.All, member, convs); ok {
		if b.where == "" {
			b.where = "e.conversation_id IS NOT NULL"
		}
		scope, args = append(scope, b.where), append(args, b.args...)
	}
	if q.Unfiled {
		scope = append(scope, "e.conversation_id IS NULL")
	}
	if len(scope) == 0 {
		return []messaging.Event{}, nil
	}
	where := []string{"e.seq > ?", "(" + strings.Join(scope, " OR ") + ")"}
	args = append([]any{max(q.After, 0)}, args...)
	if q.Before > 0 {
		where, args = append(where, "e.seq < ?"), append(args, q.Before)
	}
	if q.ViewerID != "" {
		where, args = append(where, "(e.audience_id IS NULL OR e.audience_id = ?)"), append(args, q.ViewerID)
	}
	dir := "ASC"
	if q.Newest {
		dir = "DESC"
	}
	args = append(args, q.Limit)
	var rows []eventRow
	if err := s.read(ctx, &rows, "SELECT "+eventCols+" FROM "+from+" WHERE "+strings.Join(where, " AND ")+" ORDER BY e.seq "+dir+" LIMIT ?", args...); err != nil {
		return nil, err
	}
	evs, err := s.eventsOf(ctx, rows)
	if err != nil || !q.Redact {
		return evs, err
	}
	return evs, s.redact(ctx, evs)
}

// maxRedactIDs is the most ids one read of redact asks about.
const maxRedactIDs = 500

// redact redacts from evs the messages and attachments they show that a
// stored delete event names (deleted_id, a partial index).
func (s *store) redact(ctx context.Context, evs []messaging.Event) error {
	seen := make(map[string]bool)
	var subjects []string
	for i := range evs {
		driver.EventSubjects(&evs[i], func(id string) {
			if _, ok := seen[id]; !ok {
				seen[id] = false
				subjects = append(subjects, id)
			}
		})
	}
	found := false
	for chunk := range slices.Chunk(subjects, maxRedactIDs) {
		var gone []string
		if err := s.read(ctx, &gone, "SELECT deleted_id FROM events WHERE deleted_id IN (?)", idList(chunk)); err != nil {
			return err
		}
		for _, id := range gone {
			seen[id], found = true, true
		}
	}
	if found {
		for i := range evs {
			driver.Redact(&evs[i], func(id string) bool { return seen[id] })
		}
	}
	return nil
}

// eventsOf returns the events of rows, with their ids.
func (s *store) eventsOf(ctx context.Context, rows []eventRow) ([]messaging.Event, error) {
	sealer, err := s.eventSealer(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]messaging.Event, len(rows))
	for i, r := range rows {
		var p eventPayload
		if err := json.Unmarshal([]byte(r.Payload), &p); err != nil {
			return nil, err
		}
		out[i] = messaging.Event{
			ID:              sealer.Seal(ids.Event, r.Seq),
			Type:            messaging.EventType(r.Type),
			ConversationID:  r.ConversationID,
			AudienceID:      r.AudienceID,
			Created:         utc(r.CreatedAt),
			Message:         p.Message,
			Attachment:      p.Attachment,
			Conversation:    p.Conversation,
			DeletedID:       p.DeletedID,
			DeletedParentID: p.DeletedPID,
			Thread:          p.Thread,
			Seq:             r.Seq,
		}
	}
	return out, nil
}

// GetEvent returns the event with this id, or an error matching
// messaging.ErrNotFound (also for an id this installation's key did not
// seal, and for an event not numbered yet, which no reader has seen).
func (s *store) GetEvent(ctx context.Context, id string) (_ messaging.Event, err error) {
	defer wrapTo("sqlstore.GetEvent", &err)
	sealer, err := s.eventSealer(ctx)
	if err != nil {
		return messaging.Event{}, err
	}
	seq, ok := sealer.Open(ids.Event, id)
	if !ok {
		return messaging.Event{}, notFound("event")
	}
	return s.oneEvent(ctx, "e.seq = ?", seq)
}

// LastEvent returns the event of greatest seq, or an error matching
// messaging.ErrNotFound.
func (s *store) LastEvent(ctx context.Context) (_ messaging.Event, err error) {
	defer wrapTo("sqlstore.LastEvent", &err)
	if err := s.eng.sequence(ctx, s); err != nil {
		return messaging.Event{}, err
	}
	return s.oneEvent(ctx, "e.seq > 0 ORDER BY e.seq DESC LIMIT 1")
}

// oneEvent returns the first event that where (and what follows) selects.
func (s *store) oneEvent(ctx context.Context, where string, args ...any) (messaging.Event, error) {
	r, err := readOne[eventRow](ctx, s.read, "event", "SELECT "+eventCols+" FROM events AS e WHERE "+where, args...)
	if err != nil {
		return messaging.Event{}, err
	}
	evs, err := s.eventsOf(ctx, []eventRow{r})
	if err != nil {
		return messaging.Event{}, err
	}
	return evs[0], nil
}

// pruneBatch is the most rows one statement of PruneEvents removes.
const pruneBatch = 1000

// PruneEvents removes events oldest first while they were created before
// before, in batches, walking the seq index. On SQLite it keeps the newest.
func (s *store) PruneEvents(ctx context.Context, before time.Time) (total int, err error) {
	defer wrapTo("sqlstore.PruneEvents", &err)
	for {
		var rows []struct {
			Seq       int64     `bun:"seq"`
			CreatedAt time.Time `bun:"created_at"`
		}
		if err := s.read(ctx, &rows, "SELECT seq, created_at FROM events WHERE seq > 0 ORDER BY seq LIMIT ?", pruneBatch+1); err != nil {
			return total, err
		}
		end := min(len(rows), pruneBatch)
		if s.sql.numbersAtInsert && len(rows) <= pruneBatch {
			end = len(rows) - 1 // the newest: no seq given twice
		}
		k := 0
		for k < end && rows[k].CreatedAt.Before(before) {
			k++
		}
		if k == 0 {
			return total, nil
		}
		err := s.retry(ctx, func(ctx context.Context) error {
			n, err := affected(s.w.ExecContext(ctx, s.sql.pruneEvents, rows[k-1].Seq))
			total += int(n / max(s.sql.prunedPerEvent, 1))
			return err
		})
		if err != nil {
			return total, err
		}
		if k < pruneBatch {
			return total, nil
		}
	}
}

// ClaimCursor claims the handler position name for owner until until.
func (s *store) ClaimCursor(ctx context.Context, name, owner string, start int64, now, until time.Time) (_ int64, ok bool, err error) {
	defer wrapTo("sqlstore.ClaimCursor", &err)
	var seq []int64
	err = s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO event_cursors (name, seq, owner) VALUES (?, ?, '')"+s.sql.skipTail("name"), name, start); err != nil {
			return err
		}
		n, err := affected(tx.ExecContext(ctx, `UPDATE event_cursors SET owner = ?, lease_until = ?
			WHERE name = ? AND (owner = '' OR owner = ? OR lease_until IS NULL OR lease_until < ?)`, owner, until.UTC(), name, owner, now.UTC()))
		if err != nil {
			return err
		}
		ok = n > 0
		seq = seq[:0]
		return tx.NewRaw("SELECT seq FROM event_cursors WHERE name = ?", name).Scan(ctx, &seq)
	})
	if err == nil && len(seq) == 0 {
		err = notFound("handler cursor")
	}
	if err != nil {
		return 0, false, err
	}
	return seq[0], ok, nil
}

// SaveCursor stores the handler position name, if owner holds its claim.
func (s *store) SaveCursor(ctx context.Context, name, owner string, seq int64, until time.Time) error {
	return wrapErr("sqlstore.SaveCursor", s.retry(ctx, func(ctx context.Context) error {
		n, err := affected(s.w.ExecContext(ctx, "UPDATE event_cursors SET seq = ?, lease_until = ? WHERE name = ? AND owner = ?", seq, until.UTC(), name, owner))
		if err == nil && n == 0 {
			err = conflict("the handler " + name + " is claimed by another owner")
		}
		return err
	}))
}
