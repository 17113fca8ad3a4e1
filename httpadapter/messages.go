package httpadapter

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/parleychat/parley/messaging"
)

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

func (a *api) listMessages(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	p, err := readListParams(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	page, err := a.msgs.Messages(ctx, caller, p.conversationID, messaging.ListOptions{Limit: p.limit, StartingAfter: p.startingAfter, EndingBefore: p.endingBefore})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	u := a.urls(r, caller)
	data := make([]messageJSON, len(page.Data))
	for i, m := range page.Data {
		data[i] = u.message(ctx, m)
	}
	writeJSON(w, http.StatusOK, list[messageJSON]{Object: "list", Data: data, HasMore: page.HasMore})
}

func (a *api) createMessage(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	var replayed bool
	idem, err := idempotency(r, &replayed)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	in, err := a.readInput(w, r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	nm := messaging.NewMessage{Idempotency: idem}
	if nm.ConversationID, _, err = in.str("conversation_id"); err != nil {
		a.writeError(w, r, err)
		return
	}
	if nm.Text, _, err = in.str("message"); err != nil {
		a.writeError(w, r, err)
		return
	}
	if nm.Attachments, _, err = in.list("attachments"); err != nil {
		a.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	m, err := a.msgs.Create(ctx, caller, nm)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	markReplayed(w, replayed)
	w.Header().Set("Location", a.location(r, "messages", m.ID))
	writeJSON(w, http.StatusCreated, a.urls(r, caller).message(ctx, m))
}

func (a *api) getMessage(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	ctx := r.Context()
	m, err := a.msgs.Get(ctx, caller, r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a.urls(r, caller).message(ctx, m))
}

func (a *api) updateMessage(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	var replayed bool
	idem, err := idempotency(r, &replayed)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	in, err := a.readInput(w, r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	u := messaging.Update{Idempotency: idem}
	text, ok, err := in.str("message")
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if ok {
		u.Text = &text
	}
	if u.Reactions, _, err = in.reactions("reactions"); err != nil {
		a.writeError(w, r, err)
		return
	}
	if u.Attachments, _, err = in.list("attachments"); err != nil {
		a.writeError(w, r, err)
		return
	}
	if u.Read, err = in.boolean("read"); err != nil {
		a.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	m, err := a.msgs.Update(ctx, caller, r.PathValue("id"), u)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	markReplayed(w, replayed)
	writeJSON(w, http.StatusOK, a.urls(r, caller).message(ctx, m))
}

func (a *api) deleteMessage(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	id := r.PathValue("id")
	if err := a.msgs.Delete(r.Context(), caller, id); err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, deleted{ID: id, Object: "message", Deleted: true})
}

func (a *api) removeReaction(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	ctx := r.Context()
	m, err := a.msgs.RemoveReaction(ctx, caller, r.PathValue("id"), r.PathValue("name"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a.urls(r, caller).message(ctx, m))
}
