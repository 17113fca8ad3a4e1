package httpadapter_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/messaging"
)

func TestStaticTokens(t *testing.T) {
	ctx := context.Background()
	alice := messaging.Contact{ID: "ctc_alice", Username: "alice"}
	bob := messaging.Contact{ID: "ctc_bob", Username: "bob"}
	auth := httpadapter.StaticTokens(map[string]messaging.Contact{"tok-a": alice, "tok-b": bob, "": bob})

	got, err := auth.Authenticate(ctx, "tok-a")
	require.NoError(t, err)
	assert.Equal(t, alice, got)
	got, err = auth.Authenticate(ctx, "tok-b")
	require.NoError(t, err)
	assert.Equal(t, bob, got)

	for _, tok := range []string{"", "tok-", "tok-a ", "TOK-A", "tok-ab", "tok-c"} {
		_, err := auth.Authenticate(ctx, tok)
		assert.ErrorIs(t, err, messaging.ErrUnauthenticated, "token %q", tok)
	}
}

func TestAuthenticatorFunc(t *testing.T) {
	boom := errors.New("boom")
	var auth httpadapter.Authenticator = httpadapter.AuthenticatorFunc(func(_ context.Context, tok string) (messaging.Contact, error) {
		if tok == "x" {
			return messaging.Contact{ID: "ctc_x"}, nil
		}
		return messaging.Contact{}, boom
	})
	c, err := auth.Authenticate(context.Background(), "x")
	require.NoError(t, err)
	assert.Equal(t, "ctc_x", c.ID)
	_, err = auth.Authenticate(context.Background(), "y")
	assert.ErrorIs(t, err, boom)
}
