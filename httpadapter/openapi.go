package httpadapter

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"net/http"
	"time"
)

// openAPIPath is where the handler serves its OpenAPI document.
const openAPIPath = "/v1/openapi.json"

//go:embed openapi.json
var openAPIJSON []byte

// openAPIETag is the entity tag of openAPIJSON: its SHA-256, quoted.
var openAPIETag = func() string {
	sum := sha256.Sum256(openAPIJSON)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}()

// OpenAPI returns the OpenAPI 3.1 document that describes /v1: every
// path, parameter, request body (in each content type), response, the
// error object, the bearer security scheme and the default limits. The
// handler serves the same bytes at GET /v1/openapi.json, without
// authentication. The adapter's tests check every request they send and
// every response they receive against it. The caller may keep or change
// the slice it gets: each call returns a new copy.
func OpenAPI() []byte {
	return bytes.Clone(openAPIJSON)
}

// openAPIHandler serves GET (and HEAD) /v1/openapi.json to anyone: the
// document describes the API, holds no data, and is what a client needs
// before it has a token. Other methods are a 405.
type openAPIHandler struct{ a *api }

func (h openAPIHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		h.a.writeError(w, r, newHTTPError(http.StatusMethodNotAllowed, typeInvalidRequest, codeMethod,
			"method "+r.Method+" is not allowed on this path; allowed: GET, HEAD"))
		return
	}
	hd := w.Header()
	hd["Content-Type"] = contentTypeJSON
	hd.Set("ETag", openAPIETag)
	hd.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(openAPIJSON))
}
