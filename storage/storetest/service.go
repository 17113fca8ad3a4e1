package storetest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// serviceTests drive the messaging Service over the backend: the wording
// people read is the Service's, so a failure reads the same on every
// backend.
var serviceTests = []test{
	{"same_words_on_every_backend", testSameWords},
	{"renamed_contact_keeps_its_reactions", testRenamedReactor},
	{"reaction_names_per_caller", testReactionNamesPerCaller},
	{"search_query_length_configurable", testSearchQueryLength},
	{"direct_upload_to_a_message", testDirectUploadToMessage},
}

// testDirectUploadToMessage: a direct upload completed to a message that
// filled up since its reservation is refused as the reservation would
// have been (param message_id), and keeps its reservation; completed once
// there is room, it is linked; a Complete of it again, after its
// attachment was deleted, answers 404 and brings nothing back.
func testDirectUploadToMessage(t *testing.T, h *harness) {
	if _, ok := h.s.(driver.ReservationStore); !ok {
		t.Skip("the store is not a driver.ReservationStore")
	}
	msgs := svctest.New(h.t, storage{h.s}, nil, &messaging.Options{MaxAttachments: 1})
	files := msgs.Files()
	alice, err := msgs.SaveContact(h.ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	m, err := msgs.Create(h.ctx, alice, messaging.NewMessage{ConversationID: "general", Text: "files"})
	require.NoError(t, err)
	r, err := files.Reserve(h.ctx, alice, attachments.NewUpload{Filename: "a.txt", FileSize: 5,
		SHA256: "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", MessageID: m.ID})
	require.NoError(t, err)
	_, err = files.PutContent(h.ctx, alice, r.ID, strings.NewReader("hello"))
	require.NoError(t, err)
	filler := h.attachment("general", alice, at(1))
	_, err = msgs.Update(h.ctx, alice, m.ID, messaging.Update{Attachments: []string{filler.ID}})
	require.NoError(t, err)

	_, err = files.Complete(h.ctx, alice, r.ID, driver.Idempotency{})
	var e *messaging.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, [2]any{messaging.ErrInvalid, "message_id"}, [2]any{e.Kind, e.Param}, "the message is full")
	require.NoError(t, files.Delete(h.ctx, alice, filler.ID))
	a, err := files.Complete(h.ctx, alice, r.ID, driver.Idempotency{})
	require.NoError(t, err, "the reservation is kept")
	assert.Equal(t, m.ID, a.MessageID)
	require.NoError(t, files.Delete(h.ctx, alice, a.ID))
	_, err = files.Complete(h.ctx, alice, r.ID, driver.Idempotency{})
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	assert.Empty(t, h.get(m.ID).Attachments, "nothing comes back")
}

// testSearchQueryLength: a search query is at most
// Options.MaxSearchQueryChars characters (256 by default): one at the
// limit is searched, one beyond it is ErrInvalid naming "query".
func testSearchQueryLength(t *testing.T, h *harness) {
	for _, tc := range []struct {
		name  string
		opts  *messaging.Options
		limit int
	}{
		{"default", nil, 256},
		{"configured", &messaging.Options{MaxSearchQueryChars: 12}, 12},
		{"raised", &messaging.Options{MaxSearchQueryChars: 300}, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs := svctest.New(h.t, storage{h.s}, nil, tc.opts)
			alice, err := msgs.SaveContact(h.ctx, messaging.Contact{Username: "alice"})
			require.NoError(t, err)
			m, err := msgs.Create(h.ctx, alice, messaging.NewMessage{ConversationID: "q-" + tc.name, Text: "harbour tonight"})
			require.NoError(t, err)
			// "harbour" and spaces up to the limit: found; one more space is too long.
			atLimit := "harbour" + strings.Repeat(" ", tc.limit-len("harbour"))
			page, err := msgs.Search(h.ctx, alice, atLimit, m.ConversationID, messaging.ListOptions{})
			require.NoError(t, err, "a query of %d characters", tc.limit)
			assert.Equal(t, []string{m.ID}, messageIDs(page.Data))
			_, err = msgs.Search(h.ctx, alice, atLimit+" ", m.ConversationID, messaging.ListOptions{})
			var e *messaging.Error
			require.ErrorAs(t, err, &e, "a query of %d characters", tc.limit+1)
			assert.Equal(t, messaging.ErrInvalid, messaging.KindOf(err))
			assert.Equal(t, "query", e.Param)
			assert.Equal(t, "query must be valid text of at most "+strconv.Itoa(tc.limit)+" characters", e.Message)
		})
	}
}

// testReactionNamesPerCaller: one caller may react with at most
// MaxReactionNamesPerCaller names on a message, so that it cannot take all
// of its MaxReactionNames; others still can react, and the caller can
// again once it took one back.
func testReactionNamesPerCaller(t *testing.T, h *harness) {
	msgs := svctest.New(h.t, storage{h.s}, nil, &messaging.Options{MaxReactionNames: 5, MaxReactionNamesPerCaller: 2})
	alice, err := msgs.SaveContact(h.ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	bob, err := msgs.SaveContact(h.ctx, messaging.Contact{Username: "bob"})
	require.NoError(t, err)
	m, err := msgs.Create(h.ctx, alice, messaging.NewMessage{ConversationID: "general", Text: "hi"})
	require.NoError(t, err)
	react := func(who messaging.Contact, names ...string) (messaging.Message, error) {
		return msgs.React(h.ctx, who, m.ID, names...)
	}
	_, err = react(bob, "a", "b")
	require.NoError(t, err)
	before, err := msgs.Get(h.ctx, bob, m.ID)
	require.NoError(t, err)
	_, err = react(bob, "c")
	var e *messaging.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, messaging.ErrInvalid, messaging.KindOf(err))
	assert.Equal(t, "reactions", e.Param)
	assert.Equal(t, "you may react with at most 2 distinct reactions on a message", e.Message)
	_, err = react(bob, "a", "c")
	require.ErrorIs(t, err, messaging.ErrInvalid, "a third name alongside one already there")
	after, err := msgs.Get(h.ctx, bob, m.ID)
	require.NoError(t, err)
	assertMessage(t, before, after, "a refused reaction changes nothing")

	_, err = react(bob, "a", "b")
	require.NoError(t, err, "names the caller has already are no new ones")
	got, err := react(alice, "b", "c")
	require.NoError(t, err, "another caller has a limit of its own")
	assert.Equal(t, []messaging.Reaction{r("a", "bob"), r("b", "bob", "alice"), r("c", "alice")}, got.Reactions)
	_, err = msgs.Unreact(h.ctx, bob, m.ID, "a")
	require.NoError(t, err)
	got, err = react(bob, "d")
	require.NoError(t, err, "after taking one back")
	assert.Equal(t, []messaging.Reaction{r("b", "bob", "alice"), r("c", "alice"), r("d", "bob")}, got.Reactions)
}

// testRenamedReactor renames a contact who reacted, and gives its old
// username to a new contact: the reactions stay with the renamed contact,
// under its new name, and the newcomer inherits none.
func testRenamedReactor(t *testing.T, h *harness) {
	msgs := svctest.New(h.t, storage{h.s}, nil, nil)
	alice, err := msgs.SaveContact(h.ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	bob, err := msgs.SaveContact(h.ctx, messaging.Contact{Username: "bob"})
	require.NoError(t, err)
	m, err := msgs.Create(h.ctx, alice, messaging.NewMessage{ConversationID: "general", Text: "hi"})
	require.NoError(t, err)
	_, err = msgs.Update(h.ctx, bob, m.ID, messaging.Update{React: []string{"👍", "eyes"}})
	require.NoError(t, err)

	bob.Username = "robert"
	bob, err = msgs.SaveContact(h.ctx, bob)
	require.NoError(t, err)
	newBob, err := msgs.SaveContact(h.ctx, messaging.Contact{Username: "bob"})
	require.NoError(t, err)
	require.NotEqual(t, bob.ID, newBob.ID, "the old name goes to a new contact")

	want := []messaging.Reaction{r("👍", "robert"), r("eyes", "robert")}
	got, err := msgs.Get(h.ctx, alice, m.ID)
	require.NoError(t, err)
	assert.Equal(t, want, got.Reactions, "the renamed contact keeps its reactions, shown by its new name")
	page, err := msgs.Messages(h.ctx, alice, "general", messaging.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	assert.Equal(t, want, page.Data[0].Reactions, "in a list too")
	rs, err := msgs.Reactors(h.ctx, alice, m.ID, "👍", messaging.ListOptions{})
	require.NoError(t, err)
	require.Len(t, rs.Data, 1)
	assert.Equal(t, bob.ID, rs.Data[0].ContactID)
	assert.Equal(t, "robert", rs.Data[0].Username)

	// The newcomer has no reaction to take back, and reacts on its own.
	got, err = msgs.Unreact(h.ctx, newBob, m.ID, "👍")
	require.NoError(t, err)
	assert.Equal(t, want, got.Reactions, "the newcomer cannot remove the reaction of the one who had its name")
	got, err = msgs.React(h.ctx, newBob, m.ID, "👍")
	require.NoError(t, err)
	assert.Equal(t, []messaging.Reaction{r("👍", "robert", "bob"), r("eyes", "robert")}, got.Reactions, "the newcomer is a reactor of its own")
	got, err = msgs.Unreact(h.ctx, bob, m.ID, "eyes")
	require.NoError(t, err)
	assert.Equal(t, []messaging.Reaction{r("👍", "robert", "bob")}, got.Reactions, "the renamed contact removes its own reaction")
}

func testSameWords(t *testing.T, h *harness) {
	msgs := svctest.New(h.t, storage{h.s}, nil, &messaging.Options{MaxReactionNames: 1, MaxAttachments: 1})
	alice, err := msgs.SaveContact(h.ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	m, err := msgs.Create(h.ctx, alice, messaging.NewMessage{ConversationID: "general", Text: "hi"})
	require.NoError(t, err)

	want := func(err error, kind messaging.ErrorKind, param, message string) {
		t.Helper()
		var e *messaging.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, kind, messaging.KindOf(err))
		assert.Equal(t, param, e.Param)
		assert.Equal(t, message, e.Message)
	}

	_, err = msgs.Update(h.ctx, alice, m.ID, messaging.Update{React: []string{"a"}})
	require.NoError(t, err)
	_, err = msgs.Update(h.ctx, alice, m.ID, messaging.Update{React: []string{"b"}})
	want(err, messaging.ErrInvalid, "reactions", "a message may have at most 1 distinct reactions")

	atts := []messaging.Attachment{h.attachment("general", alice, at(1)), h.attachment("general", alice, at(2))}
	_, err = msgs.Update(h.ctx, alice, m.ID, messaging.Update{Attachments: []string{atts[0].ID}})
	require.NoError(t, err)
	_, err = msgs.Update(h.ctx, alice, m.ID, messaging.Update{Attachments: []string{atts[1].ID}})
	want(err, messaging.ErrInvalid, "attachments", "a message may have at most 1 attachments")

	missing := ids.NewAt(ids.Message, base)
	_, err = msgs.Get(h.ctx, alice, missing)
	want(err, messaging.ErrNotFound, "", "no such message: "+missing)

	_, err = msgs.SaveContact(h.ctx, messaging.Contact{ID: "ctc_other", Username: "alice"})
	want(err, messaging.ErrConflict, "username", "username is taken by another contact")
}
