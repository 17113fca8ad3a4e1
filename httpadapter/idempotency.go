package httpadapter

import (
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/parleychat/parley/messaging"
)

// Headers of retries (see "Retries" in the package documentation).
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerReplayed       = "Idempotent-Replayed"
)

// keyedInput reads the Idempotency-Key of a write (idempotency), then
// its input.
func (a *api) keyedInput(w http.ResponseWriter, r *http.Request, replayed *bool) (messaging.Idempotency, input, error) {
	idem, err := idempotency(r, replayed)
	if err != nil {
		return idem, nil, err
	}
	in, err := a.readInput(w, r)
	return idem, in, err
}

// idempotency reads the Idempotency-Key of a write into the services'
// Idempotency, whose Replayed the call sets: a zero Idempotency when the
// request has none; a 400 when the key is empty, longer than 255
// characters, not UTF-8, holds control characters or comes twice.
func idempotency(r *http.Request, replayed *bool) (messaging.Idempotency, error) {
	vs := r.Header.Values(headerIdempotencyKey)
	switch {
	case len(vs) == 0:
		return messaging.Idempotency{}, nil
	case len(vs) > 1:
		return messaging.Idempotency{}, badKey("Idempotency-Key was given more than once")
	}
	key := vs[0]
	if key == "" || !utf8.ValidString(key) || utf8.RuneCountInString(key) > 255 || strings.ContainsFunc(key, unicode.IsControl) {
		return messaging.Idempotency{}, badKey("Idempotency-Key must be 1 to 255 characters with no control characters")
	}
	return messaging.Idempotency{Key: key, Replayed: replayed}, nil
}

func badKey(msg string) error {
	return &messaging.Error{Kind: messaging.ErrInvalid, Code: messaging.CodeInvalid, Message: msg}
}

// markReplayed marks an answer that replays the kept result of an earlier
// request with the same key.
func markReplayed(w http.ResponseWriter, replayed bool) {
	if replayed {
		w.Header().Set(headerReplayed, "true")
	}
}
