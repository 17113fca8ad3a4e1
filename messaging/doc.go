// Package messaging is the domain of Parley: contacts, messages in
// conversations with reactions, read state and attachments, who may see
// which conversation, and the errors of every service.
//
// A Service holds every rule (validation, limits, ids, timestamps, who may
// do what) once, for every backend; a Repository is the small interface a
// storage backend implements. The caller is passed explicitly to every call
// as the Contact that the host's authentication identified. Package
// attachments builds the files service on a messaging Service.
//
//	store := memstore.New() // or sqlstore.Open(ctx, dsn, nil)
//	msgs, err := messaging.New(ctx, store, blobs, &messaging.Options{Policy: myPolicy})
//	if err != nil { … }
//	defer msgs.Close()
//	files, feed := msgs.Files(), msgs.Events() // the attachments Service, the events Feed
//	alice, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
//	m, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "general", Text: "hi"})
//
// # Rules
//
//   - Only the sender edits the text, adds attachments or deletes a message.
//   - Reactions merge, never replace: a reactor is added to a reaction once.
//     A caller reacts (React, or Update's React with other changes) and
//     takes reactions back (Unreact) only in its own name; a reaction is
//     stored by the caller's contact id, so a renamed contact keeps its
//     reactions and shows under its new name, and a contact that takes
//     an old name inherits none. A message has at most
//     Options.MaxReactionNames distinct names (50), and one caller may
//     react with at most Options.MaxReactionNamesPerCaller of them (20),
//     so that no caller can take all of another's message; only the
//     reactor removes its reaction.
//   - A Message embeds the first MaxEmbeddedReactors (100) reactors of each
//     reaction and its Count; Reactors lists all of them, page by page.
//   - Anyone who may see a message may mark it read (ReadAt is set once, to
//     the first read) or unread.
//   - Attachments are linked by id when a message is created or updated; an
//     attachment belongs to one message and one conversation. Deleting a
//     message removes its attachments, rows and files.
//   - Who may see a conversation is the host's Policy, set once in
//     Options.Policy; it governs messages and, through the Service's
//     files Service (Files), files. The default, Everyone, lets every
//     contact see every conversation. What the caller may not see is
//     reported as not found.
//
// # Conversations
//
// A conversation exists from its first message or filed attachment; its id
// is the one the clients chose. Conversations lists those the caller may
// see, most recently active first, each with the caller's own read state:
// MarkRead moves the caller's read position forward (never back), and
// UnreadCount is the messages after it that others sent. The counts are
// counters kept by the writes that change them, so reading one costs the
// same in a conversation of a million messages as in one of ten; the
// per-message ReadAt is shared by every reader, as the API's read_at.
//
// Membership is the host's to manage (AddMember, RemoveMember, Members,
// Memberships). With the MembersOnly policy a contact sees exactly the
// conversations it is a member of, and lists are filtered by the store.
//
// Conversation access lives here, and not in attachments, because a file
// is seen through its conversation: the domain has one notion of who sees
// what, and the files service asks it.
//
// # Lists
//
// Every list is read the same way, in messaging, attachments and events
// alike. A page method is named for what it lists, in the plural, and
// returns a Page of them; its iterator is All and that plural, and walks
// every page (an iter.Seq2 that yields the first error and stops):
// Messages and AllMessages, Conversations and AllConversations, Members,
// Memberships, Reactors and Revisions each with its All…, the attachments
// Service's Attachments and AllAttachments, the Feed's Events and
// AllEvents. Each takes one ListOptions (Limit, StartingAfter,
// EndingBefore); what the list is narrowed by is an argument before it
// (Messages(ctx, caller, conversationID, o), "" for every conversation).
//
// # Events
//
// Every change a Service makes (and the attachments Service built on it)
// is also an Event: message.created, message.updated (text, reactions,
// read state, attachments linked or deleted), message.deleted,
// attachment.created, attachment.updated (renamed, or linked to a
// message), attachment.deleted, and conversation.read (a read position
// moved; its AudienceID is the reader, who alone may see it). An event
// carries the resource after the change (Message, Attachment,
// Conversation) or the id of the deleted one. The Service makes the events
// and the storage stores them in the change's transaction; the Service's
// events Feed (Events) delivers them after the commit. CanSeeEvent is the rule of who may
// see an event: its audience, and the Policy of its conversation.
//
// # Revisions
//
// Every edit that changes a message's text keeps the text it replaced as a
// Revision ("rev_…"), with when it was replaced, in the transaction of the
// edit. Revisions lists them newest first, to whoever may see the message
// (AllRevisions walks them all); they are deleted with their message.
//
// # Retries
//
// A write can carry an idempotency key (NewMessage.Idempotency,
// Update.Idempotency, and in package attachments Upload.Idempotency and
// Update.Idempotency), so that a client that retries after losing an
// answer never writes twice:
//
//	in := messaging.NewMessage{ConversationID: "general", Text: "hi",
//		Idempotency: messaging.Idempotency{Key: requestID}}
//	m, err := msgs.Create(ctx, alice, in) // again with the same key: the same m, nothing sent
//
// The rules:
//
//   - Keys are the caller's own: two contacts' keys never collide. The
//     first call with a key is carried out; a later call with the same key
//     and the same arguments (a fingerprint of the operation, its target
//     and its arguments; an upload's file by its SHA-256) returns the first
//     call's result, kept as it was, and changes nothing
//     (Idempotency.Replayed reports it). The same key with other arguments
//     is an error of kind ErrInvalid with Code CodeKeyReused. A call whose
//     write fails keeps nothing: its retry is carried out anew.
//   - The record of a key and the change it answers commit together: the
//     keyed repository write (IdempotencyRepository, Keyed writes) stores
//     the record, with the result, in the change's own transaction, so that
//     a crash can never leave a change without its record, or a record
//     without its change. A retry after a restart finds the record in the
//     store, and replays it.
//   - A retry while the first call is under way is an error of kind
//     ErrConflict with Code CodeKeyInUse. The Service holds the keys of its
//     calls under way in memory, so a retry that reaches the same process
//     is refused at once. An upload, which takes long, also claims its key
//     in the store before it reads the file, so that a retry on another
//     instance is refused too, before its file is read; a claim whose
//     instance died is taken over after Options.IdempotencyLockTimeout. A
//     send or an edit, which takes milliseconds, claims nothing first (a
//     claim would cost a second write): of two calls with one key on two
//     instances at once, the one that writes second finds the other's
//     record in its way (the store's unique key on caller and key), changes
//     nothing, and answers the other's result.
//   - Records are kept for Options.IdempotencyKeyTTL (24 hours) from the
//     first call. Expired records are pruned in batches by
//     PruneIdempotencyKeys, which the Service runs on its own in the
//     background at most once an hour, after a keyed call (so an idle
//     Service prunes nothing); a host may also call it on its own schedule.
//     An expired record that is not pruned yet is ignored: the key is new
//     again.
//
// # Errors
//
// Every error a Service of this package or of attachments returns is an
// *Error. Its Kind is one of a closed set (ErrNotFound, ErrInvalid,
// ErrPermission, ErrConflict, ErrTooLarge, ErrUnavailable, …) and decides
// the HTTP status; KindOf returns it, and errors.Is(err, ErrNotFound) tests
// it. An error's own kind wins over its cause's. Param names the argument
// at fault and Message is written for people, safe to show. An error of no
// kind is unexpected: log it, show "internal error".
//
// # Backends
//
// New takes a Storage: a backend as a host holds it, whose Driver method
// returns the contract it implements, driver.Store (package
// messaging/driver), which only the services call; applications never need
// it. Each write of the contract takes a Recorder and stores the events it
// makes in the write's transaction: a transactional outbox, which the
// events Feed reads. A keyed write stores its idempotency record in the
// same transaction, and a replay writes nothing, so a retried request
// makes no second event. storage/sqlstore (SQLite, PostgreSQL,
// MySQL/MariaDB) and storage/memstore are Storages; a new backend proves
// itself with storage/storetest.RunConformanceTests. A backend
// returns bare kinds (wrapped with fmt.Errorf's %w if it likes); the words
// people read are the Service's, the same on every backend.
package messaging
