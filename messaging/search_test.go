package messaging_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// Search finds the messages that hold every word of a query, the last one
// as a prefix, with case and accents folded, newest first.
func ExampleService_Search() {
	ctx := context.Background()
	msgs := newServices()
	alice, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	for _, text := range []string{"Meeting at the Café on Friday", "No meeting this week", "CAFÉ closed"} {
		_, _ = msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: text})
	}
	page, err := msgs.Search(ctx, alice, "cafe meet", "", messaging.ListOptions{})
	if err != nil {
		panic(err)
	}
	for _, m := range page.Data {
		fmt.Println(m.Text)
	}
	for m, err := range msgs.AllSearch(ctx, alice, "caf", "team", messaging.ListOptions{Limit: 1}) {
		if err != nil {
			panic(err)
		}
		fmt.Println("caf:", m.Text)
	}
	// Output:
	// Meeting at the Café on Friday
	// caf: CAFÉ closed
	// caf: Meeting at the Café on Friday
}

func TestSearchParams(t *testing.T) {
	ctx := context.Background()
	msgs := svctest.New(t, memstore.New(), memstore.NewBlobStore(), nil)
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	m1, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "a", Text: "plan one"})
	require.NoError(t, err)
	other, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "a", Text: "nothing here"})
	require.NoError(t, err)
	m2, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "b", Text: "plan two"})
	require.NoError(t, err)

	for _, tt := range []struct {
		name, query, conv string
		o                 messaging.ListOptions
		param             string
	}{
		{"empty", "", "", messaging.ListOptions{}, "query"},
		{"no_word", "?! …", "", messaging.ListOptions{}, "query"},
		{"too_long", strings.Repeat("é", 257), "", messaging.ListOptions{}, "query"},
		{"bad_utf8", "plan\xff", "", messaging.ListOptions{}, "query"},
		{"limit", "plan", "", messaging.ListOptions{Limit: 101}, "limit"},
		{"conversation", "plan", "bad id!", messaging.ListOptions{}, "conversation_id"},
		{"both_cursors", "plan", "", messaging.ListOptions{StartingAfter: m1.ID, EndingBefore: m2.ID}, "ending_before"},
		{"cursor_unknown", "plan", "", messaging.ListOptions{StartingAfter: "msg_nope"}, "starting_after"},
		{"cursor_not_a_result", "plan", "", messaging.ListOptions{StartingAfter: other.ID}, "starting_after"},
		{"cursor_of_another_conversation", "plan", "a", messaging.ListOptions{EndingBefore: m2.ID}, "ending_before"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := msgs.Search(ctx, alice, tt.query, tt.conv, tt.o)
			var e *messaging.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, messaging.ErrInvalid, messaging.KindOf(err))
			assert.Equal(t, tt.param, e.Param)
		})
	}
	ok := strings.Repeat("é", 256)
	page, err := msgs.Search(ctx, alice, ok, "", messaging.ListOptions{})
	require.NoError(t, err, "256 characters")
	assert.Empty(t, page.Data)
	page, err = msgs.Search(ctx, alice, "PLAN", "", messaging.ListOptions{Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{m2.ID}, idsOf(page.Data))
	assert.True(t, page.HasMore)
	page, err = msgs.Search(ctx, alice, "PLAN", "", messaging.ListOptions{StartingAfter: m2.ID})
	require.NoError(t, err)
	assert.Equal(t, []string{m1.ID}, idsOf(page.Data))
	page, err = msgs.Search(ctx, alice, "plan", "a", messaging.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{m1.ID}, idsOf(page.Data))
}

// A policy's scope is applied to searches, and a hidden message is no
// cursor.
func TestSearchPolicy(t *testing.T) {
	ctx := context.Background()
	policy := onlyConversations{}
	msgs := svctest.New(t, memstore.New(), memstore.NewBlobStore(), &messaging.Options{Policy: policy})
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	bob, err := msgs.SaveContact(ctx, messaging.Contact{Username: "bob"})
	require.NoError(t, err)
	policy[alice.ID] = []string{"secret", "team"}
	policy[bob.ID] = []string{"team"}
	secret, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "secret", Text: "launch date"})
	require.NoError(t, err)
	team, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "team", Text: "launch party"})
	require.NoError(t, err)

	page, err := msgs.Search(ctx, alice, "launch", "", messaging.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{team.ID, secret.ID}, idsOf(page.Data))
	page, err = msgs.Search(ctx, bob, "launch", "", messaging.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{team.ID}, idsOf(page.Data))
	page, err = msgs.Search(ctx, bob, "launch", "secret", messaging.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, page.Data, "a conversation the caller may not see has no results")
	_, err = msgs.Search(ctx, bob, "launch", "", messaging.ListOptions{EndingBefore: secret.ID})
	assert.ErrorIs(t, err, messaging.ErrInvalid, "a hidden message is no cursor")
	page, err = msgs.Search(ctx, policy.nobody(), "launch", "", messaging.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, page.Data)
}

func (onlyConversations) nobody() messaging.Contact { return messaging.Contact{ID: "nobody"} }
