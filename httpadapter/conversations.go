package httpadapter

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/parleychat/parley/messaging"
)

func (a *api) listConversations(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	ctx, u := r.Context(), a.urls(r, caller)
	serveList(a, w, r, func(_ string, o messaging.ListOptions) (messaging.Page[messaging.Conversation], error) {
		return a.msgs.Conversations(ctx, caller, o)
	}, func(c messaging.Conversation) conversationJSON { return u.conversation(ctx, c) })
}

func (a *api) getConversation(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	ctx := r.Context()
	c, err := a.msgs.Conversation(ctx, caller, r.PathValue("id"))
	serveOne(a, w, r, c, err, func(c messaging.Conversation) conversationJSON { return a.urls(r, caller).conversation(ctx, c) })
}

// updateConversation moves the caller's read position (read_through), the
// one field a conversation takes.
func (a *api) updateConversation(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	ctx := r.Context()
	serveReadThrough(a, w, r, func(through string) (messaging.Conversation, error) {
		return a.msgs.MarkRead(ctx, caller, r.PathValue("id"), through)
	}, func(c messaging.Conversation) conversationJSON { return a.urls(r, caller).conversation(ctx, c) })
}

// serveOne writes v as show shows it, or err as errors are.
func serveOne[T any, J any](a *api, w http.ResponseWriter, r *http.Request, v T, err error, show func(T) J) {
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, show(v))
}

// serveReadThrough serves a PUT that moves a read position: it reads
// read_through (required), and writes what mark returns for it.
func serveReadThrough[T any, J any](a *api, w http.ResponseWriter, r *http.Request, mark func(through string) (T, error), show func(T) J) {
	in, err := a.readInput(w, r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	through, ok, err := in.str("read_through")
	if err == nil && !ok {
		err = missing("read_through")
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	v, err := mark(through)
	serveOne(a, w, r, v, err, show)
}

// postTyping tells the others who may see the conversation that the
// caller is typing (conversation.typing on their streams), and answers
// the typing object.
func (a *api) postTyping(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	if _, err := a.readInput(w, r); err != nil {
		a.writeError(w, r, err)
		return
	}
	t, err := a.msgs.Typing(r.Context(), caller, r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, typingJSON{t})
}

// typingJSON is a Typing as the API shows it:
//
//	{"object": "typing", "conversation_id": …, "contact": <Contact>, "expires_at": …}
type typingJSON struct{ t messaging.Typing }

func (x typingJSON) MarshalJSON() ([]byte, error) {
	b := []byte(`{"object":"typing","conversation_id":`)
	b = appendString(b, x.t.ConversationID)
	b = append(b, `,"contact":`...)
	b = appendContact(b, x.t.Contact)
	b = append(b, `,"expires_at":`...)
	b = strconv.AppendInt(b, x.t.ExpiresAt.Unix(), 10)
	return append(b, '}'), nil
}

// conversationJSON is a Conversation as the API shows it.
type conversationJSON struct {
	c    messaging.Conversation
	last *messageJSON
}

type conversationFields struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	CreatedAt         int64           `json:"created_at"`
	UpdatedAt         int64           `json:"updated_at"`
	MessageCount      int64           `json:"message_count"`
	LastMessage       json.RawMessage `json:"last_message"`
	UnreadCount       int64           `json:"unread_count"`
	LastReadMessageID *string         `json:"last_read_message_id"`
}

// MarshalJSON writes the conversation: Unix seconds, last_message as a
// message or null, last_read_message_id null while the caller read none.
func (x conversationJSON) MarshalJSON() ([]byte, error) {
	last := json.RawMessage("null")
	if x.last != nil {
		b, err := x.last.MarshalJSON()
		if err != nil {
			return nil, err
		}
		last = b
	}
	c := x.c
	return json.Marshal(conversationFields{
		ID:                c.ID,
		Object:            "conversation",
		CreatedAt:         c.CreatedAt.Unix(),
		UpdatedAt:         c.UpdatedAt.Unix(),
		MessageCount:      c.MessageCount,
		LastMessage:       last,
		UnreadCount:       c.UnreadCount,
		LastReadMessageID: nullable(c.LastReadMessageID),
	})
}
