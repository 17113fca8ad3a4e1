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

// Authenticator identifies the caller of a request: from its bearer token,
// a session cookie, an API key in a header of the host's choosing, a client
// certificate, or anything else the request carries. The host supplies it
// (Options.Authenticator). BearerToken makes one from a token lookup, and
// StaticTokens is one over a fixed token table. A host with browser
// sessions writes one over its session store:
//
//	auth := httpadapter.AuthenticatorFunc(func(r *http.Request) (messaging.Contact, error) {
//		user, ok := sessions.User(r) // the host's own, by cookie
//		if !ok {
//			return messaging.Contact{}, messaging.ErrUnauthenticated
//		}
//		return user.Contact, nil
//	})
//
// The handler refuses unsafe requests from other origins before it calls
// Authenticate (see Options.CrossOriginProtection), so an Authenticator
// that reads a cookie needs no protection against cross-site request
// forgery of its own.
type Authenticator interface {
	// Authenticate returns the contact who sent r. The contact must be
	// stored (messaging.Service.SaveContact) under its ID. Authenticate
	// may read r's headers, URL, TLS state and context, and must not read
	// r.Body, which belongs to the handler. It is called for every
	// request, concurrently.
	//
	// For a request without credentials, or with credentials that are not
	// valid, it must return an error for which
	// errors.Is(err, messaging.ErrUnauthenticated) is true; the request is
	// answered 401 with WWW-Authenticate: Bearer, and with the error's
	// message if it is a *messaging.Error that has one. Any other error is
	// answered by its kind (503 for messaging.ErrUnavailable, else 500).
	Authenticate(r *http.Request) (messaging.Contact, error)
}

// AuthenticatorFunc adapts a function to an Authenticator.
type AuthenticatorFunc func(r *http.Request) (messaging.Contact, error)

// Authenticate calls f(r).
func (f AuthenticatorFunc) Authenticate(r *http.Request) (messaging.Contact, error) {
	return f(r)
}

// BearerToken returns an Authenticator of requests that carry
// "Authorization: Bearer <token>" (the scheme is case-insensitive). It calls
// lookup with the request's context and the token; lookup returns the
// token's contact, or an error matching messaging.ErrUnauthenticated for an
// unknown token. A request without such a header fails with
// messaging.ErrUnauthenticated without calling lookup.
//
//	auth := httpadapter.BearerToken(func(ctx context.Context, token string) (messaging.Contact, error) {
//		return users.ContactOfToken(ctx, token) // the host's own store
//	})
//
// A host that accepts a bearer token besides a session cookie tries the
// token when the request carries one, and the cookie otherwise (as
// examples/embed does).
func BearerToken(lookup func(ctx context.Context, token string) (messaging.Contact, error)) Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (messaging.Contact, error) {
		tok, ok := bearerToken(r)
		if !ok || tok == "" {
			return messaging.Contact{}, messaging.ErrUnauthenticated
		}
		return lookup(r.Context(), tok)
	})
}

// StaticTokens returns a bearer-token Authenticator (see BearerToken) over a
// fixed table from token to contact (each contact stored in the messaging
// repository under its ID). Tokens are compared in constant time: each is
// kept only as its SHA-256, so looking one up reveals nothing of a token
// through timing. An unknown or empty token fails with
// messaging.ErrUnauthenticated.
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
	return BearerToken(t.lookup)
}

type staticTokens struct {
	byHash map[[sha256.Size]byte]tokenEntry
}

type tokenEntry struct {
	sum     [sha256.Size]byte
	contact messaging.Contact
}

func (t staticTokens) lookup(_ context.Context, token string) (messaging.Contact, error) {
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

// bearerToken returns the token of the request's one
// "Authorization: Bearer <token>" header, and whether it has such a header
// (the token may then still be empty). The scheme is case-insensitive
// (RFC 7235).
func bearerToken(r *http.Request) (string, bool) {
	vals := r.Header["Authorization"]
	if len(vals) != 1 {
		return "", false
	}
	v := vals[0]
	const scheme = "bearer "
	if len(v) < len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return "", false
	}
	return strings.TrimSpace(v[len(scheme):]), true
}

// forgeable reports whether a browser could have sent r on a page of
// another site with the user's credentials attached. A browser attaches
// cookies (and HTTP Basic credentials and client certificates) to requests
// by itself, but never a bearer token: a request that carries a bearer
// token and no cookie was sent by a client that holds the token.
func forgeable(r *http.Request) bool {
	tok, ok := bearerToken(r)
	return !ok || tok == "" || r.Header.Get("Cookie") != ""
}

// checkOrigin refuses an unsafe cross-origin browser request that could
// have been forged (see Options.CrossOriginProtection).
func (a *api) checkOrigin(r *http.Request) error {
	if !forgeable(r) {
		return nil
	}
	if err := a.csrf.Check(r); err != nil {
		return newHTTPError(http.StatusForbidden, typePermission, codeCrossOrigin,
			"cross-origin request refused: "+r.Method+" from another site needs a bearer token")
	}
	return nil
}

// refusedToken is the failure of a request whose bearer token the
// Authenticator refused: its 401 says so (WWW-Authenticate: Bearer
// error="invalid_token", RFC 6750).
type refusedToken struct{ error }

func (e refusedToken) Unwrap() error { return e.error }

// authenticate identifies the caller and records its activity.
func (a *api) authenticate(r *http.Request) (messaging.Contact, error) {
	if a.auth == nil {
		return messaging.Contact{}, errUnauthenticated
	}
	ctx := r.Context()
	c, err := a.auth.Authenticate(r)
	if err != nil {
		if !errors.Is(err, messaging.ErrUnauthenticated) {
			return messaging.Contact{}, err
		}
		tok, hasToken := bearerToken(r)
		hasToken = hasToken && tok != ""
		if me := (*messaging.Error)(nil); !errors.As(err, &me) || me.Kind != messaging.ErrUnauthenticated || me.Message == "" {
			// No words of the host's for people: the adapter's.
			err = errUnauthenticated
			if hasToken {
				err = errUnknownToken
			}
		}
		if hasToken {
			err = refusedToken{err}
		}
		return messaging.Contact{}, err
	}
	if err := a.msgs.Touch(ctx, c.ID); err != nil {
		a.log.WarnContext(ctx, "httpadapter: cannot record the caller's activity", "contact", c.ID, "err", err)
	}
	return c, nil
}
