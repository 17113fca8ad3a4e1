package sqlstore_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/sqlstore"
)

// splitPanicHook panics on the second statement of combined sends (the
// sends without a key, made together again after the first failed) and
// slows the keyed send made alone meanwhile, as a host's query hook, a
// driver or a bug could.
type splitPanicHook struct {
	armed     atomic.Bool
	keyed     atomic.Int32 // the statements of sends with the keyed one
	keyMarker string
	keyedDone atomic.Bool // the keyed send alone has run
}

func (h *splitPanicHook) BeforeQuery(ctx context.Context, e *bun.QueryEvent) context.Context {
	if !h.armed.Load() || !strings.Contains(e.Query, "parley_send_many(") {
		return ctx
	}
	if !strings.Contains(e.Query, h.keyMarker) {
		panic("a statement of sends panicked")
	}
	if h.keyed.Add(1) == 2 { // the keyed send alone, after the three together
		time.Sleep(300 * time.Millisecond)
	}
	return ctx
}

func (h *splitPanicHook) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if h.armed.Load() && e.Err == nil && strings.Contains(e.Query, h.keyMarker) {
		h.keyedDone.Store(true)
	}
}

// splitPanicFixture: a statement of three sends (one whose message id is
// taken, one plain, one keyed) fails on the taken id; the keyed send is
// then made alone while the other two are made together again, and that
// statement panics.
func splitPanicFixture(t *testing.T) (f *sendFixture, h *splitPanicHook, keyed messaging.Message, outKeyed <-chan error) {
	ctx := t.Context()
	s := postgresOnly(t).Open(t)
	f = newSendFixtureOn(t, s, 2)
	f.release()
	first := f.message("c", 0)
	require.NoError(t, s.Driver().CreateMessage(ctx, first, nil, record))
	sqlstore.SetPreparedReads(s, false) // every write through bun's hooks
	h = &splitPanicHook{keyMarker: "k-split"}
	sqlstore.HookWrites(s, h)
	f.queued, f.release = sqlstore.HoldSends(s)

	f.send(ctx, first, nil) // its id is taken: the statement fails (23505)
	f.send(ctx, f.message("c", 1), nil)
	keyed = f.message("d", 0)
	outKeyed = f.send(ctx, keyed, f.key("k-split"))
	h.armed.Store(true)
	f.release()
	return f, h, keyed, outKeyed
}

// TestSendsPanicWhileKeyedAlone: the keyed send, made alone, is
// stored; its caller is not told it failed when the statement of the
// sends without a key, made together again meanwhile, panics.
func TestSendsPanicWhileKeyedAlone(t *testing.T) {
	ctx := t.Context()
	f, h, keyed, outKeyed := splitPanicFixture(t)
	errKeyed := <-outKeyed
	require.Eventually(t, h.keyedDone.Load, 5*time.Second, 10*time.Millisecond, "the keyed send alone ran")
	_, gerr := f.s.Driver().GetMessage(ctx, keyed.ID)
	stored := gerr == nil
	t.Logf("keyed caller got %v; stored: %v", errKeyed, stored)
	if errKeyed != nil {
		assert.False(t, stored, "the keyed send's caller was told %q, yet its message (and key record) are stored", errKeyed)
	}
	f.wg.Wait()
}

// TestCloseAwaitsSends: Close waits for the statements
// of queued sends (sending.running); the keyed send made alone after a
// failed statement is one of them, and must have run when Close returns.
func TestCloseAwaitsSends(t *testing.T) {
	f, h, _, outKeyed := splitPanicFixture(t)
	<-outKeyed // answered errCombinedPanic at once, the send still under way
	require.NoError(t, f.s.Close())
	assert.True(t, h.keyedDone.Load(), "Close returned while a send of the queue was still being made")
	f.wg.Wait()
}

// TestSendsTogetherUnprepared: the statement of sends, run
// unprepared (formatted by bun: a Store made by New, or a full cache of
// statements), stores texts of any characters as alone.
func TestSendsTogetherUnprepared(t *testing.T) {
	ctx := t.Context()
	s := postgresOnly(t).Open(t)
	f := newSendFixtureOn(t, s, 2)
	f.release()
	sqlstore.SetPreparedReads(s, false)
	f.queued, f.release = sqlstore.HoldSends(s)
	texts := []string{"", `"`, `\`, `\\"\"`, "{a,b}", "NULL", "x,y", `{"}`, "é 😀", "line\nbreak", "'single'", `\x00ff`, "what?", "$1 ? ?::text"}
	var ms []messaging.Message
	for i, text := range texts {
		m := f.message(`c'"\`, i%2)
		m.Text = text
		ms = append(ms, m)
		f.send(ctx, m, nil)
	}
	f.release()
	f.wg.Wait()
	assert.Equal(t, 1, f.transactions(ms...))
	for _, m := range ms {
		got, err := s.Driver().GetMessage(ctx, m.ID)
		require.NoError(t, err)
		assert.Equal(t, m.Text, got.Text)
		assert.Equal(t, m.ConversationID, got.ConversationID)
	}
}
