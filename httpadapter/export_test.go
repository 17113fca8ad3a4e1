package httpadapter

import (
	"net/http"

	"github.com/parleychat/parley/events"
)

// Routes lists every route New registers, as "METHOD /pattern", with the
// events route (which New registers when Options.Events is set). HEAD,
// which every GET route also answers, is not listed.
func Routes() []string {
	a := &api{events: new(events.Feed)}
	var out []string
	for _, rt := range a.routes() {
		for _, m := range rt.methods {
			out = append(out, m.name+" "+rt.pattern)
		}
	}
	return append(out, http.MethodGet+" "+openAPIPath)
}
