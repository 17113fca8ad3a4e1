package httpadapter_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/messaging"
)

// bearerRequest returns a request with the given Authorization headers.
func bearerRequest(auth ...string) *http.Request {
	r := httptest.NewRequest("GET", "/v1/messages", nil)
	for _, a := range auth {
		r.Header.Add("Authorization", a)
	}
	return r
}

func TestStaticTokens(t *testing.T) {
	alice := messaging.Contact{ID: "ctc_alice", Username: "alice"}
	bob := messaging.Contact{ID: "ctc_bob", Username: "bob"}
	auth := httpadapter.StaticTokens(map[string]messaging.Contact{"tok-a": alice, "tok-b": bob, "": bob})

	got, err := auth.Authenticate(bearerRequest("Bearer tok-a"))
	require.NoError(t, err)
	assert.Equal(t, alice, got)
	got, err = auth.Authenticate(bearerRequest("bearer tok-b"))
	require.NoError(t, err)
	assert.Equal(t, bob, got)

	for _, tok := range []string{"", "tok-", "TOK-A", "tok-ab", "tok-c"} {
		_, err := auth.Authenticate(bearerRequest("Bearer " + tok))
		assert.ErrorIs(t, err, messaging.ErrUnauthenticated, "token %q", tok)
	}
	_, err = auth.Authenticate(bearerRequest())
	assert.ErrorIs(t, err, messaging.ErrUnauthenticated, "no header")
}

func TestBearerToken(t *testing.T) {
	type key struct{}
	var seen []string
	auth := httpadapter.BearerToken(func(ctx context.Context, tok string) (messaging.Contact, error) {
		seen = append(seen, tok)
		if ctx.Value(key{}) != "request context" {
			return messaging.Contact{}, errors.New("lookup did not get the request's context")
		}
		return messaging.Contact{ID: "ctc_" + tok}, nil
	})
	for _, tc := range []struct {
		name    string
		headers []string
		want    string // the contact id; "" for ErrUnauthenticated without a lookup
	}{
		{"bearer", []string{"Bearer abc"}, "ctc_abc"},
		{"scheme is case-insensitive", []string{"BEARER abc"}, "ctc_abc"},
		{"space around the token", []string{"Bearer   abc  "}, "ctc_abc"},
		{"no header", nil, ""},
		{"other scheme", []string{"Basic YWxpY2U6c2VjcmV0"}, ""},
		{"token without scheme", []string{"abc"}, ""},
		{"scheme without token", []string{"Bearer   "}, ""},
		{"two headers", []string{"Bearer abc", "Bearer def"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen = nil
			r := bearerRequest(tc.headers...)
			r = r.WithContext(context.WithValue(r.Context(), key{}, "request context"))
			c, err := auth.Authenticate(r)
			if tc.want == "" {
				assert.ErrorIs(t, err, messaging.ErrUnauthenticated)
				assert.Empty(t, seen, "lookup called")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, c.ID)
			assert.Equal(t, []string{"abc"}, seen)
		})
	}
}

func TestAuthenticatorFunc(t *testing.T) {
	boom := errors.New("boom")
	var auth httpadapter.Authenticator = httpadapter.AuthenticatorFunc(func(r *http.Request) (messaging.Contact, error) {
		if r.Header.Get("X-Api-Key") == "x" {
			return messaging.Contact{ID: "ctc_x"}, nil
		}
		return messaging.Contact{}, boom
	})
	r := httptest.NewRequest("GET", "/v1/messages", nil)
	r.Header.Set("X-Api-Key", "x")
	c, err := auth.Authenticate(r)
	require.NoError(t, err)
	assert.Equal(t, "ctc_x", c.ID)
	_, err = auth.Authenticate(httptest.NewRequest("GET", "/v1/messages", nil))
	assert.ErrorIs(t, err, boom)
}
