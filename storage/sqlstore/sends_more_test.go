package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/sqlstore"
)

// newSendFixtureOn is newSendFixture on the store s.
func newSendFixtureOn(t *testing.T, s *sqlstore.Store, contacts int) *sendFixture {
	f := &sendFixture{t: t, s: s, at: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	for i := range contacts {
		c := messaging.Contact{ID: ids.New(ids.Contact), Username: fmt.Sprintf("u%d", i), CreatedAt: f.at}
		require.NoError(t, f.s.Driver().PutContact(t.Context(), c))
		f.contacts = append(f.contacts, c.ID)
	}
	// A first send alone.
	require.NoError(t, f.s.Driver().CreateMessage(t.Context(), f.message("warm", 0), nil, record))
	f.queued, f.release = sqlstore.HoldSends(f.s)
	return f
}

// TestSendsTogetherTextAndTimes: texts and conversation ids of any
// characters, read and update times, are stored by a statement of sends as
// alone.
func TestSendsTogetherTextAndTimes(t *testing.T) {
	f := newSendFixture(t, 2)
	ctx := t.Context()
	texts := []string{"", `"`, `\`, `\\"\"`, "{a,b}", "NULL", " padded ", "x,y", `{"}`, "é 😀 \u202e", "line\nbreak\ttab", "'single'", `\x00ff`}
	convs := []string{"c", `c"q`, `c\b`, "c{,}", "NULL", " c "}
	var ms []messaging.Message
	var outs []<-chan error
	for i, text := range texts {
		m := f.message(convs[i%len(convs)], i%2)
		m.Text = text
		m.ReadAt = m.CreatedAt.Add(time.Second + 999*time.Nanosecond)
		if i%3 == 0 {
			m.UpdatedAt = m.CreatedAt.Add(2*time.Second + 500*time.Nanosecond)
		}
		ms = append(ms, m)
		outs = append(outs, f.send(ctx, m, nil))
	}
	f.release()
	for i, out := range outs {
		require.NoError(t, <-out, "send %d", i)
	}
	assert.Equal(t, 1, f.transactions(ms...))
	for _, m := range ms {
		got, err := f.s.Driver().GetMessage(ctx, m.ID)
		require.NoError(t, err)
		assert.Equal(t, m.Text, got.Text)
		assert.Equal(t, m.ConversationID, got.ConversationID)
		assert.True(t, m.ReadAt.Truncate(time.Microsecond).Equal(got.ReadAt), "read at %v, stored %v", m.ReadAt, got.ReadAt)
		assert.True(t, m.UpdatedAt.Truncate(time.Microsecond).Equal(got.UpdatedAt), "updated at %v, stored %v", m.UpdatedAt, got.UpdatedAt)
	}
	for _, c := range convs {
		conv, err := f.s.Driver().GetConversation(ctx, c, f.contacts[0])
		require.NoError(t, err, "conversation %q", c)
		assert.Equal(t, c, conv.ID)
	}
}

// TestSendsAnswerLost: the statement of sends reached the server and
// committed, but its answer was lost (the client reads io.EOF, as when the
// server dies after the commit): its messages are there, so each caller
// is told its send is stored; no send is made again (it would find its
// own message in its way, and answer a conflict for a message stored).
func TestSendsAnswerLost(t *testing.T) {
	ctx := t.Context()
	s, p := cutStore(t, "CUT-THIS-SEND", true)
	f := newSendFixtureOn(t, s, 2)
	a, b := f.message("c", 0), f.message("c", 1)
	a.Text = "CUT-THIS-SEND"
	outA := f.send(ctx, a, nil)
	outB := f.send(ctx, b, nil)
	p.armed.Store(true)
	f.release()
	errA, errB := <-outA, <-outB
	require.EqualValues(t, 1, p.cut.Load(), "the statement of sends was cut")
	t.Logf("a: %v; b: %v", errA, errB)
	for _, c := range []struct {
		m   messaging.Message
		err error
	}{{a, errA}, {b, errB}} {
		var gerr error
		for range 3 { // the pool may hand out the cut connection once more
			if _, gerr = s.Driver().GetMessage(ctx, c.m.ID); gerr == nil || errors.Is(gerr, messaging.ErrNotFound) {
				break
			}
		}
		require.NoError(t, gerr, "the statement committed: %s is stored", c.m.ID)
		assert.NoError(t, c.err, "a stored send")
	}
}

// lockTimeoutStore opens a migrated PostgreSQL store whose sessions wait at
// most 300ms for a lock.
func lockTimeoutStore(t *testing.T) *sqlstore.Store {
	e := postgresOnly(t)
	u, err := url.Parse(e.DSN(t))
	require.NoError(t, err)
	q := u.Query()
	q.Set("lock_timeout", "300")
	u.RawQuery = q.Encode()
	s, err := sqlstore.Open(t.Context(), u.String(), &sqlstore.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Migrate(t.Context()))
	return s
}

// TestSendsLockTimeoutIsOneSends: with lock_timeout set, one send of a
// statement that waits for a row another transaction holds (its new
// conversation, inserted and not yet committed) fails the statement with
// 55P03; the others are made again and stored, as alone.
func TestSendsLockTimeoutIsOneSends(t *testing.T) {
	ctx := t.Context()
	s := lockTimeoutStore(t)
	f := newSendFixtureOn(t, s, 2)
	tx, err := s.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	_, err = tx.ExecContext(ctx, "INSERT INTO conversations (id, created_at, updated_at) VALUES ('held', now(), now())")
	require.NoError(t, err)

	free := f.message("free", 0)
	outHeld := f.send(ctx, f.message("held", 1), nil)
	outFree := f.send(ctx, free, nil)
	f.release()
	errHeld, errFree := <-outHeld, <-outFree
	t.Logf("held: %v; free: %v", errHeld, errFree)
	assert.NoError(t, errFree, "the send to a free conversation fails of another send's lock wait")
	_, err = s.Driver().GetMessage(ctx, free.ID)
	assert.NoError(t, err)
}

// TestSendsStalledByALock: two sends that wait for a lock (a new
// conversation another transaction inserted) take both statement slots;
// a send to another conversation does not wait behind them.
func TestSendsStalledByALock(t *testing.T) {
	ctx := t.Context()
	f := &sendFixture{t: t, s: postgresOnly(t).Open(t), at: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	for i := range 2 {
		c := messaging.Contact{ID: ids.New(ids.Contact), Username: fmt.Sprintf("u%d", i), CreatedAt: f.at}
		require.NoError(t, f.s.Driver().PutContact(ctx, c))
		f.contacts = append(f.contacts, c.ID)
	}
	tx, err := f.s.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	_, err = tx.ExecContext(ctx, "INSERT INTO conversations (id, created_at, updated_at) VALUES ('held', now(), now())")
	require.NoError(t, err)

	blocked := make(chan error, 2)
	for i := range 2 {
		m := f.message("held", i)
		go func() { blocked <- f.s.Driver().CreateMessage(ctx, m, nil, record) }()
	}
	time.Sleep(300 * time.Millisecond) // both wait for the row

	other, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	err = f.s.Driver().CreateMessage(other, f.message("unrelated", 0), nil, record)
	assert.NoError(t, err, "a send to an unrelated conversation, after %v", time.Since(start))
	require.NoError(t, tx.Rollback())
	for range 2 {
		require.NoError(t, <-blocked)
	}
}
