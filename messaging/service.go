package messaging

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/internal/check"
	"github.com/parleychat/parley/internal/domain"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/internal/paging"
	"github.com/parleychat/parley/messaging/driver"
)

// Options configure a Service. A nil *Options means all defaults.
type Options struct {
	// Policy decides who may see which conversation, for messages and,
	// in the files Service (Service.Files), for files. Default: Everyone.
	Policy Policy
	// MaxMessageChars is the longest text, in characters. Default: 4000.
	MaxMessageChars int
	// MaxReactionNames is the most distinct reaction names on a message.
	// Default: 50.
	MaxReactionNames int
	// MaxReactionNamesPerCaller is the most distinct reaction names one
	// caller may react with on one message, so that no caller can take
	// all of a message's MaxReactionNames. Default: 20.
	MaxReactionNamesPerCaller int
	// MaxAttachments is the most attachments on a message. Default: 10.
	MaxAttachments int
	// MaxListLimit is the largest page size of every list: messages,
	// attachments, conversations and members. Default: 100.
	MaxListLimit int
	// MaxSearchQueryChars is the longest search query, in characters.
	// Default: 256.
	MaxSearchQueryChars int
	// TouchInterval is how often, at most, a contact's LastActiveAt is
	// written by Touch. Default: one minute.
	TouchInterval time.Duration
	// IdempotencyKeyTTL is how long the result of a write with an
	// idempotency key is kept: a retry with the key within it gets that
	// result again. Default: 24 hours.
	IdempotencyKeyTTL time.Duration
	// IdempotencyLockTimeout is how long the claim of an idempotency key
	// that a long write (an upload) makes in the store holds against a
	// retry on another instance: within it the retry is refused with
	// ErrConflict (CodeKeyInUse); after it the retry takes the key over
	// (the first call, if it is still running, then fails and changes
	// nothing), so that an instance that crashed does not hold a key for
	// long. Default: one minute.
	IdempotencyLockTimeout time.Duration
	// Now returns the current time. Default: time.Now.
	Now func() time.Time
	// Logger receives failures that are not returned to callers.
	// Default: slog.Default().
	Logger *slog.Logger

	// Files configure the files Service (Service.Files). Default: nil,
	// all defaults.
	Files *attachments.Options
	// Events configure the events Feed (Service.Events). Default: nil,
	// all defaults.
	Events *events.Options
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Policy == nil {
		c.Policy = Everyone{}
	}
	if c.MaxMessageChars <= 0 {
		c.MaxMessageChars = 4000
	}
	if c.MaxReactionNames <= 0 {
		c.MaxReactionNames = 50
	}
	if c.MaxReactionNamesPerCaller <= 0 {
		c.MaxReactionNamesPerCaller = 20
	}
	if c.MaxAttachments <= 0 {
		c.MaxAttachments = 10
	}
	if c.MaxListLimit <= 0 {
		c.MaxListLimit = 100
	}
	if c.MaxSearchQueryChars <= 0 {
		c.MaxSearchQueryChars = 256
	}
	if c.TouchInterval <= 0 {
		c.TouchInterval = time.Minute
	}
	if c.IdempotencyKeyTTL <= 0 {
		c.IdempotencyKeyTTL = defaultKeyTTL
	}
	if c.IdempotencyLockTimeout <= 0 {
		c.IdempotencyLockTimeout = defaultKeyLockTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Service is the messaging API: send, list, get, update and delete
// messages, react, mark read, link attachments; list conversations with
// each reader's unread count and move read positions; manage contacts and
// conversation membership. It is safe for concurrent use.
type Service struct {
	repo   driver.MessageStore
	policy Policy
	opts   Options
	files  *attachments.Service
	feed   *events.Feed
	// removeFiles removes the objects of deleted attachments (the files
	// Service's).
	removeFiles domain.FileRemover
	// committed is called after each write that recorded events: it wakes
	// the Feed.
	committed domain.Committed
	// memberChanged tells the Feed of a membership added or removed.
	memberChanged domain.MemberChanged
	// typing hands a typing indicator to the Feed.
	typing  func(driver.Typing)
	touched sync.Map // contact id -> time.Time of the last TouchContact
	// contacts caches contacts as read from the repository, for the
	// responses of Create: contact id -> cachedContact.
	contacts sync.Map
	// contactWrites counts the writes of contacts (forgetContact): a read
	// that one overtook is not kept in contacts.
	contactWrites atomic.Uint64
	// refs caches what never changes of the messages written to: message
	// id -> MessageRef (lookupToWrite).
	refs sync.Map
	// cached counts the entries stored in touched, contacts and refs; past
	// maxCached all are emptied, so they never grow without bound.
	cached atomic.Int64
	// lastPrune is when expired idempotency keys were last pruned (Unix
	// nanoseconds; the Service's start at first).
	lastPrune atomic.Int64
	// inflight holds the idempotency keys of the calls under way in this
	// process: scope + "\x00" + key -> struct{}.
	inflight sync.Map
}

// Storage is a backend as a host holds it (*sqlstore.Store,
// *memstore.Store, or a host's own): Driver returns the contract it
// implements (see package driver), which only the services call.
type Storage interface {
	Driver() driver.Store
}

// New returns a Service over storage, with its files Service over blobs
// (Files) and its events Feed (Events), built together: they follow one
// Policy and one page size limit, and every write of either Service
// records its events in its transaction. New reads the storage's outbox
// once, and fails if it cannot. Call Close at shutdown.
func New(ctx context.Context, storage Storage, blobs attachments.BlobStore, opts *Options) (*Service, error) {
	if storage == nil || blobs == nil {
		return nil, errors.New("messaging: New needs a Storage and an attachments.BlobStore")
	}
	o := opts.withDefaults()
	repo := storage.Driver()
	if _, ok := o.Policy.(membersOnly); ok {
		o.Policy = membersOnly{repo}
	}
	s := &Service{repo: repo, policy: o.Policy, opts: o}
	s.lastPrune.Store(s.now().UnixNano())
	m := domain.Messaging{
		CanView: s.policy.CanView,
		Scope: func(ctx context.Context, contactID string) (bool, string, []string, error) {
			sc, err := s.policy.Scope(ctx, contactID)
			member := ""
			if sc.Members {
				member = contactID
			}
			return sc.All, member, sc.ConversationIDs, err
		},
		MaxListLimit: s.opts.MaxListLimit,
		CanSeeEvent:  s.CanSeeEvent,
	}
	feed, hooks, err := events.New(ctx, m, repo, o.Events)
	if err != nil {
		return nil, err
	}
	m.Committed, m.Files = hooks.Committed, files{s}
	s.files, s.removeFiles = attachments.New(m, repo, blobs, o.Files)
	s.feed, s.committed, s.memberChanged, s.typing = feed, hooks.Committed, hooks.MemberChanged, hooks.Typing
	return s, nil
}

// Files returns the files Service built with s: uploads, lists, renames
// and deletions of attachments, under s's Policy.
func (s *Service) Files() *attachments.Service { return s.files }

// Events returns the events Feed built with s, which delivers the events
// of s's writes and of its files Service's to subscribers and handlers. A
// host that offers no live events simply does not use it.
func (s *Service) Events() *events.Feed { return s.feed }

// Close closes the events Feed (see events.Feed.Close). The Service's
// other calls keep working; the storage and the blob store are the
// host's to close.
func (s *Service) Close() error { return s.feed.Close() }

// wrapErr annotates err with op once (see domain.Wrap).
func wrapErr(op string, err error) error { return domain.Wrap(op, err) }

func (s *Service) now() time.Time { return s.opts.Now().UTC().Truncate(time.Microsecond) }

// SaveContact stores a contact. With an empty ID it returns the contact with
// the same Username if there is one, unchanged, and otherwise creates it with
// a new ID; with an ID it replaces that contact's fields, keeping the stored
// CreatedAt and LastActiveAt where c leaves them zero. Errors: ErrInvalid
// for an empty or malformed username, ErrConflict for a username taken by
// another contact.
func (s *Service) SaveContact(ctx context.Context, c Contact) (Contact, error) {
	saved, err := s.saveContact(ctx, c)
	return saved, wrapErr("messaging.SaveContact "+strconv.Quote(c.Username), err)
}

func (s *Service) saveContact(ctx context.Context, c Contact) (Contact, error) {
	if c.Username == "" {
		return Contact{}, check.Missing("username")
	}
	if err := check.ReactionName("username", c.Username); err != nil {
		return Contact{}, check.BadParam("username", "a username is 1 to 64 characters with no white space, brackets or control characters")
	}
	if c.ID != "" {
		if err := check.Text("id", c.ID, false); err != nil || len(c.ID) > 64 || strings.TrimSpace(c.ID) != c.ID {
			return Contact{}, check.BadParam("id", "a contact id is 1 to 64 bytes of printable characters")
		}
	}
	findOrCreate := c.ID == ""
	if findOrCreate {
		got, err := s.repo.ContactByUsername(ctx, c.Username)
		if err == nil {
			return got, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return Contact{}, err
		}
		c.ID = ids.New(ids.Contact)
	}
	if !findOrCreate && (c.CreatedAt.IsZero() || c.LastActiveAt.IsZero()) {
		// Keep what the caller did not set of a stored contact.
		old, err := s.repo.GetContact(ctx, c.ID)
		switch {
		case err == nil:
			if c.CreatedAt.IsZero() {
				c.CreatedAt = old.CreatedAt
			}
			if c.LastActiveAt.IsZero() {
				c.LastActiveAt = old.LastActiveAt
			}
		case !errors.Is(err, ErrNotFound):
			return Contact{}, err
		}
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = s.now()
	}
	err := s.repo.PutContact(ctx, c)
	s.forgetContact(c.ID)
	if findOrCreate && errors.Is(err, ErrConflict) {
		// Another caller (another instance, say) created it meanwhile.
		return s.repo.ContactByUsername(ctx, c.Username)
	}
	if errors.Is(err, ErrConflict) {
		return Contact{}, &Error{Kind: ErrConflict, Param: "username", Message: "username is taken by another contact", Err: err}
	}
	if err != nil {
		return Contact{}, err
	}
	return c, nil
}

// Contact returns the contact, or ErrNotFound.
func (s *Service) Contact(ctx context.Context, id string) (Contact, error) {
	c, err := s.repo.GetContact(ctx, id)
	return c, wrapErr("messaging.Contact "+strconv.Quote(id), err)
}

// maxCached bounds the per-contact and per-message entries the Service
// keeps in memory.
const maxCached = 100_000

// remember stores v under key in m, first emptying the caches when they
// hold maxCached entries (they only save queries: emptying costs a query
// per contact later, and loses nothing).
func (s *Service) remember(m *sync.Map, key string, v any) {
	if s.cached.Add(1) > maxCached {
		s.cached.Store(0)
		s.touched.Clear()
		s.contacts.Clear()
		s.refs.Clear()
	}
	m.Store(key, v)
}

// cachedContact is a contact and when it was read.
type cachedContact struct {
	c  Contact
	at time.Time
}

// contact returns the contact as stored, read at most Options.TouchInterval
// ago: Create answers with it, saving a query per message. What this
// process changes (SaveContact, Touch) shows at once; a change made
// through another process, within the interval.
func (s *Service) contact(ctx context.Context, id string) (Contact, error) {
	now := s.now()
	if v, ok := s.contacts.Load(id); ok {
		if cc := v.(cachedContact); now.Sub(cc.at) < s.opts.TouchInterval {
			return cc.c, nil
		}
	}
	writes := s.contactWrites.Load()
	c, err := s.repo.GetContact(ctx, id)
	if err != nil {
		return Contact{}, err
	}
	cc := cachedContact{c, now}
	s.remember(&s.contacts, id, cc)
	if s.contactWrites.Load() != writes {
		// A write ran meanwhile: c may be older than it. (Should the write
		// come after this check, its forgetContact removes cc.)
		s.contacts.CompareAndDelete(id, cc)
	}
	return c, nil
}

// forgetContact drops the cached contact after a write of it, and what a
// read under way would cache (contact).
func (s *Service) forgetContact(id string) {
	s.contactWrites.Add(1)
	s.contacts.Delete(id)
}

// Touch records that the contact is active now; it writes at most once per
// Options.TouchInterval per contact and process.
func (s *Service) Touch(ctx context.Context, contactID string) error {
	now := s.now()
	if last, ok := s.touched.Load(contactID); ok && now.Sub(last.(time.Time)) < s.opts.TouchInterval {
		return nil
	}
	if err := s.repo.TouchContact(ctx, contactID, now); err != nil {
		return wrapErr("messaging.Touch", err)
	}
	// Before touched: a request that skips its touch for this one finds
	// no copy older than it.
	s.forgetContact(contactID)
	s.remember(&s.touched, contactID, now)
	return nil
}

// NewMessage is what Create needs.
type NewMessage struct {
	// ConversationID is required: 1 to 128 letters, digits and _ - . :
	ConversationID string
	// Text is required and may not be only white space.
	Text string
	// Attachments lists ids of attachments the caller uploaded that are not
	// linked yet; they are linked to the new message atomically.
	Attachments []string
	// ParentID, when set, makes the message a reply in the thread of that
	// root: a message of the same conversation that is neither a reply
	// nor deleted (see Threads in the package documentation).
	ParentID string
	// Idempotency, when its Key is set, makes the call safe to retry: a
	// retry with the same key and fields returns the first call's message
	// and sends nothing (see Retries in the package documentation).
	Idempotency Idempotency
}

// Create sends a message as caller. Errors: ErrInvalid for a missing or bad
// field (the *Error's Param names it), ErrNotFound for a conversation the
// caller may not see, ErrPermission for an attachment of another uploader,
// ErrConflict for an attachment linked elsewhere, ErrInvalid (Param
// "parent_id") for a parent that takes no reply, ErrUnimplemented for a
// reply on a storage without threads; with an idempotency key,
// ErrInvalid (CodeKeyReused) for a key first used with other fields and
// ErrConflict (CodeKeyInUse) while a call with the key is under way. The
// message's Contact is the sender as stored, read at most
// Options.TouchInterval ago (changes made through this Service show at
// once).
func (s *Service) Create(ctx context.Context, caller Contact, in NewMessage) (Message, error) {
	m, err := s.create(ctx, caller, in)
	return m, wrapErr("messaging.Create", err)
}

func (s *Service) create(ctx context.Context, caller Contact, in NewMessage) (Message, error) {
	if err := check.ConversationID("conversation_id", in.ConversationID); err != nil {
		return Message{}, err
	}
	if err := check.MessageText("message", in.Text, s.opts.MaxMessageChars); err != nil {
		return Message{}, err
	}
	if len(in.Attachments) > s.opts.MaxAttachments {
		return Message{}, check.BadParam("attachments", "a message may have at most "+strconv.Itoa(s.opts.MaxAttachments)+" attachments")
	}
	if key := in.Idempotency.Key; key != "" {
		if err := check.IdempotencyKey(keyParam, key); err != nil {
			return Message{}, err
		}
		fp := fingerprint("messages.create", in.ConversationID, in.Text, list(in.Attachments))
		if in.ParentID != "" {
			fp = fingerprint("messages.reply", in.ConversationID, in.ParentID, in.Text, list(in.Attachments))
		}
		get := func(id string) (Message, error) { return s.Get(ctx, caller, id) }
		return keyed(ctx, s, caller.ID, in.Idempotency, fp, get, func(done driver.IdempotencyRecord) (Message, error) {
			return s.send(ctx, caller, in, &done)
		})
	}
	return s.send(ctx, caller, in, nil)
}

// send stores the message of create, whose fields are checked, with done
// (when not nil), the record of its idempotency key, in one transaction.
func (s *Service) send(ctx context.Context, caller Contact, in NewMessage, done *driver.IdempotencyRecord) (Message, error) {
	if err := s.mustView(ctx, caller.ID, in.ConversationID); err != nil {
		return Message{}, err
	}
	if err := s.checkParent(in); err != nil {
		return Message{}, err
	}
	atts, err := s.linkable(ctx, caller, "", in.ConversationID, in.Attachments)
	if err != nil {
		return Message{}, err
	}
	now := s.now()
	m := Message{
		ID:             ids.NewAt(ids.Message, now),
		ConversationID: in.ConversationID,
		Contact:        caller,
		Text:           in.Text,
		CreatedAt:      now,
		ParentID:       in.ParentID,
	}
	// The sender as stored (read at most TouchInterval ago) is the
	// message's contact, in the answer and in the event. A failure to read
	// it fails nothing: the answer is made from what is in hand.
	if c, err := s.contact(ctx, caller.ID); err == nil {
		m.Contact = c
	} else {
		s.opts.Logger.WarnContext(ctx, "messaging: cannot read the sender of a new message", "message", m.ID, "err", err)
	}
	rec := s.recorder(func(c driver.Change) []Event {
		// Every attachment of a new message is linked by its creation.
		linked := make(map[string]bool, len(c.Message.Attachments))
		for _, a := range c.Message.Attachments {
			linked[a.ID] = true
		}
		return append([]Event{messageEvent(EventMessageCreated, *c.Message, now)}, linkedEvents(*c.Message, linked, now)...)
	})
	// The answer: made before the message is stored, since with a key it
	// is kept with the message, in the same transaction.
	out := m
	out.Reactions, out.Attachments = []Reaction{}, slices.Clone(atts)
	slices.SortFunc(out.Attachments, func(a, b Attachment) int { // oldest first, as stored
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	for i := range out.Attachments {
		out.Attachments[i].MessageID, out.Attachments[i].ConversationID = m.ID, m.ConversationID
	}
	if done != nil {
		done.Result = []byte(m.ID)
		err = s.repo.CreateMessageKeyed(ctx, m, in.Attachments, rec, *done)
	} else {
		err = s.repo.CreateMessage(ctx, m, in.Attachments, rec)
	}
	if errors.Is(err, driver.ErrNoParent) {
		return Message{}, noParent(in.ParentID, err)
	}
	if err != nil {
		return Message{}, linkError(err)
	}
	s.notify()
	return out, nil
}

// linkable checks that the caller may link the attachments ids to a message
// (messageID, or a new one when "") of the conversation, and de-duplicates
// nothing: a repeated id is an error.
func (s *Service) linkable(ctx context.Context, caller Contact, messageID, conversationID string, attIDs []string) ([]Attachment, error) {
	atts := make([]Attachment, 0, len(attIDs))
	seen := make(map[string]bool, len(attIDs))
	for _, id := range attIDs {
		if seen[id] {
			return nil, check.BadParam("attachments", "attachment listed twice: "+id)
		}
		seen[id] = true
		a, err := s.attachment(ctx, caller, id)
		if errors.Is(err, ErrNotFound) {
			return nil, &Error{Kind: ErrInvalid, Code: CodeInvalid, Param: "attachments", Message: "no such attachment: " + id}
		}
		if err != nil {
			return nil, err
		}
		if a.UploaderID != caller.ID {
			return nil, &Error{Kind: ErrPermission, Param: "attachments", Message: "only the uploader may link an attachment: " + id}
		}
		if a.MessageID != "" && a.MessageID != messageID {
			return nil, &Error{Kind: ErrConflict, Param: "attachments", Message: "attachment already linked to another message: " + id}
		}
		if a.ConversationID != "" && a.ConversationID != conversationID {
			return nil, check.BadParam("attachments", "attachment belongs to another conversation: "+id)
		}
		atts = append(atts, a)
	}
	return atts, nil
}

// attachment returns the attachment row if the caller may see it (as its
// uploader, or under the Policy), else ErrNotFound.
func (s *Service) attachment(ctx context.Context, caller Contact, id string) (Attachment, error) {
	if !ids.Valid(ids.Attachment, id) {
		return Attachment{}, ErrNotFound
	}
	a, err := s.repo.GetAttachment(ctx, id)
	if err != nil {
		return Attachment{}, err
	}
	if a.UploaderID == caller.ID {
		return a, nil
	}
	if a.ConversationID != "" {
		ok, err := s.policy.CanView(ctx, caller.ID, a.ConversationID)
		if err != nil || ok {
			return a, err
		}
	}
	return Attachment{}, ErrNotFound
}

// linkError turns a repository's link failure into an error for people.
func linkError(err error) error {
	switch {
	case errors.Is(err, driver.ErrKeyTaken):
		return err
	case errors.Is(err, ErrConflict):
		return &Error{Kind: ErrConflict, Param: "attachments", Message: "an attachment is already linked to another message", Err: err}
	case errors.Is(err, ErrNotFound):
		return &Error{Kind: ErrInvalid, Code: CodeInvalid, Param: "attachments", Message: "an attachment no longer exists", Err: err}
	}
	return err
}

func (s *Service) mustView(ctx context.Context, callerID, conversationID string) error {
	ok, err := s.policy.CanView(ctx, callerID, conversationID)
	if err != nil {
		return err
	}
	if !ok {
		return &Error{Kind: ErrNotFound, Param: "conversation_id", Message: "no such conversation: " + conversationID}
	}
	return nil
}

// Get returns the message with its contact, reactions and attachments, or
// ErrNotFound if it does not exist or the caller may not see it.
func (s *Service) Get(ctx context.Context, caller Contact, id string) (Message, error) {
	m, err := s.get(ctx, caller, id)
	return m, wrapErr("messaging.Get "+strconv.Quote(id), err)
}

func (s *Service) get(ctx context.Context, caller Contact, id string) (Message, error) {
	if !ids.Valid(ids.Message, id) {
		return Message{}, notFound(id)
	}
	m, err := s.repo.GetMessage(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Message{}, notFound(id)
	}
	if err != nil {
		return Message{}, err
	}
	ok, err := s.policy.CanView(ctx, caller.ID, m.ConversationID)
	if err != nil {
		return Message{}, err
	}
	if !ok {
		return Message{}, notFound(id)
	}
	return m, nil
}

// lookup is get without the message's reactions and attachments: what
// the checks of a write need.
func (s *Service) lookup(ctx context.Context, caller Contact, id string) (driver.MessageRef, error) {
	if !ids.Valid(ids.Message, id) {
		return driver.MessageRef{}, notFound(id)
	}
	m, err := s.repo.LookupMessage(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return driver.MessageRef{}, notFound(id)
	}
	if err != nil {
		return driver.MessageRef{}, err
	}
	ok, err := s.policy.CanView(ctx, caller.ID, m.ConversationID)
	if err != nil {
		return driver.MessageRef{}, err
	}
	if !ok {
		return driver.MessageRef{}, notFound(id)
	}
	return m, nil
}

// lookupLive is lookup of a message that is not a tombstone: a deleted
// root kept for its replies is ErrNotFound to every request but its read
// and its thread's (API.md, Threads).
func (s *Service) lookupLive(ctx context.Context, caller Contact, id string) (driver.MessageRef, error) {
	m, err := s.lookup(ctx, caller, id)
	if err == nil && m.Deleted {
		return driver.MessageRef{}, notFound(id)
	}
	return m, err
}

// ImportMessages stores msgs as they are given, for migrations from other
// systems and bulk loads: far faster than a Create each, in one
// transaction per call (pass chunks of some thousands), recording no
// events and asking no Policy (the host is the caller). Each message needs
// an ID (ids of the form "msg_…", time-ordered), a ConversationID, a
// CreatedAt, a sender (Contact.ID) saved before (SaveContact) and a text
// the Service would accept; no Reactions, Attachments, ReadAt or
// UpdatedAt. A message that breaks a rule fails the call with an error of
// kind ErrInvalid, an id that is taken with one of kind ErrConflict, and
// nothing of the call is stored. A storage without a bulk load (memstore)
// fails it with ErrInvalid.
func (s *Service) ImportMessages(ctx context.Context, msgs []Message) error {
	return wrapErr("messaging.ImportMessages", s.importMessages(ctx, msgs))
}

func (s *Service) importMessages(ctx context.Context, msgs []Message) error {
	imp, ok := s.repo.(driver.MessageImporter)
	if !ok {
		return &Error{Kind: ErrInvalid, Message: "this storage has no bulk load of messages"}
	}
	for _, m := range msgs {
		switch {
		case !ids.Valid(ids.Message, m.ID):
			return check.BadParam("id", "not a message id: "+m.ID)
		case m.CreatedAt.IsZero():
			return check.BadParam("created_at", "message "+m.ID+" has no time")
		case m.Contact.ID == "":
			return check.BadParam("contact", "message "+m.ID+" has no sender")
		case len(m.Reactions) > 0 || len(m.Attachments) > 0:
			return check.BadParam("message", "message "+m.ID+" has reactions or attachments")
		}
		if err := check.ConversationID("conversation_id", m.ConversationID); err != nil {
			return err
		}
		if err := check.MessageText("message", m.Text, s.opts.MaxMessageChars); err != nil {
			return err
		}
	}
	return imp.ImportMessages(ctx, msgs)
}

// lookupToWrite is lookup for a write that finds out itself whether the
// message is still there (UpdateMessage and DeleteMessage fail with
// ErrNotFound when it is not): it remembers the conversation, sender and
// time of a message, which never change, and reads them only once per
// message and process. Who may see the conversation is asked each time.
// A reaction on a popular message is then one round trip to the database,
// where it was two.
//
// A message id names one message for good: should a message be imported
// (ImportMessages) under the id of one deleted before, it must be
// that message, in the same conversation, from the same sender, as a
// restored backup is.
//
// remembered reports whether the ref came from memory: a check that then
// fails before the write is made again of the message as stored (gone).
func (s *Service) lookupToWrite(ctx context.Context, caller Contact, id string) (m driver.MessageRef, remembered bool, err error) {
	v, ok := s.refs.Load(id)
	if !ok {
		m, err := s.lookupLive(ctx, caller, id)
		if err == nil {
			s.remember(&s.refs, id, m)
		}
		return m, false, err
	}
	m = v.(driver.MessageRef)
	ok, err = s.policy.CanView(ctx, caller.ID, m.ConversationID)
	if err != nil {
		return driver.MessageRef{}, true, err
	}
	if !ok {
		return driver.MessageRef{}, true, notFound(id)
	}
	return m, true, nil
}

// unlessGone returns err, a check's refusal of a write to the message id,
// or ErrNotFound when the message's ref was remembered and the message is
// gone: what the caller would have been told had its ref been read.
func (s *Service) unlessGone(ctx context.Context, remembered bool, id string, err error) error {
	if remembered && s.gone(ctx, id) {
		s.refs.Delete(id)
		return notFound(id)
	}
	return err
}

func notFound(id string) error {
	return &Error{Kind: ErrNotFound, Message: "no such message: " + id}
}

// Messages returns a page of the messages of the conversation, or of
// every conversation the caller may see when conversationID is "", newest
// first. Errors: ErrInvalid for a bad limit, conversation id or cursor (an
// id not in the list).
func (s *Service) Messages(ctx context.Context, caller Contact, conversationID string, o ListOptions) (Page[Message], error) {
	p, err := s.messages(ctx, caller, conversationID, o)
	return p, wrapErr("messaging.Messages", err)
}

func (s *Service) messages(ctx context.Context, caller Contact, conversationID string, o ListOptions) (Page[Message], error) {
	limit, err := check.Limit(o.Limit, s.opts.MaxListLimit)
	if err != nil {
		return Page[Message]{}, err
	}
	q := driver.MessageQuery{Window: driver.Window{Limit: limit}}
	if conversationID != "" {
		if err := check.ConversationID("conversation_id", conversationID); err != nil {
			return Page[Message]{}, err
		}
		ok, err := s.policy.CanView(ctx, caller.ID, conversationID)
		if err != nil {
			return Page[Message]{}, err
		}
		if !ok {
			return Page[Message]{Data: []Message{}}, nil
		}
		q.ConversationIDs = []string{conversationID}
	} else {
		sc, err := s.policy.Scope(ctx, caller.ID)
		if err != nil {
			return Page[Message]{}, err
		}
		q.All, q.ConversationIDs = sc.All, sc.ConversationIDs
		if sc.Members {
			q.MemberID = caller.ID
		}
		if !q.All && q.MemberID == "" && len(q.ConversationIDs) == 0 {
			return Page[Message]{Data: []Message{}}, nil
		}
	}
	if conversationID != "" {
		// In one conversation the caller may see, a cursor is any message
		// of it: the repository finds it with the page.
		q.After, q.Before, err = check.Cursors(o.StartingAfter, o.EndingBefore, func(id string) (driver.Cursor, bool, error) {
			return driver.Cursor{ID: id}, ids.Valid(ids.Message, id), nil
		})
		if err != nil {
			return Page[Message]{}, err
		}
	} else {
		q.After, q.Before, err = check.Cursors(o.StartingAfter, o.EndingBefore, func(id string) (driver.Cursor, bool, error) {
			// A message the caller may see is in the list of every
			// conversation it may see.
			m, err := s.lookup(ctx, caller, id)
			if errors.Is(err, ErrNotFound) {
				return driver.Cursor{}, false, nil
			}
			return driver.Cursor{Time: m.CreatedAt, ID: m.ID}, true, err
		})
		if err != nil {
			return Page[Message]{}, err
		}
	}
	items, more, err := s.repo.ListMessages(ctx, q)
	if conversationID == "" {
		return listPage(items, more, err, nil, nil)
	}
	return listPage(items, more, err, q.After, q.Before)
}

// listPage makes a list's page of items, or, when the store holds no item
// of a cursor it was given (ErrNotFound), the error naming that cursor.
func listPage[T any](items []T, more bool, err error, after, before *driver.Cursor) (Page[T], error) {
	switch {
	case errors.Is(err, ErrNotFound) && after != nil:
		return Page[T]{}, check.UnknownCursor("starting_after", after.ID)
	case errors.Is(err, ErrNotFound) && before != nil:
		return Page[T]{}, check.UnknownCursor("ending_before", before.ID)
	case err != nil:
		return Page[T]{}, err
	case items == nil:
		items = []T{}
	}
	return Page[T]{Data: items, HasMore: more}, nil
}

// AllMessages returns an iterator over the messages of the conversation,
// or of every conversation the caller may see when conversationID is "",
// newest first, read page by page (o.Limit messages a page; 0 for the
// largest, Options.MaxListLimit), from the newest or from just older than
// o.StartingAfter. o.EndingBefore must be empty. The iterator yields the
// first error (with a zero Message) and stops; break out of the loop to
// stop early:
//
//	for m, err := range msgs.AllMessages(ctx, caller, "general", messaging.ListOptions{}) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(m.Text)
//	}
func (s *Service) AllMessages(ctx context.Context, caller Contact, conversationID string, o ListOptions) iter.Seq2[Message, error] {
	return paging.All("messaging.AllMessages", o, s.opts.MaxListLimit,
		func(o ListOptions) (Page[Message], error) { return s.Messages(ctx, caller, conversationID, o) },
		func(m Message) string { return m.ID })
}

// Update is a change to a message. Nil fields change nothing; at least one
// must be set.
type Update struct {
	// Text replaces the text; only the sender may edit.
	Text *string
	// React are reaction names the caller reacts with, in its own name:
	// each is added to the message's reactions, with the caller as its
	// reactor unless the caller is there already (see React).
	React []string
	// Attachments are ids to link, added to those already linked; only the
	// sender may add.
	Attachments []string
	// Read marks the message read (ReadAt set once, to the first read) or
	// unread; anyone who may see the message may.
	Read *bool
	// Idempotency, when its Key is set, makes the call safe to retry: a
	// retry with the same key and fields returns the first call's message
	// and changes nothing (see Retries in the package documentation).
	Idempotency Idempotency
}

// Update applies u as caller, all of it or nothing, and returns the message
// as stored. Editing the text, adding a reaction or an attachment sets
// UpdatedAt; an edit that changes the text keeps the text it replaces as a
// Revision. Errors: ErrInvalid for an empty update or a bad field (a
// reaction name, too many reactions or attachments), ErrNotFound,
// ErrPermission (another sender's message), ErrConflict (an attachment
// linked elsewhere); with an idempotency key, those of Create.
func (s *Service) Update(ctx context.Context, caller Contact, id string, u Update) (Message, error) {
	m, err := s.update(ctx, caller, id, u)
	return m, wrapErr("messaging.Update "+strconv.Quote(id), err)
}

func (s *Service) update(ctx context.Context, caller Contact, id string, u Update) (Message, error) {
	if u.Text == nil && len(u.React) == 0 && len(u.Attachments) == 0 && u.Read == nil {
		return Message{}, &Error{Kind: ErrInvalid, Code: CodeMissing, Message: "nothing to update: give message, reactions, attachments or read"}
	}
	if u.Text != nil {
		if err := check.MessageText("message", *u.Text, s.opts.MaxMessageChars); err != nil {
			return Message{}, err
		}
	}
	if err := s.checkReactions("reactions", u.React); err != nil {
		return Message{}, err
	}
	if len(u.Attachments) > s.opts.MaxAttachments {
		return Message{}, check.BadParam("attachments", "a message may have at most "+strconv.Itoa(s.opts.MaxAttachments)+" attachments")
	}
	if key := u.Idempotency.Key; key != "" {
		if err := check.IdempotencyKey(keyParam, key); err != nil {
			return Message{}, err
		}
		get := func(id string) (Message, error) { return s.Get(ctx, caller, id) }
		return keyed(ctx, s, caller.ID, u.Idempotency, updateFingerprint(id, u), get, func(done driver.IdempotencyRecord) (Message, error) {
			return s.apply(ctx, caller, id, u, &done)
		})
	}
	return s.apply(ctx, caller, id, u, nil)
}

// updateFingerprint is the fingerprint of Update's arguments.
func updateFingerprint(id string, u Update) string {
	parts := []string{"messages.update", id, optional(u.Text), list(u.React)}
	read := "-"
	if u.Read != nil {
		read = strconv.FormatBool(*u.Read)
	}
	return fingerprint(append(parts, list(u.Attachments), read)...)
}

// apply makes the change of update, whose fields are checked, with done
// (when not nil), the record of its idempotency key, in one transaction.
func (s *Service) apply(ctx context.Context, caller Contact, id string, u Update, done *driver.IdempotencyRecord) (Message, error) {
	m, remembered, err := s.lookupToWrite(ctx, caller, id)
	if err != nil {
		return Message{}, err
	}
	if (u.Text != nil || len(u.Attachments) > 0) && m.SenderID != caller.ID {
		return Message{}, s.unlessGone(ctx, remembered, id, &Error{Kind: ErrPermission, Message: "only the sender may edit a message or add attachments"})
	}
	atts, err := s.linkable(ctx, caller, m.ID, m.ConversationID, u.Attachments)
	if err != nil {
		return Message{}, s.unlessGone(ctx, remembered, id, err)
	}
	linked := make(map[string]bool, len(atts))
	for _, a := range atts {
		linked[a.ID] = a.MessageID != m.ID // linked by this update, not before
	}
	if done != nil {
		done.Result = []byte(m.ID)
	}
	now := s.now()
	ch := driver.MessageChange{
		Text:            u.Text,
		LinkAttachments: u.Attachments,
		Read:            u.Read,
		ReadAt:          now,
		Check:           s.checkCounts,
		Record: s.recorder(func(c driver.Change) []Event {
			if onlyRead := u.Text == nil && len(u.React) == 0 && len(u.Attachments) == 0; onlyRead && u.Read != nil && *u.Read && !c.Message.ReadAt.Equal(now) {
				return nil // read before: nothing changed, nothing to tell
			}
			return append([]Event{messageEvent(EventMessageUpdated, *c.Message, now)}, linkedEvents(*c.Message, linked, now)...)
		}),
		Done: done,
	}
	if len(u.React) > 0 {
		ch.Reactions = &driver.ReactionChange{ContactID: caller.ID, Add: distinct(u.React), At: now}
	}
	if u.Text != nil || len(u.React) > 0 || len(u.Attachments) > 0 {
		ch.UpdatedAt = now
	}
	if u.Text != nil {
		ch.RevisionID = ids.NewAt(ids.Revision, now)
	}
	out, err := s.repo.UpdateMessage(ctx, id, ch)
	if errors.Is(err, ErrNotFound) && s.gone(ctx, id) {
		return Message{}, notFound(id)
	}
	if err == nil {
		s.notify()
	}
	return out, linkError(err)
}

// checkCounts is the rule on the counts of a message that only its stored
// state can decide: a change may not take a message beyond
// MaxReactionNames distinct reactions or MaxAttachments attachments, nor
// its caller beyond MaxReactionNamesPerCaller distinct reactions on it. (A
// message already over a lowered limit keeps what it has, and may still
// get reactors on its names.)
func (s *Service) checkCounts(before, after driver.MessageCounts) error {
	if n := after.ReactionNames; n > s.opts.MaxReactionNames && n > before.ReactionNames {
		return check.BadParam("reactions", "a message may have at most "+strconv.Itoa(s.opts.MaxReactionNames)+" distinct reactions")
	}
	if n := after.ReactorNames; n > s.opts.MaxReactionNamesPerCaller && n > before.ReactorNames {
		return check.BadParam("reactions", "you may react with at most "+strconv.Itoa(s.opts.MaxReactionNamesPerCaller)+" distinct reactions on a message")
	}
	if n := after.Attachments; n > s.opts.MaxAttachments && n > before.Attachments {
		return check.BadParam("attachments", "a message may have at most "+strconv.Itoa(s.opts.MaxAttachments)+" attachments")
	}
	return nil
}

// gone reports whether the message is no longer stored, or is only its
// tombstone, to tell a message deleted meanwhile from an attachment
// deleted meanwhile (both are ErrNotFound from UpdateMessage).
func (s *Service) gone(ctx context.Context, id string) bool {
	m, err := s.repo.LookupMessage(ctx, id)
	return errors.Is(err, ErrNotFound) || err == nil && m.Deleted
}

// checkReactions checks the reaction names of a change, given as param:
// each valid, and no more distinct ones than a message may have.
func (s *Service) checkReactions(param string, names []string) error {
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		if err := check.ReactionName(param, name); err != nil {
			return err
		}
		seen[name] = true
		if len(seen) > s.opts.MaxReactionNames {
			return check.BadParam(param, "a message may have at most "+strconv.Itoa(s.opts.MaxReactionNames)+" distinct reactions")
		}
	}
	return nil
}

// distinct returns names without repeats, in the order of their first
// use.
func distinct(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// React adds the caller's reactions with the names to the message and
// returns the message as stored: the caller becomes a reactor of each
// name, unless it is one already (a name it has is not an error); a new
// name comes after the message's existing ones. It sets UpdatedAt. All
// the names are added, or none. Errors: ErrInvalid for no name, a bad
// name, or one more than a message may have (Options.MaxReactionNames)
// or the caller may use on it (Options.MaxReactionNamesPerCaller);
// ErrNotFound.
//
// React is Update with only React set; to retry a reaction safely, give
// Update an Idempotency key.
func (s *Service) React(ctx context.Context, caller Contact, id string, names ...string) (Message, error) {
	m, err := s.react(ctx, caller, id, names)
	return m, wrapErr("messaging.React "+strconv.Quote(id), err)
}

func (s *Service) react(ctx context.Context, caller Contact, id string, names []string) (Message, error) {
	if len(names) == 0 {
		return Message{}, &Error{Kind: ErrInvalid, Code: CodeMissing, Param: "reactions", Message: "give at least one reaction name"}
	}
	return s.update(ctx, caller, id, Update{React: names})
}

// Unreact removes the caller's reactions with the names from the message
// and returns the message; a name the caller has not reacted with is not
// an error, and a reaction left with no reactors disappears. Errors:
// ErrInvalid for no name or a bad name, ErrNotFound.
func (s *Service) Unreact(ctx context.Context, caller Contact, id string, names ...string) (Message, error) {
	m, err := s.unreact(ctx, caller, id, names)
	return m, wrapErr("messaging.Unreact "+strconv.Quote(id), err)
}

func (s *Service) unreact(ctx context.Context, caller Contact, id string, names []string) (Message, error) {
	if len(names) == 0 {
		return Message{}, &Error{Kind: ErrInvalid, Code: CodeMissing, Param: "name", Message: "give at least one reaction name"}
	}
	for _, name := range names {
		if err := check.ReactionName("name", name); err != nil {
			return Message{}, err
		}
	}
	if _, _, err := s.lookupToWrite(ctx, caller, id); err != nil {
		return Message{}, err
	}
	now := s.now()
	m, err := s.repo.UpdateMessage(ctx, id, driver.MessageChange{
		Reactions: &driver.ReactionChange{ContactID: caller.ID, Remove: distinct(names)},
		Record: s.recorder(func(c driver.Change) []Event {
			return []Event{messageEvent(EventMessageUpdated, *c.Message, now)}
		}),
	})
	if errors.Is(err, ErrNotFound) {
		return Message{}, notFound(id)
	}
	if err == nil {
		s.notify()
	}
	return m, err
}

// Delete removes the message, its reactions and its attachments (rows and
// files) for good. Only the sender may: ErrPermission for others,
// ErrNotFound for those who may not see it.
func (s *Service) Delete(ctx context.Context, caller Contact, id string) error {
	return wrapErr("messaging.Delete "+strconv.Quote(id), s.delete(ctx, caller, id))
}

func (s *Service) delete(ctx context.Context, caller Contact, id string) error {
	m, remembered, err := s.lookupToWrite(ctx, caller, id)
	if err != nil {
		return err
	}
	defer s.refs.Delete(id)
	if m.SenderID != caller.ID {
		return s.unlessGone(ctx, remembered, id, &Error{Kind: ErrPermission, Message: "only the sender may delete a message"})
	}
	now := s.now()
	atts, err := s.repo.DeleteMessage(ctx, id, s.recorder(func(c driver.Change) []Event {
		e := newEvent(EventMessageDeleted, c.Message.ConversationID, now)
		e.DeletedID, e.DeletedParentID = c.Message.ID, c.Message.ParentID
		evs := []Event{e}
		if c.RemovedRoot != "" {
			// The tombstone went with its last reply.
			e := newEvent(EventMessageDeleted, c.Message.ConversationID, now)
			e.DeletedID = c.RemovedRoot
			evs = append(evs, e)
		}
		for _, a := range c.Removed {
			e := newEvent(EventAttachmentDeleted, a.ConversationID, now)
			e.DeletedID = a.ID
			evs = append(evs, e)
		}
		return evs
	}))
	if errors.Is(err, ErrNotFound) {
		return notFound(id)
	}
	if err != nil {
		return err
	}
	s.notify()
	if len(atts) > 0 {
		keys := make([]string, len(atts))
		for i, a := range atts {
			keys[i] = a.Key
		}
		s.removeFiles(context.WithoutCancel(ctx), keys)
	}
	return nil
}
