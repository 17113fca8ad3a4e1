// Package messaging is the domain of Parley: contacts, messages in
// conversations with reactions, read state and attachments, who may see
// which conversation, and the errors of every service.
//
// New builds a Service over a storage backend (storage/sqlstore, or
// storage/memstore in tests) and a blob store, with its files Service
// (Files, package attachments) and its events Feed (Events, package
// events). Every rule (validation, limits, ids, times, who may do what)
// lives in the services, once, for every backend. The caller is passed to
// every call as the Contact the host's authentication identified.
//
//	msgs, err := messaging.New(ctx, store, blobs, &messaging.Options{Policy: myPolicy})
//	if err != nil { … }
//	defer msgs.Close()
//	alice, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
//	m, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "general", Text: "hi"})
//
// Rules: only the sender edits, adds attachments to or deletes a message.
// Reactions merge: a caller reacts (React, or Update.React beside other
// changes) and takes reactions back (Unreact) in its own name only, within
// Options.MaxReactionNames per message and MaxReactionNamesPerCaller per
// caller; a Message embeds the first MaxEmbeddedReactors reactors of each
// reaction, and Reactors pages through all. Anyone who may see a message
// may mark it read or unread. Every edit that changes the text keeps the
// old text as a Revision. Deleting a message deletes its attachments, rows
// and files, for good.
//
// Who may see a conversation is the host's Policy (Options.Policy); it
// governs messages, conversations, files and events alike, and what a
// caller may not see is reported as not found. Everyone is the default;
// MembersOnly shows each contact the conversations it is a member of
// (AddMember, RemoveMember). Conversations come with the caller's own read
// state (MarkRead, UnreadCount), kept by counters, so reading them costs
// the same whatever their size.
//
// Threads: a message with NewMessage.ParentID is a reply in the thread of
// that root, a message of the same conversation that is neither a reply
// nor deleted (threads are one level deep). Replies stay out of their
// conversation's list and counts; Replies lists a thread, Threads the
// threads a caller takes part in (it sent the root, or replied), most
// recently replied first, each with the caller's own unread replies
// (MarkThreadRead), and Thread one of them. Deleting a root that has
// replies leaves its tombstone (Message.Deleted, no text, reactions or
// attachments), which takes no reply and goes with its last reply. The
// storage must keep threads (driver.ThreadStore: memstore does); on one
// that does not, replies and the thread calls fail with ErrUnimplemented.
//
// Lists: a page method is named for what it lists, in the plural, and
// returns a Page; its iterator is All and that plural (Messages and
// AllMessages, Conversations, Replies, Threads, Members, Memberships,
// Reactors, Revisions,
// the files Service's Attachments, the Feed's Events). Each takes one
// ListOptions; what narrows the list is an argument before it. Search is
// the list of the messages that match a query, AllSearch its iterator.
//
// Every change is also an Event (message.created, message.updated, …),
// stored in the change's transaction and delivered by the Feed after the
// commit.
//
// Retries: a write may carry an Idempotency key. A retry with the same key
// and arguments returns the first call's resource, read again as the
// caller may see it now (a record keeps its id, not its body: a deleted
// resource, or one the caller lost access to, is ErrNotFound), and changes
// nothing (Idempotency.Replayed says so), also after a restart or on
// another instance; the same key with other arguments is ErrInvalid with
// CodeKeyReused, and a retry while the first call runs is ErrConflict with
// CodeKeyInUse. Keys are the caller's own and are kept for
// Options.IdempotencyKeyTTL (24 hours).
//
// A limit across instances: a Service knows the calls under way in its own
// process, and a send or an edit claims nothing in the store before its
// write (a claim would cost a second write). So a retry of a send or an
// edit that reaches another Service over the same database while the first
// call runs is not refused: the two writes meet on the key's record, one
// of them makes the change, and the other waits for it and answers its
// result (Replayed true), which may be the first call's. The change is
// made once either way. An upload (attachments) claims its key in the
// store before its file is read, so its retry is refused on every
// instance.
//
// Errors: every error of the services is an *Error whose Kind (ErrNotFound,
// ErrInvalid, ErrPermission, ErrConflict, …) decides the HTTP status; test
// it with errors.Is or KindOf. Message is safe to show; Param names the
// argument at fault. An error of no kind is internal.
//
// A backend implements package messaging/driver and proves itself with
// storage/storetest. DESIGN.md, at the repository root, tells how a
// request and a write flow.
package messaging
