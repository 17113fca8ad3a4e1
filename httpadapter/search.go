package httpadapter

import (
	"net/http"
	"net/url"

	"github.com/parleychat/parley/messaging"
)

// searchMessages answers GET /v1/messages/search: the messages whose text
// holds every word of query (the last one as a prefix), of
// conversation_id or of every conversation the caller may see, newest
// first, in the list envelope.
func (a *api) searchMessages(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	query, err := searchQuery(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	ctx, u := r.Context(), a.urls(r, caller)
	serveList(a, w, r, func(conversationID string, o messaging.ListOptions) (messaging.Page[messaging.Message], error) {
		return a.msgs.Search(ctx, caller, query, conversationID, o)
	}, func(m messaging.Message) messageJSON { return u.message(ctx, m) })
}

// searchQuery reads the query parameter of a search, which must be given
// once; the Service checks its words.
func searchQuery(r *http.Request) (string, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return "", badParam("", "the query string cannot be parsed")
	}
	vs := q["query"]
	switch {
	case len(vs) == 0:
		return "", missing("query")
	case len(vs) > 1:
		return "", twice("query")
	}
	return vs[0], nil
}
