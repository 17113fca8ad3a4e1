package messaging_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

// onlyConversations lets each contact see the listed conversations.
type onlyConversations map[string][]string

func (p onlyConversations) CanView(_ context.Context, who, conv string) (bool, error) {
	for _, c := range p[who] {
		if c == conv {
			return true, nil
		}
	}
	return false, nil
}

func (p onlyConversations) Scope(_ context.Context, who string) (messaging.Scope, error) {
	return messaging.Scope{ConversationIDs: p[who]}, nil
}

func TestPolicyHidesConversations(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	policy := onlyConversations{}
	msgs := svctest.New(t, store, memstore.NewBlobStore(), &messaging.Options{Policy: policy})
	files := msgs.Files()
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	bob, err := msgs.SaveContact(ctx, messaging.Contact{Username: "bob"})
	require.NoError(t, err)
	policy[alice.ID] = []string{"secret", "team"}
	policy[bob.ID] = []string{"team"}

	secret, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "secret", Text: "psst"})
	require.NoError(t, err)
	team, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "hello"})
	require.NoError(t, err)

	_, err = msgs.Get(ctx, bob, secret.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "a hidden message is not found")
	_, err = msgs.Create(ctx, bob, messaging.NewMessage{ConversationID: "secret", Text: "let me in"})
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	_, err = msgs.Update(ctx, bob, secret.ID, messaging.Update{Read: new(true)})
	assert.ErrorIs(t, err, messaging.ErrNotFound)

	page, err := msgs.Messages(ctx, bob, "", messaging.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	assert.Equal(t, team.ID, page.Data[0].ID)
	page, err = msgs.Messages(ctx, bob, "secret", messaging.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, page.Data)
	_, err = msgs.Messages(ctx, bob, "", messaging.ListOptions{StartingAfter: secret.ID})
	assert.ErrorIs(t, err, messaging.ErrInvalid, "a hidden message is no cursor")

	page, err = msgs.Messages(ctx, alice, "", messaging.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, page.Data, 2)

	// Files follow the same Policy, set once on the messaging Service.
	f, err := files.Upload(ctx, alice, attachments.Upload{Filename: "plan.txt", ConversationID: "secret", Body: strings.NewReader("plan")})
	require.NoError(t, err)
	_, err = files.Get(ctx, bob, f.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "a file of a hidden conversation is not found")
	_, err = files.Upload(ctx, bob, attachments.Upload{Filename: "x.txt", ConversationID: "secret", Body: strings.NewReader("x")})
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	fp, err := files.Attachments(ctx, bob, "", messaging.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, fp.Data)
	_, err = files.SignedURL(ctx, bob, f, time.Minute)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "no signed URL of a file the caller may not see")
}

func TestTouchWritesAtMostOncePerInterval(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	msgs := svctest.New(t, store, nil, &messaging.Options{Now: func() time.Time { return now }})
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)

	first := now
	require.NoError(t, msgs.Touch(ctx, alice.ID))
	now = now.Add(30 * time.Second)
	require.NoError(t, msgs.Touch(ctx, alice.ID))
	c, err := msgs.Contact(ctx, alice.ID)
	require.NoError(t, err)
	assert.Equal(t, first, c.LastActiveAt, "a second touch within a minute writes nothing")

	now = now.Add(31 * time.Second)
	require.NoError(t, msgs.Touch(ctx, alice.ID))
	c, err = msgs.Contact(ctx, alice.ID)
	require.NoError(t, err)
	assert.Equal(t, now, c.LastActiveAt)

	assert.ErrorIs(t, msgs.Touch(ctx, "ctc_missing"), messaging.ErrNotFound)
}

func TestSaveContactFindsByUsername(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	msgs := svctest.New(t, store, nil, nil)
	a, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice", PhoneNumber: "+1"})
	require.NoError(t, err)
	again, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	assert.Equal(t, a.ID, again.ID)
	assert.Equal(t, "+1", again.PhoneNumber)

	_, err = msgs.SaveContact(ctx, messaging.Contact{Username: "has space"})
	assert.ErrorIs(t, err, messaging.ErrInvalid)
	b, err := msgs.SaveContact(ctx, messaging.Contact{Username: "bob"})
	require.NoError(t, err)
	b.Username = "alice"
	_, err = msgs.SaveContact(ctx, b)
	assert.ErrorIs(t, err, messaging.ErrConflict)
}

func TestCreateShowsTheContactAsStored(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	msgs := svctest.New(t, store, signingBlobs{memstore.NewBlobStore()}, &messaging.Options{Now: func() time.Time { return now }})
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	stale := alice // what an authenticator loaded at start

	m, err := msgs.Create(ctx, stale, messaging.NewMessage{ConversationID: "c", Text: "one"})
	require.NoError(t, err)
	assert.Equal(t, "", m.Contact.PhoneNumber)

	alice.PhoneNumber = "+15550100"
	_, err = msgs.SaveContact(ctx, alice)
	require.NoError(t, err)
	m, err = msgs.Create(ctx, stale, messaging.NewMessage{ConversationID: "c", Text: "two"})
	require.NoError(t, err)
	assert.Equal(t, "+15550100", m.Contact.PhoneNumber, "a saved change shows at once")

	now = now.Add(time.Minute)
	require.NoError(t, msgs.Touch(ctx, alice.ID))
	m, err = msgs.Create(ctx, stale, messaging.NewMessage{ConversationID: "c", Text: "three"})
	require.NoError(t, err)
	assert.Equal(t, now, m.Contact.LastActiveAt, "a touch shows at once")

	// A change made behind the Service's back (another process) shows once
	// the cached copy is older than the touch interval.
	alice.PhoneNumber = "+15550199"
	require.NoError(t, store.Driver().PutContact(ctx, alice))
	now = now.Add(time.Minute)
	m, err = msgs.Create(ctx, stale, messaging.NewMessage{ConversationID: "c", Text: "four"})
	require.NoError(t, err)
	assert.Equal(t, "+15550199", m.Contact.PhoneNumber)
}

// heldContactRead holds its first GetContact after the read, once read
// and release are set: read is closed then, and the call returns when
// release is.
type heldContactRead struct {
	driver.Store
	once          sync.Once
	read, release chan struct{}
}

func (h *heldContactRead) GetContact(ctx context.Context, id string) (driver.Contact, error) {
	c, err := h.Store.GetContact(ctx, id)
	if h.read != nil {
		h.once.Do(func() { close(h.read); <-h.release })
	}
	return c, err
}

// TestCreateKeepsNoContactReadBeforeATouch: a contact read for a message's
// answer while a touch of hers is written is not kept for the next
// messages: they show the touch.
func TestCreateKeepsNoContactReadBeforeATouch(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	repo := &heldContactRead{Store: memstore.New().Driver()}
	msgs := svctest.New(t, storetest.Storage(repo), nil, &messaging.Options{Now: func() time.Time { return now }})
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	require.True(t, alice.LastActiveAt.IsZero())

	repo.read, repo.release = make(chan struct{}), make(chan struct{})
	sent := make(chan error, 1)
	go func() {
		_, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "c", Text: "one"})
		sent <- err
	}()
	<-repo.read // the message's answer has read alice, never active
	require.NoError(t, msgs.Touch(ctx, alice.ID))
	close(repo.release)
	require.NoError(t, <-sent)

	m, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "c", Text: "two"})
	require.NoError(t, err)
	assert.Equal(t, now, m.Contact.LastActiveAt, "the touch shows")
}

func TestUpdateWithNothingIsInvalid(t *testing.T) {
	ctx := context.Background()
	msgs := newServices()
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	m, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "c", Text: "hi"})
	require.NoError(t, err)
	for _, u := range []messaging.Update{{}, {React: []string{}}, {Attachments: []string{}}} {
		_, err := msgs.Update(ctx, alice, m.ID, u)
		assert.ErrorIs(t, err, messaging.ErrInvalid, "%+v", u)
	}
	got, err := msgs.Get(ctx, alice, m.ID)
	require.NoError(t, err)
	assert.True(t, got.UpdatedAt.IsZero(), "nothing changed")
}

func TestSaveContactKeepsTimesNotGiven(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	msgs := svctest.New(t, store, nil, &messaging.Options{Now: func() time.Time { return now }})
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	created := now
	now = now.Add(time.Hour)
	require.NoError(t, msgs.Touch(ctx, alice.ID))

	renamed, err := msgs.SaveContact(ctx, messaging.Contact{ID: alice.ID, Username: "alicia"})
	require.NoError(t, err)
	assert.Equal(t, created, renamed.CreatedAt)
	assert.Equal(t, now, renamed.LastActiveAt)
	stored, err := msgs.Contact(ctx, alice.ID)
	require.NoError(t, err)
	assert.Equal(t, "alicia", stored.Username)
	assert.Equal(t, created, stored.CreatedAt)
	assert.Equal(t, now, stored.LastActiveAt)
}

func TestSignedURLOnlyOfTheServicesOwnAttachments(t *testing.T) {
	ctx := t.Context()
	store := memstore.New()
	msgs := svctest.New(t, store, signingBlobs{memstore.NewBlobStore()}, nil)
	files := msgs.Files()
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	a, err := files.Upload(ctx, alice, attachments.Upload{Filename: "a.txt", ConversationID: "c", Body: strings.NewReader("a")})
	require.NoError(t, err)
	u, err := files.SignedURL(ctx, alice, a, time.Minute)
	require.NoError(t, err)
	assert.Contains(t, u, a.Key)

	forged := a
	forged.Key = "attachments/att_someone_elses"
	_, err = files.SignedURL(ctx, alice, forged, time.Minute)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "a value whose key the Service did not make is signed by no one")
}

// signingBlobs signs URLs naming the key, for tests.
type signingBlobs struct{ *memstore.BlobStore }

func (signingBlobs) SignedURL(_ context.Context, key, _, _ string, _ time.Duration) (string, error) {
	return "https://bucket.example/" + key + "?sig=x", nil
}

// lookupCounter counts the LookupMessage calls of a repository.
type lookupCounter struct {
	driver.Store
	n int
}

func (c *lookupCounter) LookupMessage(ctx context.Context, id string) (driver.MessageRef, error) {
	c.n++
	return c.Store.LookupMessage(ctx, id)
}

// TestWritesLookUpAMessageOnce: the conversation and sender of a message
// never change, so its writes read them once; whether the message is still
// there, and who may see it, is decided at every write.
func TestWritesLookUpAMessageOnce(t *testing.T) {
	ctx := t.Context()
	store := memstore.New()
	repo := &lookupCounter{Store: store.Driver()}
	policy := onlyConversations{}
	msgs := svctest.New(t, storetest.Storage(repo), memstore.NewBlobStore(), &messaging.Options{Policy: policy})
	other := svctest.New(t, store, nil, &messaging.Options{Policy: policy}) // another process
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	bob, err := msgs.SaveContact(ctx, messaging.Contact{Username: "bob"})
	require.NoError(t, err)
	policy[alice.ID] = []string{"team"}
	policy[bob.ID] = []string{"team"}
	m, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "hi"})
	require.NoError(t, err)

	react := func(who messaging.Contact) error {
		_, err := msgs.Update(ctx, who, m.ID, messaging.Update{React: []string{"heart"}})
		return err
	}
	require.NoError(t, react(bob))
	_, err = msgs.Unreact(ctx, bob, m.ID, "heart")
	require.NoError(t, err)
	require.NoError(t, react(alice))
	assert.Equal(t, 1, repo.n, "read once for all the writes")
	text := "edited"
	_, err = msgs.Update(ctx, bob, m.ID, messaging.Update{Text: &text})
	assert.ErrorIs(t, err, messaging.ErrPermission, "the remembered sender is the message's")
	assert.Equal(t, 2, repo.n, "a refusal makes sure the message is still there")

	policy[bob.ID] = nil
	assert.ErrorIs(t, react(bob), messaging.ErrNotFound, "who may see it is asked each time")

	require.NoError(t, other.Delete(ctx, alice, m.ID))
	assert.ErrorIs(t, react(alice), messaging.ErrNotFound, "deleted by another process")
	_, err = msgs.Unreact(ctx, alice, m.ID, "heart")
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	assert.ErrorIs(t, msgs.Delete(ctx, alice, m.ID), messaging.ErrNotFound)
	got, err := store.Driver().GetMessage(ctx, m.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "nothing made again: %+v", got)
}

// TestRememberedRefOfADeletedMessage: a message deleted by another process
// is ErrNotFound to every write, as it is to a Service that never wrote to
// it, also where a check made before the write refuses it (a non-sender's
// edit or delete, an attachment that cannot be linked). (From a review of
// the remembered refs, as its test.)
func TestRememberedRefOfADeletedMessage(t *testing.T) {
	ctx := t.Context()
	store := memstore.New()
	policy := onlyConversations{}
	msgs := svctest.New(t, store, nil, &messaging.Options{Policy: policy})
	other := svctest.New(t, store, nil, &messaging.Options{Policy: policy}) // another process
	files := msgs.Files()
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	bob, err := msgs.SaveContact(ctx, messaging.Contact{Username: "bob"})
	require.NoError(t, err)
	policy[alice.ID] = []string{"team", "elsewhere"}
	policy[bob.ID] = []string{"team"}
	m, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "hi"})
	require.NoError(t, err)
	f, err := files.Upload(ctx, alice, attachments.Upload{Filename: "f.txt", ConversationID: "elsewhere", Body: strings.NewReader("x")})
	require.NoError(t, err)
	// Both write to it once: the ref is remembered.
	_, err = msgs.Update(ctx, bob, m.ID, messaging.Update{React: []string{"heart"}})
	require.NoError(t, err)

	require.NoError(t, other.Delete(ctx, alice, m.ID))

	text := "edited"
	_, err = msgs.Update(ctx, bob, m.ID, messaging.Update{Text: &text})
	assert.ErrorIs(t, err, messaging.ErrNotFound, "bob's edit of a deleted message")
	_, err = msgs.Update(ctx, alice, m.ID, messaging.Update{Attachments: []string{f.ID}})
	assert.ErrorIs(t, err, messaging.ErrNotFound, "alice's link to a deleted message: %v", err)
	assert.ErrorIs(t, msgs.Delete(ctx, bob, m.ID), messaging.ErrNotFound, "bob's delete of a deleted message") // (forgets the ref)
}

// TestReadAgainTellsNothing: marking read a message read before changes
// nothing, so it makes no event (a client that marks what it shows read
// would otherwise store a message.updated of the whole message each time).
func TestReadAgainTellsNothing(t *testing.T) {
	ctx := context.Background()
	msgs := svctest.New(t, memstore.New(), memstore.NewBlobStore(), nil)
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	m, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "c", Text: "hi"})
	require.NoError(t, err)
	count := func() int {
		page, err := msgs.Events().Events(ctx, alice, "c", messaging.ListOptions{Limit: 100})
		require.NoError(t, err)
		return len(page.Data)
	}
	read, unread := true, false
	for _, step := range []struct {
		read   *bool
		events int
	}{{&read, 1}, {&read, 0}, {&unread, 1}, {&read, 1}, {&read, 0}} {
		before := count()
		_, err := msgs.Update(ctx, alice, m.ID, messaging.Update{Read: step.read})
		require.NoError(t, err)
		assert.Equal(t, step.events, count()-before, "read=%v", *step.read)
	}
}
