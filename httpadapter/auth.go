package httpadapter

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/parleychat/parley/messaging"
)

// Authenticator identifies the caller of a request from its bearer token.
// The host supplies it; StaticTokens is one for examples and tests.
type Authenticator interface {
	// Authenticate returns the contact the token belongs to. The contact
	// must be stored (messaging.Service.SaveContact) under its ID. For an
	// unknown token it must return an error for which
	// errors.Is(err, messaging.ErrUnauthenticated) is true; any other error
	// is answered by its kind (503 for messaging.ErrUnavailable, else 500).
	Authenticate(ctx context.Context, token string) (messaging.Contact, error)
}

// AuthenticatorFunc adapts a function to an Authenticator.
type AuthenticatorFunc func(ctx context.Context, token string) (messaging.Contact, error)

// Authenticate calls f.
func (f AuthenticatorFunc) Authenticate(ctx context.Context, token string) (messaging.Contact, error) {
	return f(ctx, token)
}

// StaticTokens returns an Authenticator over a fixed table from token to
// contact (each contact stored in the messaging repository under its ID).
// Tokens are compared in constant time: each is kept only as its SHA-256,
// so looking one up reveals nothing of a token through timing. An unknown
// or empty token fails with messaging.ErrUnauthenticated.
//
// The contacts are used as given, for the life of the table: a contact
// renamed later keeps its old Username here (the name it reacts under)
// until the table is made again. For examples, tests and small fixed
// deployments; a host with real users plugs in an Authenticator that reads
// its own user store.
func StaticTokens(tokens map[string]messaging.Contact) Authenticator {
	t := staticTokens{byHash: make(map[[sha256.Size]byte]tokenEntry, len(tokens))}
	for tok, c := range tokens {
		if tok == "" {
			continue
		}
		sum := sha256.Sum256([]byte(tok))
		t.byHash[sum] = tokenEntry{sum: sum, contact: c}
	}
	return t
}

type staticTokens struct {
	byHash map[[sha256.Size]byte]tokenEntry
}

type tokenEntry struct {
	sum     [sha256.Size]byte
	contact messaging.Contact
}

func (t staticTokens) Authenticate(_ context.Context, token string) (messaging.Contact, error) {
	// The table is keyed by digests, so the lookup's timing depends on the
	// digest of the offered token, never on how much of a real token it
	// shares; the final comparison runs in constant time.
	sum := sha256.Sum256([]byte(token))
	e, ok := t.byHash[sum]
	if !ok || subtle.ConstantTimeCompare(e.sum[:], sum[:]) != 1 {
		return messaging.Contact{}, messaging.ErrUnauthenticated
	}
	return e.contact, nil
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header. The scheme is case-insensitive (RFC 7235).
func bearerToken(r *http.Request) (string, error) {
	vals := r.Header["Authorization"]
	if len(vals) != 1 {
		return "", errUnauthenticated
	}
	v := vals[0]
	const scheme = "bearer "
	if len(v) <= len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return "", errUnauthenticated
	}
	tok := strings.TrimSpace(v[len(scheme):])
	if tok == "" {
		return "", errUnknownToken
	}
	return tok, nil
}

// authenticate identifies the caller and records its activity.
func (a *api) authenticate(r *http.Request) (messaging.Contact, error) {
	if a.auth == nil {
		return messaging.Contact{}, errUnauthenticated
	}
	tok, err := bearerToken(r)
	if err != nil {
		return messaging.Contact{}, err
	}
	ctx := r.Context()
	c, err := a.auth.Authenticate(ctx, tok)
	if err != nil {
		if errors.Is(err, messaging.ErrUnauthenticated) {
			return messaging.Contact{}, errUnknownToken
		}
		return messaging.Contact{}, err
	}
	if err := a.msgs.Touch(ctx, c.ID); err != nil {
		a.log.WarnContext(ctx, "httpadapter: cannot record the caller's activity", "contact", c.ID, "err", err)
	}
	return c, nil
}
