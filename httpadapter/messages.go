package httpadapter

import (
	"net/http"

	"github.com/parleychat/parley/internal/check"
	"github.com/parleychat/parley/internal/domain"
	"github.com/parleychat/parley/messaging"
)

// listMessages answers GET /v1/messages: the messages of conversation_id,
// or of every conversation the caller may see, newest first.
func (a *api) listMessages(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	ctx, u := r.Context(), a.urls(r, caller)
	parent, err := parentParam(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if parent != "" {
		a.listReplies(w, r, caller, parent)
		return
	}
	serveList(a, w, r, func(conversationID string, o messaging.ListOptions) (messaging.Page[messaging.Message], error) {
		return a.msgs.Messages(ctx, caller, conversationID, o)
	}, func(m messaging.Message) messageJSON { return u.message(ctx, m) })
}

func (a *api) createMessage(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	var replayed bool
	idem, in, err := a.keyedInput(w, r, &replayed)
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
	var hasParent bool
	if nm.ParentID, hasParent, err = in.str("parent_id"); err != nil {
		a.writeError(w, r, err)
		return
	}
	if hasParent && nm.ParentID == "" {
		// An empty parent names no root; it does not make a top-level message.
		a.writeError(w, r, badParam("parent_id", "parent_id must not be empty"))
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
	serveOne(a, w, r, m, err, func(m messaging.Message) messageJSON { return a.urls(r, caller).message(ctx, m) })
}

func (a *api) updateMessage(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	var replayed bool
	idem, in, err := a.keyedInput(w, r, &replayed)
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
	rs, _, err := in.reactions("reactions")
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if u.React, err = ownReactions(caller, rs); err != nil {
		a.writeError(w, r, domain.Wrap("messaging.Update", err))
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

// ownReactions returns the names of rs, the reactions of a PUT, each of
// which must name the caller (its username) as its reactor: the API's
// form names the reactors, the Service reacts in the caller's name. A
// reaction with a bad name or no reactor is a 400, one in another's name
// a 403.
func ownReactions(caller messaging.Contact, rs []messaging.Reaction) ([]string, error) {
	var names []string
	for _, r := range rs {
		if err := check.ReactionName("reactions", r.Name); err != nil {
			return nil, err
		}
		if len(r.Reactors) == 0 {
			return nil, check.BadParam("reactions", "reaction "+r.Name+" names no reactor")
		}
		for _, who := range r.Reactors {
			if who != caller.Username {
				return nil, &messaging.Error{Kind: messaging.ErrPermission, Param: "reactions", Message: "you may react only in your own name (" + caller.Username + ")"}
			}
		}
		names = append(names, r.Name)
	}
	return names, nil
}

func (a *api) removeReaction(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	ctx := r.Context()
	m, err := a.msgs.Unreact(ctx, caller, r.PathValue("id"), r.PathValue("name"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a.urls(r, caller).message(ctx, m))
}
