// Package messaging is the messages half of Parley: messages in
// conversations, with reactions, read state and linked attachments, sent by
// contacts.
//
// A Service holds every rule (validation, limits, ids, timestamps, who may
// do what) once, for every backend; a Repository is the small interface a
// backend implements. The caller is passed explicitly to every call as the
// Contact that the host's authentication identified.
//
//	store := memstore.New()                 // or sqlstore.Open(ctx, dsn, nil)
//	files := attachments.New(store, memstore.NewBlobStore(), nil)
//	msgs := messaging.New(store, files, nil)
//	alice, _ := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
//	m, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "general", Text: "hi"})
//
// # Rules
//
//   - Only the sender edits the text, adds attachments or deletes a message.
//   - Reactions merge, never replace: a reactor is added to a reaction once.
//     A caller reacts only in its own name (its Username).
//   - Anyone who may see a message may mark it read (ReadAt is set once, to
//     the first read) or unread.
//   - Attachments are linked by id when a message is created or updated; an
//     attachment belongs to one message and one conversation. Deleting a
//     message removes its attachments, rows and files.
//   - Who may see a conversation is the host's Policy (attachments.Policy);
//     the default lets every contact see every conversation. A message the
//     caller may not see is reported as not found.
//
// # Errors
//
// Every error a Service returns can be tested with errors.Is against the
// kinds ErrNotFound, ErrInvalid, ErrPermission, ErrConflict, ErrTooLarge,
// ErrUnavailable (a backend cannot be reached) and read with errors.As as an
// *Error, whose Param names the field at fault and whose Message is safe to
// show to people. The kinds are the same values as those of package
// attachments. An error of no kind is unexpected: log it, show "internal
// error".
//
// # Backends
//
// storage/sqlstore (SQLite, PostgreSQL, MySQL/MariaDB) and storage/memstore
// implement Repository together with attachments.Repository; a new backend
// proves itself with storage/storetest.RunConformanceTests.
package messaging
