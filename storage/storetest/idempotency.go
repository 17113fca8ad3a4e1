package storetest

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// keyTests check the records of idempotency keys
// (driver.IdempotencyStore) and the keyed writes that complete
// them, then the Service's retries over the backend.
var keyTests = []test{
	{"claim_a_new_key", testClaimNew},
	{"claim_held_by_a_call_under_way", testClaimHeld},
	{"keys_of_other_callers_do_not_collide", testClaimScopes},
	{"stale_claim_is_taken_over", testClaimStale},
	{"expired_record_is_replaced", testClaimExpired},
	{"release_only_with_the_lock", testRelease},
	{"keyed_create_keeps_record_with_message", testKeyedCreate},
	{"keyed_create_with_links", testKeyedCreateLinks},
	{"keyed_create_failure_keeps_nothing", testKeyedCreateFails},
	{"keyed_writes_of_a_lost_claim_change_nothing", testKeyTaken},
	{"keyed_update_keeps_the_returned_message", testKeyedUpdate},
	{"keyed_attachment_create_and_rename", testKeyedAttachment},
	{"claims_at_once_one_wins", testConcurrentClaims},
	{"get_a_missing_key_is_not_found", testGetKeyMissing},
	{"keyed_write_without_claim_stores_its_record", testKeyedWriteUnclaimed},
	{"keyed_write_over_a_done_record_changes_nothing", testKeyedWriteOverDone},
	{"keyed_writes_at_once_one_wins", testConcurrentKeyedWrites},
	{"prune_removes_expired_records_only", testPrune},
	{"service_retries_send_once", testServiceRetries},
	{"service_retries_at_once_send_once", testServiceConcurrentRetries},
	{"service_two_instances_at_once_send_once", testServiceTwoInstances},
	{"service_two_instances_retry_while_running", testServiceTwoInstancesWhileRunning},
	{"service_key_reused_with_other_arguments", testServiceKeyReused},
	{"service_keyed_update_edits_once", testServiceKeyedUpdate},
	{"service_replay_after_access_lost_is_404", testServiceReplayAfterAccessLost},
}

// claim returns a claim of key for scope made at t, to expire a day later.
func claim(scope, key string, t time.Time) driver.IdempotencyRecord {
	return driver.IdempotencyRecord{Scope: scope, Key: key, Fingerprint: "fp-" + key, Lock: "lock-" + ids.NewAt("", t),
		CreatedAt: t, ExpiresAt: t.Add(24 * time.Hour)}
}

// claimKey claims rec with stale claims made before staleBefore.
func (h *harness) claimKey(rec driver.IdempotencyRecord, staleBefore time.Time) (driver.IdempotencyRecord, bool) {
	h.t.Helper()
	got, ok, err := h.s.ClaimIdempotencyKey(h.ctx, rec, staleBefore)
	require.NoError(h.t, err, "ClaimIdempotencyKey")
	return got, ok
}

// mustClaim claims rec, which must be stored.
func (h *harness) mustClaim(rec driver.IdempotencyRecord) driver.IdempotencyRecord {
	h.t.Helper()
	got, ok := h.claimKey(rec, rec.CreatedAt.Add(-time.Hour))
	require.True(h.t, ok, "the claim of a new key is stored")
	return got
}

// record returns the record of the key, or false when there is none.
func (h *harness) record(scope, key string) (driver.IdempotencyRecord, bool) {
	h.t.Helper()
	got, err := h.s.GetIdempotencyKey(h.ctx, scope, key)
	if errors.Is(err, messaging.ErrNotFound) {
		return driver.IdempotencyRecord{}, false
	}
	require.NoError(h.t, err, "GetIdempotencyKey")
	return got, true
}

// done returns the record a keyed write stores for the claim c.
// done returns the record that completes claim c of a write whose
// answer is the resource id.
func done(c driver.IdempotencyRecord, id string) driver.IdempotencyRecord {
	c.Fingerprint += "+done"
	c.Result = []byte(id)
	return c
}

func testClaimNew(t *testing.T, h *harness) {
	c := claim("ctc_a", "key-1", at(0))
	got := h.mustClaim(c)
	assert.Equal(t, c.Scope, got.Scope)
	assert.Equal(t, c.Key, got.Key)
	assert.Equal(t, c.Lock, got.Lock)
	rec, ok := h.record("ctc_a", "key-1")
	require.True(t, ok)
	assert.Equal(t, c.Lock, rec.Lock, "the claim is stored, under way")
	assert.Equal(t, c.Fingerprint, rec.Fingerprint)
	assert.Empty(t, rec.Result)
	assert.True(t, rec.CreatedAt.Equal(at(0)), "CreatedAt %v", rec.CreatedAt)
	assert.True(t, rec.ExpiresAt.Equal(at(0).Add(24*time.Hour)), "ExpiresAt %v", rec.ExpiresAt)
	assertUTC(t, rec.CreatedAt, "CreatedAt")
	assertUTC(t, rec.ExpiresAt, "ExpiresAt")
}

func testClaimHeld(t *testing.T, h *harness) {
	first := h.mustClaim(claim("ctc_a", "k", at(10)))
	second := claim("ctc_a", "k", at(20))
	second.Fingerprint = "other"
	got, ok := h.claimKey(second, at(5)) // the first claim is not stale
	assert.False(t, ok, "a key under way is not claimed twice")
	assert.Equal(t, first.Lock, got.Lock, "the record in the way is returned")
	assert.Equal(t, first.Fingerprint, got.Fingerprint)
	got, ok = h.claimKey(second, at(10)) // claimed at staleBefore: not stale
	assert.False(t, ok)
	assert.Equal(t, first.Lock, got.Lock)
}

func testClaimScopes(t *testing.T, h *harness) {
	a := h.mustClaim(claim("ctc_alice", "same-key", at(0)))
	b := h.mustClaim(claim("ctc_bob", "same-key", at(0)))
	assert.NotEqual(t, a.Lock, b.Lock)
	ra, _ := h.record("ctc_alice", "same-key")
	rb, _ := h.record("ctc_bob", "same-key")
	assert.Equal(t, a.Lock, ra.Lock)
	assert.Equal(t, b.Lock, rb.Lock)
	h.mustClaim(claim("ctc_alice", "Same-Key", at(0))) // keys are case-sensitive
	// A key may end in spaces (check.IdempotencyKey): they count.
	padded := h.mustClaim(claim("ctc_alice", "same-key  ", at(0)))
	rp, ok := h.record("ctc_alice", "same-key  ")
	require.True(t, ok)
	assert.Equal(t, padded.Lock, rp.Lock)
	ra, _ = h.record("ctc_alice", "same-key")
	assert.Equal(t, a.Lock, ra.Lock)
}

func testClaimStale(t *testing.T, h *harness) {
	alice := h.contact("alice")
	first := h.mustClaim(claim(alice.ID, "k", at(0)))
	second := claim(alice.ID, "k", at(120))
	got, ok := h.claimKey(second, at(60)) // the first claim is older than that
	require.True(t, ok, "a stale claim is taken over")
	assert.Equal(t, second.Lock, got.Lock)

	// The first call's write now fails and changes nothing.
	m := newMessage("c", alice, at(1))
	err := h.s.CreateMessageKeyed(h.ctx, m, nil, nil, done(first, "first"))
	assert.ErrorIs(t, err, driver.ErrKeyTaken)
	assert.ErrorIs(t, err, messaging.ErrConflict)
	h.assertNoMessage(m.ID)
	rec, _ := h.record(alice.ID, "k")
	assert.Equal(t, second.Lock, rec.Lock, "the record stays the second call's claim")
}

func testClaimExpired(t *testing.T, h *harness) {
	alice := h.contact("alice")
	first := h.mustClaim(claim(alice.ID, "k", at(0)))
	m := newMessage("c", alice, at(1))
	require.NoError(t, h.s.CreateMessageKeyed(h.ctx, m, nil, nil, done(first, "first")))

	later := claim(alice.ID, "k", at(0).Add(24*time.Hour-time.Second))
	_, ok := h.claimKey(later, later.CreatedAt.Add(-time.Minute))
	assert.False(t, ok, "a done record is kept until it expires")
	expired := claim(alice.ID, "k", at(0).Add(24*time.Hour))
	got, ok := h.claimKey(expired, expired.CreatedAt.Add(-time.Minute))
	require.True(t, ok, "an expired record is replaced")
	assert.Equal(t, expired.Lock, got.Lock)
	rec, _ := h.record(alice.ID, "k")
	assert.Empty(t, rec.Result, "the new claim has no result")
	assert.Equal(t, expired.Fingerprint, rec.Fingerprint)
}

func testRelease(t *testing.T, h *harness) {
	c := h.mustClaim(claim("ctc_a", "k", at(0)))
	require.NoError(t, h.s.ReleaseIdempotencyKey(h.ctx, "ctc_a", "k", "another-lock"))
	rec, ok := h.record("ctc_a", "k")
	require.True(t, ok, "a release with another lock does nothing")
	assert.Equal(t, c.Lock, rec.Lock)
	require.NoError(t, h.s.ReleaseIdempotencyKey(h.ctx, "ctc_a", "k", c.Lock))
	_, ok = h.record("ctc_a", "k")
	assert.False(t, ok, "the claim is released")
	require.NoError(t, h.s.ReleaseIdempotencyKey(h.ctx, "ctc_a", "k", c.Lock), "releasing again is no error")
	require.NoError(t, h.s.ReleaseIdempotencyKey(h.ctx, "ctc_a", "missing", "x"))

	// A done record is not released, not even with an empty lock.
	alice := h.contact("alice")
	d := h.mustClaim(claim(alice.ID, "d", at(0)))
	require.NoError(t, h.s.CreateMessageKeyed(h.ctx, newMessage("c", alice, at(1)), nil, nil, done(d, "x")))
	require.NoError(t, h.s.ReleaseIdempotencyKey(h.ctx, alice.ID, "d", d.Lock))
	require.NoError(t, h.s.ReleaseIdempotencyKey(h.ctx, alice.ID, "d", ""))
	rec, ok = h.record(alice.ID, "d")
	require.True(t, ok, "a done record stays")
	assert.Empty(t, rec.Lock)
}

func testKeyedCreate(t *testing.T, h *harness) {
	alice := h.contact("alice")
	c := h.mustClaim(claim(alice.ID, "k", at(0)))
	m := newMessage("c", alice, at(1))
	d := done(c, m.ID)
	require.NoError(t, h.s.CreateMessageKeyed(h.ctx, m, nil, nil, d))
	got := h.get(m.ID)
	assert.Equal(t, m.Text, got.Text)

	rec, ok := h.record(alice.ID, "k")
	require.True(t, ok)
	assert.Empty(t, rec.Lock, "the record is done")
	assert.Equal(t, d.Fingerprint, rec.Fingerprint, "the fingerprint is the completed one")
	assert.Equal(t, m.ID, string(rec.Result), "the result is kept as given")
	assert.True(t, rec.ExpiresAt.Equal(c.ExpiresAt))
}

func testKeyedCreateLinks(t *testing.T, h *harness) {
	alice := h.contact("alice")
	a1 := h.attachment("c", alice, at(1))
	c := h.mustClaim(claim(alice.ID, "k", at(0)))
	m := newMessage("c", alice, at(2))
	require.NoError(t, h.s.CreateMessageKeyed(h.ctx, m, []string{a1.ID}, nil, done(c, "ok")))
	assert.Equal(t, []messaging.Attachment{linked(a1, m)}, h.get(m.ID).Attachments)
	rec, _ := h.record(alice.ID, "k")
	assert.Empty(t, rec.Lock)
}

func testKeyedCreateFails(t *testing.T, h *harness) {
	alice := h.contact("alice")
	a1 := h.attachment("c", alice, at(1))
	m1 := h.message("c", alice, at(2), a1.ID)
	c := h.mustClaim(claim(alice.ID, "k", at(0)))
	m2 := newMessage("c", alice, at(3))
	err := h.s.CreateMessageKeyed(h.ctx, m2, []string{a1.ID}, nil, done(c, "no"))
	assert.ErrorIs(t, err, messaging.ErrConflict)
	assert.NotErrorIs(t, err, driver.ErrKeyTaken)
	h.assertNoMessage(m2.ID)
	assert.Equal(t, linked(a1, m1), h.getAttachment(a1.ID))
	rec, ok := h.record(alice.ID, "k")
	require.True(t, ok)
	assert.Equal(t, c.Lock, rec.Lock, "the claim is not completed by a failed write")
	assert.Empty(t, rec.Result)
}

func testKeyTaken(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	a := h.attachment("c", alice, at(2))
	first := h.mustClaim(claim(alice.ID, "k", at(0)))
	_, ok := h.claimKey(claim(alice.ID, "k", at(600)), at(300))
	require.True(t, ok, "taken over")
	lost := done(first, "lost")

	err := h.s.CreateMessageKeyed(h.ctx, newMessage("c", alice, at(3)), []string{a.ID}, nil, lost)
	assert.ErrorIs(t, err, driver.ErrKeyTaken)
	assert.Equal(t, a, h.getAttachment(a.ID), "the attachment is not linked")

	text := "edited"
	_, err = h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{Text: &text, RevisionID: ids.NewAt(ids.Revision, at(4)),
		Reactions: h.adds("alice", "x"), UpdatedAt: at(4), Done: &lost})
	assert.ErrorIs(t, err, driver.ErrKeyTaken)
	assertMessage(t, m, h.get(m.ID), "the message is unchanged")
	revs, _, err := h.s.ListRevisions(h.ctx, driver.RevisionQuery{Window: driver.Window{Limit: 10}, MessageID: m.ID})
	require.NoError(t, err)
	assert.Empty(t, revs, "no revision is kept")

	b := newAttachment("c", alice.ID, at(5))
	err = h.s.CreateAttachmentKeyed(h.ctx, b, nil, lost)
	assert.ErrorIs(t, err, driver.ErrKeyTaken)
	_, err = h.s.GetAttachment(h.ctx, b.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "no row")

	_, err = h.s.RenameAttachmentKeyed(h.ctx, a.ID, "renamed.txt", nil, lost)
	assert.ErrorIs(t, err, driver.ErrKeyTaken)
	assert.Equal(t, a.Filename, h.getAttachment(a.ID).Filename, "not renamed")
}

func testKeyedUpdate(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	c := h.mustClaim(claim(alice.ID, "k", at(0)))
	d := done(c, m.ID)
	got, err := h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{Reactions: h.adds("alice", "x"), UpdatedAt: at(2), Done: &d})
	require.NoError(t, err)
	assert.Equal(t, []string{"alice"}, got.Reactions[0].Reactors)
	rec, _ := h.record(alice.ID, "k")
	assert.Empty(t, rec.Lock)
	assert.Equal(t, m.ID, string(rec.Result), "the result is kept as given")

	// A failed change keeps the claim.
	c3 := h.mustClaim(claim(alice.ID, "k3", at(0)))
	d3 := done(c3, m.ID)
	_, err = h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{Reactions: h.adds("alice", "y"), Check: Limits(1, 0), Done: &d3})
	assert.ErrorIs(t, err, messaging.ErrInvalid)
	rec, _ = h.record(alice.ID, "k3")
	assert.Equal(t, c3.Lock, rec.Lock)
}

func testKeyedAttachment(t *testing.T, h *harness) {
	alice := h.contact("alice")
	c := h.mustClaim(claim(alice.ID, "up", at(0)))
	a := newAttachment("c", alice.ID, at(1))
	require.NoError(t, h.s.CreateAttachmentKeyed(h.ctx, a, nil, done(c, a.ID)))
	assert.Equal(t, a, h.getAttachment(a.ID))
	rec, _ := h.record(alice.ID, "up")
	assert.Empty(t, rec.Lock)
	assert.Equal(t, a.ID, string(rec.Result))

	dup := h.mustClaim(claim(alice.ID, "dup", at(0)))
	err := h.s.CreateAttachmentKeyed(h.ctx, a, nil, done(dup, a.ID))
	assert.ErrorIs(t, err, messaging.ErrConflict, "an existing id")
	rec, _ = h.record(alice.ID, "dup")
	assert.Equal(t, dup.Lock, rec.Lock, "a failed create keeps the claim")

	rn := h.mustClaim(claim(alice.ID, "rename", at(0)))
	got, err := h.s.RenameAttachmentKeyed(h.ctx, a.ID, "new name.txt", nil, done(rn, a.ID))
	require.NoError(t, err)
	assert.Equal(t, "new name.txt", got.Filename)
	assert.Equal(t, got, h.getAttachment(a.ID))
	rec, _ = h.record(alice.ID, "rename")
	assert.Equal(t, a.ID, string(rec.Result))

	missing := h.mustClaim(claim(alice.ID, "missing", at(0)))
	_, err = h.s.RenameAttachmentKeyed(h.ctx, ids.New(ids.Attachment), "x.txt", nil, done(missing, "att_missing"))
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	rec, _ = h.record(alice.ID, "missing")
	assert.Equal(t, missing.Lock, rec.Lock)
}

func testConcurrentClaims(t *testing.T, h *harness) {
	const n = 16
	won := make([]bool, n)
	locks := make([]string, n)
	errs := parallel(n, func(i int) error {
		c := claim("ctc_a", "race", at(0))
		c.Lock += "-" + itoa(i)
		got, ok, err := h.s.ClaimIdempotencyKey(h.ctx, c, at(-60))
		won[i], locks[i] = ok, got.Lock
		return err
	})
	winners := 0
	var winner string
	for i, err := range errs {
		require.NoError(t, err, "claim %d", i)
		if won[i] {
			winners++
			winner = locks[i]
		}
	}
	require.Equal(t, 1, winners, "exactly one claim wins")
	for i := range n {
		assert.Equal(t, winner, locks[i], "every loser is shown the winner's claim")
	}
}

func testGetKeyMissing(t *testing.T, h *harness) {
	_, err := h.s.GetIdempotencyKey(h.ctx, "ctc_a", "missing")
	assert.ErrorIs(t, err, messaging.ErrNotFound)
}

// unclaimed returns the record a short keyed write stores: no claim was
// made before it, and its lock is its own.
func unclaimed(scope, key string, t time.Time, id string) driver.IdempotencyRecord {
	return done(claim(scope, key, t), id)
}

func testKeyedWriteUnclaimed(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	a := h.attachment("c", alice, at(2))

	d := unclaimed(alice.ID, "create", at(3), "created")
	require.NoError(t, h.s.CreateMessageKeyed(h.ctx, newMessage("c", alice, at(3)), []string{a.ID}, nil, d))
	text := "edited"
	u := unclaimed(alice.ID, "update", at(4), m.ID)
	got, err := h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{Text: &text, UpdatedAt: at(4), Done: &u})
	require.NoError(t, err)
	b := newAttachment("c", alice.ID, at(5))
	require.NoError(t, h.s.CreateAttachmentKeyed(h.ctx, b, nil, unclaimed(alice.ID, "upload", at(5), "uploaded")))
	renamed, err := h.s.RenameAttachmentKeyed(h.ctx, b.ID, "r.txt", nil, unclaimed(alice.ID, "rename", at(6), b.ID))
	require.NoError(t, err)

	assert.Equal(t, "edited", got.Text)
	assert.Equal(t, "r.txt", renamed.Filename)
	for key, want := range map[string]string{"create": "created", "update": m.ID, "upload": "uploaded", "rename": b.ID} {
		rec, ok := h.record(alice.ID, key)
		require.True(t, ok, "the record of %s is stored with its write", key)
		assert.Empty(t, rec.Lock, "%s: done", key)
		assert.Equal(t, "fp-"+key+"+done", rec.Fingerprint)
		assert.Equal(t, want, string(rec.Result), "%s: the kept result", key)
		assert.True(t, rec.CreatedAt.Equal(d.CreatedAt.Add(time.Duration(map[string]int{"create": 0, "update": 1, "upload": 2, "rename": 3}[key])*time.Second)), "%s: CreatedAt %v", key, rec.CreatedAt)
	}
}

func testKeyedWriteOverDone(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := h.message("c", alice, at(1))
	a := h.attachment("c", alice, at(2))
	first := unclaimed(alice.ID, "k", at(3), "first")
	require.NoError(t, h.s.CreateMessageKeyed(h.ctx, newMessage("c", alice, at(3)), nil, nil, first))

	retry := unclaimed(alice.ID, "k", at(4), "retry")
	retry.Lock += "-retry"
	m2 := newMessage("c", alice, at(4))
	err := h.s.CreateMessageKeyed(h.ctx, m2, []string{a.ID}, nil, retry)
	assert.ErrorIs(t, err, driver.ErrKeyTaken)
	h.assertNoMessage(m2.ID)
	assert.Equal(t, a, h.getAttachment(a.ID), "not linked")
	text := "changed"
	_, err = h.s.UpdateMessage(h.ctx, m.ID, driver.MessageChange{Text: &text, RevisionID: ids.NewAt(ids.Revision, at(4)), UpdatedAt: at(4), Done: &retry})
	assert.ErrorIs(t, err, driver.ErrKeyTaken)
	assertMessage(t, m, h.get(m.ID))
	b := newAttachment("c", alice.ID, at(5))
	assert.ErrorIs(t, h.s.CreateAttachmentKeyed(h.ctx, b, nil, retry), driver.ErrKeyTaken)
	_, err = h.s.GetAttachment(h.ctx, b.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	_, err = h.s.RenameAttachmentKeyed(h.ctx, a.ID, "x.txt", nil, retry)
	assert.ErrorIs(t, err, driver.ErrKeyTaken)
	assert.Equal(t, a, h.getAttachment(a.ID))
	rec, _ := h.record(alice.ID, "k")
	assert.Equal(t, "first", string(rec.Result), "the first record stays")

	// Once expired, the record is replaced by the next keyed write.
	later := unclaimed(alice.ID, "k", first.ExpiresAt, "later")
	require.NoError(t, h.s.CreateMessageKeyed(h.ctx, newMessage("c", alice, at(6)), nil, nil, later))
	rec, _ = h.record(alice.ID, "k")
	assert.Equal(t, "later", string(rec.Result))
}

func testConcurrentKeyedWrites(t *testing.T, h *harness) {
	alice := h.contact("alice")
	const n = 8
	msgs := make([]messaging.Message, n)
	for i := range msgs {
		msgs[i] = newMessage("race", alice, at(i))
	}
	errs := parallel(n, func(i int) error {
		d := unclaimed(alice.ID, "race", at(10), "call "+itoa(i))
		d.Lock += "-" + itoa(i)
		return h.s.CreateMessageKeyed(h.ctx, msgs[i], nil, nil, d)
	})
	won := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, won, "two keyed writes of one key succeeded")
			won = i
			continue
		}
		assert.ErrorIs(t, err, driver.ErrKeyTaken, "call %d", i)
	}
	require.NotEqual(t, -1, won, "one keyed write succeeds")
	items, _, err := h.s.ListMessages(h.ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"race"}}, Window: driver.Window{Limit: 100}})
	require.NoError(t, err)
	assert.Equal(t, []string{msgs[won].ID}, messageIDs(items), "only the winner's message is stored")
	rec, _ := h.record(alice.ID, "race")
	assert.Equal(t, "call "+itoa(won), string(rec.Result))
}

func testPrune(t *testing.T, h *harness) {
	alice := h.contact("alice")
	day := 24 * time.Hour
	for i := range 5 {
		c := h.mustClaim(claim(alice.ID, "old-"+itoa(i), at(i)))
		if i%2 == 0 {
			require.NoError(t, h.s.CreateMessageKeyed(h.ctx, newMessage("c", alice, at(10+i)), nil, nil, done(c, "x")))
		}
	}
	h.mustClaim(claim(alice.ID, "new", at(100)))

	n, err := h.s.PruneIdempotencyKeys(h.ctx, at(2).Add(day), 2)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "at most limit records")
	n, err = h.s.PruneIdempotencyKeys(h.ctx, at(2).Add(day), 100)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the third record expired at before")
	_, ok := h.record(alice.ID, "old-3")
	assert.True(t, ok, "a record that has not expired stays")
	n, err = h.s.PruneIdempotencyKeys(h.ctx, at(200).Add(day), 100)
	require.NoError(t, err)
	assert.Equal(t, 3, n, "done and claimed records alike")
	n, err = h.s.PruneIdempotencyKeys(h.ctx, at(200).Add(day), 100)
	require.NoError(t, err)
	assert.Zero(t, n)
}

// keyedService returns a messaging Service over the backend, with the
// clock now (nil: time.Now), and its contact alice.
func (h *harness) keyedService(now func() time.Time) (*messaging.Service, messaging.Contact) {
	h.t.Helper()
	msgs := svctest.New(h.t, storage{h.s}, nil, &messaging.Options{Now: now, Logger: slog.New(slog.DiscardHandler)})
	alice, err := msgs.SaveContact(h.ctx, messaging.Contact{Username: "alice"})
	require.NoError(h.t, err)
	return msgs, alice
}

func testServiceRetries(t *testing.T, h *harness) {
	msgs, alice := h.keyedService(nil)
	bob, err := msgs.SaveContact(h.ctx, messaging.Contact{Username: "bob"})
	require.NoError(t, err)
	in := messaging.NewMessage{ConversationID: "general", Text: "hello once", Idempotency: messaging.Idempotency{Key: "send-1"}}
	var first messaging.Message
	for i := range 10 {
		var replayed bool
		in.Idempotency.Replayed = &replayed
		m, err := msgs.Create(h.ctx, alice, in)
		require.NoError(t, err, "try %d", i)
		if i == 0 {
			first = m
			assert.False(t, replayed, "the first call sends")
		} else {
			assert.True(t, replayed, "try %d is a replay", i)
			assertMessage(t, first, m, "try %d answers as the first", i)
		}
	}
	page, err := msgs.Messages(h.ctx, alice, "general", messaging.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Data, 1, "one message")

	// Bob's key of the same name is his own.
	in.Idempotency.Replayed = nil
	m, err := msgs.Create(h.ctx, bob, in)
	require.NoError(t, err)
	assert.NotEqual(t, first.ID, m.ID)
	assert.Equal(t, bob.ID, m.Contact.ID)

	// A message deleted since is not sent again, nor shown: the replay
	// reads it again and answers what a fresh read would.
	require.NoError(t, msgs.Delete(h.ctx, alice, first.ID))
	_, err = msgs.Create(h.ctx, alice, in)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	page, err = msgs.Messages(h.ctx, alice, "general", messaging.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, page.Data, 1, "only bob's")
}

// testServiceReplayAfterAccessLost: a record keeps the id of what its
// write answered, not its body, so a caller who may no longer see the
// conversation gets from a replay what a fresh request would, a 404, and
// not the message kept for a day.
func testServiceReplayAfterAccessLost(t *testing.T, h *harness) {
	msgs := svctest.New(h.t, storage{h.s}, nil, &messaging.Options{Policy: messaging.MembersOnly(), Logger: slog.New(slog.DiscardHandler)})
	alice, err := msgs.SaveContact(h.ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	require.NoError(t, msgs.AddMember(h.ctx, "team", alice.ID))
	in := messaging.NewMessage{ConversationID: "team", Text: "kept by id", Idempotency: messaging.Idempotency{Key: "send"}}
	first, err := msgs.Create(h.ctx, alice, in)
	require.NoError(t, err)
	text := "edited"
	edit := messaging.Update{Text: &text, Idempotency: messaging.Idempotency{Key: "edit"}}
	_, err = msgs.Update(h.ctx, alice, first.ID, edit)
	require.NoError(t, err)
	again, err := msgs.Create(h.ctx, alice, in)
	require.NoError(t, err, "a member's replay")
	assert.Equal(t, first.ID, again.ID)

	require.NoError(t, msgs.RemoveMember(h.ctx, "team", alice.ID))
	_, err = msgs.Create(h.ctx, alice, in)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "the send's replay")
	_, err = msgs.Update(h.ctx, alice, first.ID, edit)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "the edit's replay")
	assert.Equal(t, "edited", h.get(first.ID).Text, "nothing changed")
}

func testServiceConcurrentRetries(t *testing.T, h *harness) {
	msgs, alice := h.keyedService(nil)
	const n = 10
	got := make([]messaging.Message, n)
	errs := parallel(n, func(i int) error {
		in := messaging.NewMessage{ConversationID: "general", Text: "at once", Idempotency: messaging.Idempotency{Key: "k"}}
		for {
			m, err := msgs.Create(h.ctx, alice, in)
			var e *messaging.Error
			if errors.As(err, &e) && e.Code == messaging.CodeKeyInUse {
				time.Sleep(time.Millisecond) // the first is under way: retry
				continue
			}
			got[i] = m
			return err
		}
	})
	for i, err := range errs {
		require.NoError(t, err, "call %d", i)
		assertMessage(t, got[0], got[i], "call %d answers as the others", i)
	}
	page, err := msgs.Messages(h.ctx, alice, "general", messaging.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, page.Data, 1, "one message")
}

// testServiceTwoInstances: two Services over one store are two instances
// of a server behind a load balancer; a retry that reaches the other one
// while the first is under way waits for it and replays its answer, or is
// told the key is in use: never is the message sent twice.
func testServiceTwoInstances(t *testing.T, h *harness) {
	one, alice := h.keyedService(nil)
	two := svctest.New(h.t, storage{h.s}, nil, &messaging.Options{Logger: slog.New(slog.DiscardHandler)})
	const n = 10
	got := make([]messaging.Message, n)
	errs := parallel(n, func(i int) error {
		svc := []*messaging.Service{one, two}[i%2]
		in := messaging.NewMessage{ConversationID: "general", Text: "two instances", Idempotency: messaging.Idempotency{Key: "k"}}
		for {
			m, err := svc.Create(h.ctx, alice, in)
			if errCode(err) == messaging.CodeKeyInUse {
				time.Sleep(time.Millisecond)
				continue
			}
			got[i] = m
			return err
		}
	})
	for i, err := range errs {
		require.NoError(t, err, "call %d", i)
		assertMessage(t, got[0], got[i], "call %d answers as the others", i)
	}
	page, err := one.Messages(h.ctx, alice, "general", messaging.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, page.Data, 1, "one message")
}

// pausedCreates holds the keyed creates of messages of the store it wraps
// until released: a call of an instance under way.
type pausedCreates struct {
	driver.Store
	entered chan struct{}
	release chan struct{}
}

func (s pausedCreates) CreateMessageKeyed(ctx context.Context, m messaging.Message, atts []string, rec driver.Recorder, done driver.IdempotencyRecord) error {
	s.entered <- struct{}{}
	<-s.release
	return s.Store.CreateMessageKeyed(ctx, m, atts, rec, done)
}

// testServiceTwoInstancesWhileRunning: a retry that reaches another
// instance while the first call is under way there, before its write, is
// not refused (only the instance running a call holds its key; a send
// claims nothing in the store first, the limit the messaging package doc
// states): one of the two writes and the other answers its message,
// replayed. What must hold is one message, answered to both.
func testServiceTwoInstancesWhileRunning(t *testing.T, h *harness) {
	paused := pausedCreates{Store: h.s, entered: make(chan struct{}, 1), release: make(chan struct{})}
	quiet := &messaging.Options{Logger: slog.New(slog.DiscardHandler)}
	one := svctest.New(h.t, storage{paused}, nil, quiet)
	two := svctest.New(h.t, storage{h.s}, nil, quiet)
	alice, err := two.SaveContact(h.ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	send := func(svc *messaging.Service, replayed *bool) (messaging.Message, error) {
		return svc.Create(h.ctx, alice, messaging.NewMessage{ConversationID: "general", Text: "two instances",
			Idempotency: messaging.Idempotency{Key: "k", Replayed: replayed}})
	}
	type result struct {
		m   messaging.Message
		err error
	}
	var firstReplayed, retryReplayed bool
	first := make(chan result, 1)
	go func() {
		m, err := send(one, &firstReplayed)
		first <- result{m, err}
	}()
	<-paused.entered
	retry, err := send(two, &retryReplayed)
	require.NoError(t, err, "the retry on the other instance is answered")
	close(paused.release)
	got := <-first
	require.NoError(t, got.err)
	assert.True(t, firstReplayed != retryReplayed, "one of the two calls wrote, the other replays it")
	assertMessage(t, retry, got.m, "both answer one message")
	page, err := two.Messages(h.ctx, alice, "general", messaging.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, page.Data, 1, "one message")
}

func testServiceKeyReused(t *testing.T, h *harness) {
	msgs, alice := h.keyedService(nil)
	idem := messaging.Idempotency{Key: "k"}
	_, err := msgs.Create(h.ctx, alice, messaging.NewMessage{ConversationID: "general", Text: "one", Idempotency: idem})
	require.NoError(t, err)
	for _, in := range []messaging.NewMessage{
		{ConversationID: "general", Text: "two", Idempotency: idem},
		{ConversationID: "other", Text: "one", Idempotency: idem},
	} {
		_, err = msgs.Create(h.ctx, alice, in)
		var e *messaging.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, messaging.ErrInvalid, e.Kind)
		assert.Equal(t, messaging.CodeKeyReused, e.Code)
	}
	_, err = msgs.Update(h.ctx, alice, ids.New(ids.Message), messaging.Update{Read: ptr(true), Idempotency: idem})
	assert.Equal(t, messaging.CodeKeyReused, errCode(err), "another operation with the key")
	page, err := msgs.Messages(h.ctx, alice, "", messaging.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, page.Data, 1, "nothing more was sent")

	// A failed write keeps nothing: its retry runs again.
	bad := messaging.Idempotency{Key: "bad"}
	_, err = msgs.Update(h.ctx, alice, page.Data[0].ID, messaging.Update{Attachments: []string{ids.New(ids.Attachment)}, Idempotency: bad})
	assert.ErrorIs(t, err, messaging.ErrInvalid)
	m, err := msgs.Update(h.ctx, alice, page.Data[0].ID, messaging.Update{Read: ptr(true), Idempotency: bad})
	require.NoError(t, err, "the key of a failed write is free again")
	assert.False(t, m.ReadAt.IsZero())

	// Keys are checked.
	_, err = msgs.Create(h.ctx, alice, messaging.NewMessage{ConversationID: "general", Text: "x", Idempotency: messaging.Idempotency{Key: strings.Repeat("k", 256)}})
	assert.ErrorIs(t, err, messaging.ErrInvalid)
}

func testServiceKeyedUpdate(t *testing.T, h *harness) {
	var now atomicTime
	now.set(time.Now())
	msgs, alice := h.keyedService(now.get)
	m, err := msgs.Create(h.ctx, alice, messaging.NewMessage{ConversationID: "general", Text: "v1"})
	require.NoError(t, err)
	text := "v2"
	u := messaging.Update{Text: &text, React: []string{"ok"}, Idempotency: messaging.Idempotency{Key: "edit"}}
	first, err := msgs.Update(h.ctx, alice, m.ID, u)
	require.NoError(t, err)
	text3 := "v3"
	_, err = msgs.Update(h.ctx, alice, m.ID, messaging.Update{Text: &text3})
	require.NoError(t, err)
	var replayed bool
	u.Idempotency.Replayed = &replayed
	again, err := msgs.Update(h.ctx, alice, m.ID, u)
	require.NoError(t, err)
	assert.True(t, replayed)
	assert.Equal(t, first.ID, again.ID)
	assert.Equal(t, "v3", again.Text, "the retry answers the message as it is now")
	assert.Equal(t, first.Reactions, again.Reactions)
	assert.Equal(t, "v3", h.get(m.ID).Text, "and changes nothing")
	revs, err := msgs.Revisions(h.ctx, alice, m.ID, messaging.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"v2", "v1"}, revisionTexts(revs.Data), "one revision per edit, none for the retry")

	// After the key expires, the same call edits again.
	now.set(now.get().Add(24*time.Hour + time.Second))
	_, err = msgs.Update(h.ctx, alice, m.ID, u)
	require.NoError(t, err)
	assert.Equal(t, "v2", h.get(m.ID).Text)
	n, err := msgs.PruneIdempotencyKeys(h.ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "the renewed key has not expired")
	now.set(now.get().Add(48 * time.Hour))
	n, err = msgs.PruneIdempotencyKeys(h.ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

// errCode returns the Code of a *messaging.Error.
func errCode(err error) string {
	var e *messaging.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func ptr[T any](v T) *T { return &v }

// atomicTime is a clock a test moves.
type atomicTime struct {
	mu sync.Mutex
	t  time.Time
}

func (a *atomicTime) get() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.t
}

func (a *atomicTime) set(t time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.t = t
}
