package driver

import (
	"context"
	"fmt"
	"time"
)

// Thread is a root message's replies as one caller sees them. Threads are
// one level deep: a reply's parent is a root, never another reply.
type Thread struct {
	// Root is the root message, as GetMessage returns it (a tombstone,
	// Deleted, once it is deleted while it has replies).
	Root Message
	// ReplyCount is the number of replies.
	ReplyCount int64
	// LastReplyAt is when the newest reply was sent; zero without replies.
	LastReplyAt time.Time
	// UnreadCount is the caller's own: the replies newer than the caller's
	// read position in the thread that others sent (every reply of others
	// for a caller who never read the thread).
	UnreadCount int64
	// LastReadMessageID is the reply the caller has read through; "" while
	// it has read none. It may name a reply deleted since.
	LastReadMessageID string
}

// ReplyQuery selects a page of a thread's replies, newest first. Its
// cursors may be by id alone (Cursor.Time zero): a reply of that thread,
// else an error matching ErrNotFound.
type ReplyQuery struct {
	Window
	// RootID is the root whose replies are listed.
	RootID string
}

// ThreadQuery selects a page of the threads a contact takes part in, most
// recently replied first (LastReplyAt, then the root's ConversationID and
// ID, descending).
// Its cursors may be by root id alone (Cursor.Time zero): a thread of the
// list, else an error matching ErrNotFound.
type ThreadQuery struct {
	Scope
	Window
	// ViewerID is the contact whose threads are listed (those whose root
	// it sent, or in which it replied, that have replies) and whose read
	// state each thread carries.
	ViewerID string
}

// ErrNoParent is the error of a reply (Message.ParentID set) whose parent
// cannot take it: no message of the reply's conversation, a reply itself,
// or a deleted root. A backend returns it, bare or wrapped, having stored
// nothing. It matches ErrInvalid.
var ErrNoParent = fmt.Errorf("the parent takes no replies: %w", ErrInvalid)

// ThreadStore is the optional capability of a MessageStore that stores
// threads; the Service finds it by type assertion, and refuses replies
// with ErrUnimplemented on a store without it. A store that implements it
// keeps these obligations in its MessageStore methods too:
//
//   - CreateMessage (and CreateMessageKeyed) of a message with ParentID
//     stores a reply: the parent must be a message of the same
//     conversation that is neither a reply nor deleted, else ErrNoParent.
//     In the reply's transaction it adds one to the root's ReplyCount,
//     moves its LastReplyAt, makes the sender and the root's sender take
//     part in the thread, and counts the reply unread for the others;
//     concurrent replies lose no count. A reply changes nothing of its
//     conversation (UpdatedAt, MessageCount, LastMessage, unread counts).
//   - ListMessages and the conversations' counters and LastMessage leave
//     replies out.
//   - GetMessage, LookupMessage and ListMessages return a root with its
//     ReplyCount and LastReplyAt, and a reply with its ParentID.
//   - DeleteMessage of a root with replies keeps its tombstone (Deleted,
//     see Message) in its place: its reactions, revisions and attachments
//     go as for any delete; it keeps its place in its conversation's
//     counts (MessageCount, unread counts, LastMessage) until it goes.
//     DeleteMessage of a reply keeps the thread's counts exact; deleting
//     the last reply of a tombstone removes the tombstone too
//     (Change.RemovedRoot). Change.Message carries the reply's ParentID.
//
// Counts are counters kept by the writes: GetThread, and each thread of a
// page of ListThreads, cost the same whatever the number of replies, and
// a page of ListThreads whatever the number of the viewer's threads.
type ThreadStore interface {
	// GetThread returns the thread of the root rootID as viewerID sees it,
	// or an error matching ErrNotFound when rootID is no root (a missing
	// message, or a reply). A root without replies is a thread of none.
	GetThread(ctx context.Context, rootID, viewerID string) (Thread, error)

	// ListReplies returns up to q.Limit replies of the root q.RootID,
	// newest first (CreatedAt, then ID, descending), each as GetMessage
	// returns it, and whether more exist beyond them in the direction of
	// travel. A page costs the same whatever its depth.
	ListReplies(ctx context.Context, q ReplyQuery) (items []Message, hasMore bool, err error)

	// ListThreads returns up to q.Limit threads of q.ViewerID in the
	// conversations of q.Scope, most recently replied first, each as
	// GetThread returns it, and whether more exist beyond them in the
	// direction of travel.
	ListThreads(ctx context.Context, q ThreadQuery) (items []Thread, hasMore bool, err error)

	// MarkThreadRead moves contactID's read position in the thread of
	// rootID forward to replyID; a reply at or before the position changes
	// nothing. It returns an error matching ErrNotFound when replyID is no
	// reply of that root. When the position moves, rec is called with
	// Change.Thread, the thread as contactID sees it after the move; when
	// it does not, rec is not called.
	MarkThreadRead(ctx context.Context, rootID, contactID, replyID string, rec Recorder) error
}
