package httpadapter

import (
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
// the typing object. Typing is never stored, and neither is the answer
// to an Idempotency-Key (a retry tells the others once more, at most
// once a second), but a malformed key is a 400 as on every POST.
func (a *api) postTyping(w http.ResponseWriter, r *http.Request, caller messaging.Contact) {
	if _, _, err := a.keyedInput(w, r, nil); err != nil {
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

// MarshalJSON writes the conversation: Unix seconds, last_message as a
// message or null, last_read_message_id null while the caller read none.
func (x conversationJSON) MarshalJSON() ([]byte, error) {
	return x.appendJSON(make([]byte, 0, 256+512))
}

// appendJSON appends the conversation. The members are id, object,
// created_at, updated_at, message_count, last_message, unread_count,
// last_read_message_id, in that order. (Appended by hand, as messages
// are: through json.Marshal, which checks and compacts the last message's
// JSON once more, a page of conversations cost about twice its CPU;
// BENCHMARKS.md section 4.)
func (x conversationJSON) appendJSON(b []byte) ([]byte, error) {
	c := x.c
	b = appendKey(append(b, '{'), "id", true)
	b = appendString(b, c.ID)
	b = append(b, `,"object":"conversation"`...)
	b = appendKey(b, "created_at", false)
	b = appendUnix(b, c.CreatedAt)
	b = appendKey(b, "updated_at", false)
	b = appendUnix(b, c.UpdatedAt)
	b = appendKey(b, "message_count", false)
	b = strconv.AppendInt(b, c.MessageCount, 10)
	b = appendKey(b, "last_message", false)
	if x.last != nil {
		var err error
		if b, err = x.last.appendJSON(b); err != nil {
			return nil, err
		}
	} else {
		b = append(b, "null"...)
	}
	b = appendKey(b, "unread_count", false)
	b = strconv.AppendInt(b, c.UnreadCount, 10)
	b = appendKey(b, "last_read_message_id", false)
	b = appendStringOrNull(b, c.LastReadMessageID)
	return append(b, '}'), nil
}
