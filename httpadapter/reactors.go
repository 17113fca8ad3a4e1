package httpadapter

import (
	"encoding/json"
	"net/http"

	"github.com/parleychat/parley/messaging"
)

// reactorJSON is a Reactor as the API shows it.
type reactorJSON struct {
	Object    string `json:"object"`
	Username  string `json:"username"`
	ReactedAt int64  `json:"reacted_at"`
}

// MarshalJSON writes the reactor: its username as stored now, and when it
// reacted, in Unix seconds.
func (x reactorJSON) MarshalJSON() ([]byte, error) {
	type plain reactorJSON // without this method
	return json.Marshal(plain(x))
}

// listReactors answers GET /v1/messages/{id}/reactions/{name}: everyone who
// reacted with the name, in the order they came, in the list envelope
// (starting_after and ending_before take a username).
func (a *api) listReactors(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	serveList(a, w, r, func(_ string, o messaging.ListOptions) (messaging.Page[messaging.Reactor], error) {
		return a.msgs.Reactors(r.Context(), caller, r.PathValue("id"), r.PathValue("name"), o)
	}, func(rc messaging.Reactor) reactorJSON {
		return reactorJSON{Object: "reactor", Username: rc.Username, ReactedAt: rc.ReactedAt.Unix()}
	})
}
