package messaging_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

func TestMembersOnly(t *testing.T) {
	ctx := t.Context()
	store := memstore.New()
	msgs := svctest.New(t, store, memstore.NewBlobStore(), &messaging.Options{Policy: messaging.MembersOnly()})
	files := msgs.Files()
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	bob, err := msgs.SaveContact(ctx, messaging.Contact{Username: "bob"})
	require.NoError(t, err)

	_, err = msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "hi"})
	assert.ErrorIs(t, err, messaging.ErrNotFound, "not a member yet")
	require.NoError(t, msgs.AddMember(ctx, "team", alice.ID))
	require.NoError(t, msgs.AddMember(ctx, "team", bob.ID))
	require.NoError(t, msgs.AddMember(ctx, "secret", alice.ID))
	err = msgs.AddMember(ctx, "team", "ctc_nobody")
	assert.Equal(t, messaging.ErrNotFound, messaging.KindOf(err))
	assert.ErrorIs(t, msgs.AddMember(ctx, "bad id!", alice.ID), messaging.ErrInvalid)

	team, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "hi team"})
	require.NoError(t, err)
	secret, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "secret", Text: "psst"})
	require.NoError(t, err)
	_, err = files.Upload(ctx, alice, attachments.Upload{Filename: "plan.txt", ConversationID: "secret", Body: strings.NewReader("plan")})
	require.NoError(t, err)

	convs, err := msgs.Conversations(ctx, bob, messaging.ListOptions{})
	require.NoError(t, err)
	require.Len(t, convs.Data, 1)
	assert.Equal(t, "team", convs.Data[0].ID)
	assert.EqualValues(t, 1, convs.Data[0].UnreadCount)
	page, err := msgs.Messages(ctx, bob, "", messaging.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	assert.Equal(t, team.ID, page.Data[0].ID)
	_, err = msgs.Get(ctx, bob, secret.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	_, err = msgs.Conversation(ctx, bob, "secret")
	assert.ErrorIs(t, err, messaging.ErrNotFound)
	fp, err := files.Attachments(ctx, bob, "", messaging.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, fp.Data)

	c, err := msgs.MarkRead(ctx, bob, "team", team.ID)
	require.NoError(t, err)
	assert.Zero(t, c.UnreadCount)
	assert.Equal(t, team.ID, c.LastReadMessageID)
	_, err = msgs.MarkRead(ctx, bob, "team", secret.ID)
	var e *messaging.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "read_through", e.Param)

	members, err := msgs.Members(ctx, "team", messaging.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, members.Data, 2)
	of, err := msgs.Memberships(ctx, alice.ID, messaging.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"secret", "team"}, []string{of.Data[0].ConversationID, of.Data[1].ConversationID})

	require.NoError(t, msgs.RemoveMember(ctx, "team", bob.ID))
	_, err = msgs.Get(ctx, bob, team.ID)
	assert.ErrorIs(t, err, messaging.ErrNotFound, "a member removed sees nothing more")
	convs, err = msgs.Conversations(ctx, bob, messaging.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, convs.Data)

	var all []string
	for c, err := range msgs.AllConversations(ctx, alice, messaging.ListOptions{Limit: 1}) {
		require.NoError(t, err)
		all = append(all, c.ID)
	}
	assert.Equal(t, []string{"secret", "team"}, all)
}

// TestListLimits: every list takes the one page size limit of
// Options.MaxListLimit; beyond it, or below 0, a Go caller gets ErrInvalid
// naming "limit", not a page it did not ask for.
func TestListLimits(t *testing.T) {
	ctx := t.Context()
	store := memstore.New()
	msgs := svctest.New(t, store, memstore.NewBlobStore(), &messaging.Options{MaxListLimit: 20})
	files := msgs.Files()
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	for _, limit := range []int{21, -1} {
		var errs []error
		_, err := msgs.Messages(ctx, alice, "", messaging.ListOptions{Limit: limit})
		errs = append(errs, err)
		_, err = msgs.Conversations(ctx, alice, messaging.ListOptions{Limit: limit})
		errs = append(errs, err)
		_, err = msgs.Members(ctx, "team", messaging.ListOptions{Limit: limit})
		errs = append(errs, err)
		_, err = files.Attachments(ctx, alice, "", messaging.ListOptions{Limit: limit})
		errs = append(errs, err)
		for i, err := range errs {
			var e *messaging.Error
			require.ErrorAs(t, err, &e, "list %d, limit %d", i, limit)
			assert.Equal(t, messaging.ErrInvalid, e.Kind)
			assert.Equal(t, "limit", e.Param)
		}
	}
	_, err = files.Attachments(ctx, alice, "", messaging.ListOptions{Limit: 20})
	assert.NoError(t, err, "the limit itself is allowed, for files too")
}
