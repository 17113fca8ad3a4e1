// Package events delivers Parley's domain events: every change made
// through the messaging or attachments Service (a message sent, edited,
// reacted to, read, deleted; a file uploaded, renamed, linked, deleted; a
// read position moved) becomes an event, which Go code and HTTP clients
// follow live, and which host code handles (notifications, webhooks).
//
// messaging.New builds the Feed (messaging.Service.Events; Options.Events
// configure it) and Close closes it:
//
//	feed := msgs.Events()
//	sub, err := feed.Subscribe(ctx, alice, events.SubscribeOptions{ConversationID: "general"})
//	for {
//		e, err := sub.Next(ctx) // e.Type, e.Message, e.Attachment, e.Conversation, e.DeletedID
//		…
//	}
//
//	feed.Handle(ctx, "notify", func(ctx context.Context, e messaging.Event) error { … })
//
// httpadapter serves the Feed as GET /v1/events: a Server-Sent Events
// stream, or a list for clients that poll.
//
// What a host can rely on:
//
//   - An event exists if and only if its change committed: the services
//     make it and the store keeps it in the change's transaction (an
//     outbox), carrying the resource as a read would return it just after
//     the change. A change made from Go and one made over HTTP make the
//     same events.
//   - Events come in commit order; delivery is at least once. A subscriber
//     drops duplicates by id and resumes after the last id it has
//     (SubscribeOptions.After), missing none, even across a crash.
//   - A subscription gets only what its caller may see (the Policy, and the
//     audience of a conversation.read or of a file in no conversation), and
//     is offered nothing else: a stream that sees nothing costs nothing per
//     event. Memberships changed through the Service take effect at once;
//     a host Policy's own changes within Options.PolicyTTL. One
//     whose reader falls behind Options.Buffer events ends with ErrTooSlow
//     rather than slowing anyone else, and resumes.
//   - Handlers run after the commit, one event at a time per handler, in
//     order, with retries; their failure never fails the write; their
//     positions are stored, and among instances one runs each handler.
//   - Deleted is gone: the list (Events) and a resume show nothing of a
//     message or attachment deleted since (driver.Redact: only its id,
//     an embedded message as its tombstone, a file left out of its
//     message). Live delivery and handlers get events as recorded.
//   - Event ids are opaque: one per event for every caller, and they tell
//     nothing of other conversations (not how many events they had, nor
//     when); an events.lost carries the id of the caller's own newest.
//   - Events are kept Options.Retention (24 hours); a subscriber that
//     resumes after a pruned event first gets messaging.EventsLost and
//     should reload what it shows.
//   - A stream costs its instance alone: httpadapter's limits of streams
//     (per caller, Options.MaxStreamsPerCaller, and in all) count the
//     streams of one handler, not of all instances.
//   - Instances behind a load balancer share the outbox; Options.Topic and
//     Options.Subscription (any gocloud.dev/pubsub driver: NATS, mem://)
//     wake the other instances' Feeds at once. A lost wake-up delays an
//     event to the next poll (Options.PollInterval); it never loses one.
//
// Errors are *messaging.Error values (ErrInvalid, ErrUnavailable); Next ends
// a subscription with ErrTooSlow or ErrClosed. DESIGN.md (§5) tells how the
// Feed works inside.
package events
