// Package events delivers Parley's domain events: every change made
// through a messaging or attachments Service (a message sent, edited,
// reacted to, read, deleted; a file uploaded, renamed, linked, deleted; a
// conversation's read position moved) becomes an event, which Go code and
// HTTP clients follow live, and which host code handles (notifications,
// search indexing, webhooks).
//
//	msgs, err := messaging.New(ctx, store, blobs, nil) // Options.Events configure the Feed
//	if err != nil { … }
//	defer msgs.Close() // closes the Feed
//	feed := msgs.Events()
//
//	sub, err := feed.Subscribe(ctx, alice, events.SubscribeOptions{ConversationID: "general"})
//	for {
//		e, err := sub.Next(ctx) // e.Type, e.Message, e.Attachment, e.Conversation, e.DeletedID
//		…
//	}
//
//	feed.Handle(ctx, "notify", func(ctx context.Context, e messaging.Event) error { … })
//
// httpadapter serves a Feed as GET /v1/events (Options.Events): a
// Server-Sent Events stream, or a list for clients that poll.
//
// # Events are made by the services, recorded in the change's transaction
//
// The services make the events (messaging.Event: type, conversation,
// audience, time, id), never the HTTP layer, so that a change made from Go
// and one made over HTTP make the same events. Each write of the
// repositories takes a driver.Recorder; the store calls it inside the
// write's transaction with the resources after the change, as they are
// read in that transaction (the message after reactions merged, the
// attachment after a rename, the conversation as its reader sees it after
// a read), and stores the events in the same transaction: a transactional
// outbox. An event exists if and only if its change committed, and it
// carries the resource as a read would have returned it just after the
// change. (sqlstore.ImportMessages, a bulk load, records none.) The
// services record events only once a Feed is built on them: build one in
// every instance that writes to a database the Feeds read.
//
// # Order
//
// The store gives each event a Seq in commit order (see Repository): a
// reader that asks for the events after the last Seq it has seen never
// misses one, and the events of changes of which one began after the other
// committed (a message, then its edits and reactions) come in that order.
// SQLite serializes writes, so the order of inserts is the order of
// commits; PostgreSQL and MySQL number the events after their commit,
// under a lock of one counter row that only readers take (see
// storage/sqlstore), so that writers wait for nothing.
//
// # Delivery
//
// A Feed reads the outbox after each write that recorded events (the
// services wake it), on a wake-up from another instance, and every
// Options.PollInterval, and offers each new event, in Seq order, to the
// subscriptions of its process. Delivery is at least once: a subscriber
// drops duplicates by id, and resumes after the last id it has
// (SubscribeOptions.After), reading what it missed from the outbox before
// it goes on live, none twice. A process killed between a commit and
// delivery has lost nothing: the event is in the outbox, and subscribers
// that resume (and handlers, whose positions are stored) get it.
//
// A subscription gets the events its caller may see:
// messaging.Service.CanSeeEvent, the conversation Policy (asked at most
// every Options.PolicyTTL per conversation) and the audience (the reader
// of a conversation.read, the uploader of a file in no conversation). Each
// subscription has a bounded queue (Options.Buffer); one whose reader
// falls behind is ended (ErrTooSlow) rather than slowing the Feed, the
// writers or other readers, and resumes after its last event.
//
// Handlers (Handle) run in the background, after the commit, one event at
// a time per handler, in Seq order, with retries and backoff; their failure
// never fails the write. Their positions are stored with the events, so a
// restart resumes them, and among instances sharing a database one at a
// time runs each handler (a claim that expires).
//
// # Retention
//
// Events are kept for Options.Retention (default 24 hours), then pruned,
// oldest first. A subscriber that resumes after an event no longer kept
// gets an event of type messaging.EventsLost first, then goes on live from
// the newest: it should reload what it shows.
//
// # Several instances
//
// Instances behind a load balancer share a database and so an outbox; each
// runs a Feed for its own subscribers. After a write, a Feed sends a
// wake-up on Options.Topic (any gocloud.dev/pubsub topic: NATS in
// production, mem:// in tests; the host imports the driver), and the Feeds
// of the others, receiving it on their Options.Subscription, read the
// outbox at once. The message is only a hint: the outbox stays the source
// of truth, so a wake-up lost is an event delivered at the next poll,
// never an event lost.
//
// # Errors
//
// Subscribe, Events and Handle return *messaging.Error values (ErrInvalid
// for a bad argument, ErrUnavailable when the store cannot be reached).
// Next ends a subscription with ErrTooSlow or ErrClosed.
//
// # Backends
//
// Repository and Query are the contract of a storage backend, the read
// side of the outbox that the writes of driver.MessageStore and
// driver.AttachmentStore fill; storage/sqlstore and storage/memstore
// implement it, and storage/storetest checks it.
package events
