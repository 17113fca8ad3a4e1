package httpadapter

import (
	"encoding/json"
	"net/http"

	"github.com/parleychat/parley/messaging"
)

// revisionJSON is a Revision as the API shows it.
type revisionJSON struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	MessageID string `json:"message_id"`
	Message   string `json:"message"`
	CreatedAt int64  `json:"created_at"`
}

// MarshalJSON writes the revision: "message" is the earlier text, and
// "created_at" when the edit replaced it, in Unix seconds.
func (x revisionJSON) MarshalJSON() ([]byte, error) {
	type plain revisionJSON // without this method
	return json.Marshal(plain(x))
}

func wireRevision(r messaging.Revision) revisionJSON {
	return revisionJSON{ID: r.ID, Object: "revision", MessageID: r.MessageID, Message: r.Text, CreatedAt: r.CreatedAt.Unix()}
}

// listRevisions answers GET /v1/messages/{id}/revisions: the earlier texts
// of the message, newest first, in the list envelope.
func (a *api) listRevisions(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	serveList(a, w, r, func(_ string, o messaging.ListOptions) (messaging.Page[messaging.Revision], error) {
		return a.msgs.Revisions(r.Context(), caller, r.PathValue("id"), o)
	}, wireRevision)
}
