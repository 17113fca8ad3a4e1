package httpadapter

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/parleychat/parley/messaging"
)

// serveList answers a GET of a list, as every list of the API is read:
// it reads the query (readListParams), asks page for the page, with the
// query's conversation_id ("" when absent; the lists that are not
// narrowed by a conversation ignore it), and writes the list envelope,
// each item as item shows it. An error of either is written as errors
// are.
func serveList[T any, J json.Marshaler](a *api, w http.ResponseWriter, r *http.Request, page func(conversationID string, o messaging.ListOptions) (messaging.Page[T], error), item func(T) J) {
	p, err := readListParams(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	pg, err := page(p.conversationID, messaging.ListOptions{Limit: p.limit, StartingAfter: p.startingAfter, EndingBefore: p.endingBefore})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	data := make([]J, len(pg.Data))
	for i, v := range pg.Data {
		data[i] = item(v)
	}
	writeJSON(w, http.StatusOK, list[J]{Object: "list", Data: data, HasMore: pg.HasMore})
}

// listParams reads the query of a list: conversation_id, limit,
// starting_after, ending_before, each at most once. Other parameters are
// ignored.
type listParams struct {
	conversationID, startingAfter, endingBefore string
	limit                                       int
}

func readListParams(r *http.Request) (listParams, error) {
	var p listParams
	if r.URL.RawQuery == "" {
		return p, nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return p, badParam("", "the query string cannot be parsed")
	}
	one := func(name string, dst *string) error {
		vs := q[name]
		if len(vs) > 1 {
			return twice(name)
		}
		if len(vs) == 1 {
			*dst = vs[0]
		}
		return nil
	}
	var limit string
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{"conversation_id", &p.conversationID},
		{"limit", &limit},
		{"starting_after", &p.startingAfter},
		{"ending_before", &p.endingBefore},
	} {
		if err := one(f.name, f.dst); err != nil {
			return p, err
		}
	}
	if _, ok := q["limit"]; ok {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 {
			return p, badParam("limit", "limit must be an integer between 1 and the maximum page size")
		}
		p.limit = n
	}
	for _, name := range []string{"conversation_id", "starting_after", "ending_before"} {
		if vs, ok := q[name]; ok && vs[0] == "" {
			return p, badParam(name, name+" must not be empty")
		}
	}
	return p, nil
}
