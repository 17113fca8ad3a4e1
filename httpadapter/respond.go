package httpadapter

import (
	"encoding/json"
	"net/http"
)

// contentTypeJSON is shared by every JSON response; net/http never changes
// a header's value slice in place.
var contentTypeJSON = []string{"application/json; charset=utf-8"}

// writeJSON encodes v straight to w with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h.Del("Content-Length")
	w.WriteHeader(status)
	// An encoding failure here is a broken connection or a bug in a
	// MarshalJSON; the status is already sent, so there is nothing to answer.
	_ = json.NewEncoder(w).Encode(v)
}

// list is the paged list envelope.
type list[T any] struct {
	Object  string `json:"object"`
	Data    []T    `json:"data"`
	HasMore bool   `json:"has_more"`
}

// deleted answers a DELETE.
type deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}
