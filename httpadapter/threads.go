package httpadapter

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/parleychat/parley/messaging"
)

// parentParam returns the query's parent_id: "" when absent; given twice
// or empty, a 400.
func parentParam(r *http.Request) (string, error) {
	if r.URL.RawQuery == "" {
		return "", nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return "", badParam("", "the query string cannot be parsed")
	}
	vs, ok := q["parent_id"]
	switch {
	case !ok:
		return "", nil
	case len(vs) > 1:
		return "", twice("parent_id")
	case vs[0] == "":
		return "", badParam("parent_id", "parent_id must not be empty")
	}
	return vs[0], nil
}

// listReplies answers GET /v1/messages?parent_id=: the thread's replies,
// newest first. conversation_id, if given too, is not consulted: the
// root names its conversation. A root the caller may not see is a 400
// naming parent_id, as a list's unknown cursor is.
func (a *api) listReplies(w http.ResponseWriter, r *http.Request, caller messaging.Contact, rootID string) {
	ctx, u := r.Context(), a.urls(r, caller)
	serveList(a, w, r, func(_ string, o messaging.ListOptions) (messaging.Page[messaging.Message], error) {
		p, err := a.msgs.Replies(ctx, caller, rootID, o)
		if errors.Is(err, messaging.ErrNotFound) {
			return p, badParam("parent_id", "parent_id names no message that can have replies: "+rootID)
		}
		return p, err
	}, func(m messaging.Message) messageJSON { return u.message(ctx, m) })
}

// listThreads answers GET /v1/threads: the caller's threads, most
// recently replied first.
func (a *api) listThreads(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	ctx, u := r.Context(), a.urls(r, caller)
	serveList(a, w, r, func(_ string, o messaging.ListOptions) (messaging.Page[messaging.Thread], error) {
		return a.msgs.Threads(ctx, caller, o)
	}, func(t messaging.Thread) threadJSON { return u.thread(ctx, t) })
}

func (a *api) getThread(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	ctx := r.Context()
	t, err := a.msgs.Thread(ctx, caller, r.PathValue("id"))
	serveOne(a, w, r, t, err, func(t messaging.Thread) threadJSON { return a.urls(r, caller).thread(ctx, t) })
}

// updateThread moves the caller's read position in the thread
// (read_through, a reply of it), the one field a thread takes.
func (a *api) updateThread(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	ctx := r.Context()
	serveReadThrough(a, w, r, func(through string) (messaging.Thread, error) {
		return a.msgs.MarkThreadRead(ctx, caller, r.PathValue("id"), through)
	}, func(t messaging.Thread) threadJSON { return a.urls(r, caller).thread(ctx, t) })
}

// thread returns t as the API shows it.
func (u *urls) thread(ctx context.Context, t messaging.Thread) threadJSON {
	return threadJSON{t: t, root: u.message(ctx, t.Root)}
}

// threadJSON is a Thread as the API shows it.
type threadJSON struct {
	t    messaging.Thread
	root messageJSON
}

type threadFields struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	ConversationID    string          `json:"conversation_id"`
	Root              json.RawMessage `json:"root"`
	ReplyCount        int64           `json:"reply_count"`
	LastReplyAt       *int64          `json:"last_reply_at"`
	UnreadCount       int64           `json:"unread_count"`
	LastReadMessageID *string         `json:"last_read_message_id"`
}

// MarshalJSON writes the thread: its root as a message (or tombstone),
// Unix seconds, nulls while there is no reply or no read position.
func (x threadJSON) MarshalJSON() ([]byte, error) {
	root, err := x.root.MarshalJSON()
	if err != nil {
		return nil, err
	}
	t := x.t
	f := threadFields{
		ID:                t.Root.ID,
		Object:            "thread",
		ConversationID:    t.Root.ConversationID,
		Root:              root,
		ReplyCount:        t.ReplyCount,
		UnreadCount:       t.UnreadCount,
		LastReadMessageID: nullable(t.LastReadMessageID),
	}
	if !t.LastReplyAt.IsZero() {
		at := t.LastReplyAt.Unix()
		f.LastReplyAt = &at
	}
	return json.Marshal(f)
}
