package httpadapter

import (
	"encoding/json"
	"net/http"
	"sync"
)

// contentTypeJSON is shared by every JSON response; net/http never changes
// a header's value slice in place.
var contentTypeJSON = []string{"application/json; charset=utf-8"}

// jsonBuffers are the buffers writeJSON appends JSON to; maxPooledJSON is
// the largest it keeps (a page of 100 messages with attachments fits).
var jsonBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

const maxPooledJSON = 256 << 10

// writeJSON encodes v straight to w with the given status.
//
// A value that marshals itself (a message, an attachment, a list of them)
// is written as its MarshalJSON returns it, followed by a newline as
// json.Encoder writes. The Encoder would give the same bytes, but only after
// checking and compacting MarshalJSON's output once more, which was the
// largest single cost of answering a list.
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h.Del("Content-Length")
	if ap, ok := v.(jsonAppender); ok {
		// Appended into a pooled buffer, returned after the write.
		bp := jsonBuffers.Get().(*[]byte)
		if b, err := ap.appendJSON((*bp)[:0]); err == nil {
			w.WriteHeader(status)
			_, _ = w.Write(append(b, '\n'))
			if cap(b) <= maxPooledJSON {
				*bp = b[:0]
				jsonBuffers.Put(bp)
			}
			return
		}
		jsonBuffers.Put(bp)
	}
	if m, ok := v.(json.Marshaler); ok {
		if b, err := m.MarshalJSON(); err == nil {
			w.WriteHeader(status)
			_, _ = w.Write(append(b, '\n'))
			return
		}
	}
	w.WriteHeader(status)
	// An encoding failure here is a broken connection or a bug in a
	// MarshalJSON; the status is already sent, so there is nothing to answer.
	_ = json.NewEncoder(w).Encode(v)
}

// jsonAppender is a value that appends its JSON, as its MarshalJSON
// returns it, to a slice (jsonappend.go).
type jsonAppender interface {
	appendJSON(b []byte) ([]byte, error)
}

// list is the paged list envelope.
type list[T json.Marshaler] struct {
	Object  string `json:"object"`
	Data    []T    `json:"data"`
	HasMore bool   `json:"has_more"`
}

// MarshalJSON writes {"object":"list","data":[…],"has_more":…}, each item
// as its own MarshalJSON gives it (the output of json.Marshal: compact,
// valid and HTML-escaped, as encoding/json would have made it).
func (l list[T]) MarshalJSON() ([]byte, error) {
	return l.appendJSON(make([]byte, 0, 64+len(l.Data)*512))
}

// appendJSON appends the list to b, as MarshalJSON writes it.
func (l list[T]) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"object":`...)
	b = appendString(b, l.Object)
	b = append(b, `,"data":[`...)
	for i, item := range l.Data {
		if i > 0 {
			b = append(b, ',')
		}
		if ap, ok := any(item).(jsonAppender); ok {
			var err error
			if b, err = ap.appendJSON(b); err != nil {
				return nil, err
			}
			continue
		}
		ib, err := item.MarshalJSON()
		if err != nil {
			return nil, err
		}
		b = append(b, ib...)
	}
	b = append(b, `],"has_more":`...)
	if l.HasMore {
		b = append(b, "true}"...)
	} else {
		b = append(b, "false}"...)
	}
	return b, nil
}

// deleted answers a DELETE.
type deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
	// ParentID is the root of a deleted reply, in its event.
	ParentID string `json:"parent_id,omitempty"`
}
