package messaging

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/check"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/internal/kind"
)

// Policy decides who may see a conversation. It is attachments.Policy:
// one value, set in attachments.Options, serves both services.
type Policy = attachments.Policy

// Options configure a Service. A nil *Options means all defaults.
type Options struct {
	// MaxMessageChars is the longest text, in characters. Default: 4000.
	MaxMessageChars int
	// MaxReactionNames is the most distinct reaction names on a message.
	// Default: 50.
	MaxReactionNames int
	// MaxAttachments is the most attachments on a message. Default: 10.
	MaxAttachments int
	// MaxListLimit is the largest page size. Default: 100.
	MaxListLimit int
	// TouchInterval is how often, at most, a contact's LastActiveAt is
	// written by Touch. Default: one minute.
	TouchInterval time.Duration
	// Now returns the current time. Default: time.Now.
	Now func() time.Time
	// Logger receives failures that are not returned to callers.
	// Default: slog.Default().
	Logger *slog.Logger
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.MaxMessageChars <= 0 {
		c.MaxMessageChars = 4000
	}
	if c.MaxReactionNames <= 0 {
		c.MaxReactionNames = 50
	}
	if c.MaxAttachments <= 0 {
		c.MaxAttachments = 10
	}
	if c.MaxListLimit <= 0 {
		c.MaxListLimit = 100
	}
	if c.TouchInterval <= 0 {
		c.TouchInterval = time.Minute
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
// messages, react, mark read, link attachments. It is safe for concurrent
// use.
type Service struct {
	repo    Repository
	files   *attachments.Service
	policy  Policy // files' policy: one policy for messages and files
	opts    Options
	touched sync.Map // contact id -> time.Time of the last TouchContact
	// contacts caches contacts as read from the repository, for the
	// responses of Create: contact id -> cachedContact.
	contacts sync.Map
	// cached counts the entries stored in touched and contacts; past
	// maxCached both are emptied, so they never grow without bound.
	cached atomic.Int64
}

// New returns a Service over repo; files is the attachments Service over the
// same storage (messaging links attachments and removes their files when a
// message is deleted). Who may see which conversation is files' Policy
// (attachments.Options.Policy), so that messages and files follow one rule.
func New(repo Repository, files *attachments.Service, opts *Options) *Service {
	return &Service{repo: repo, files: files, policy: files.Policy(), opts: opts.withDefaults()}
}

func (s *Service) now() time.Time { return s.opts.Now().UTC().Truncate(time.Microsecond) }

// SaveContact stores a contact. With an empty ID it returns the contact with
// the same Username if there is one, unchanged, and otherwise creates it with
// a new ID; with an ID it replaces that contact's fields, keeping the stored
// CreatedAt and LastActiveAt where c leaves them zero. Errors: ErrInvalid
// for an empty or malformed username, ErrConflict for a username taken by
// another contact.
func (s *Service) SaveContact(ctx context.Context, c Contact) (Contact, error) {
	saved, err := s.saveContact(ctx, c)
	return saved, kind.Wrap("messaging.SaveContact "+strconv.Quote(c.Username), err)
}

func (s *Service) saveContact(ctx context.Context, c Contact) (Contact, error) {
	if c.Username == "" {
		return Contact{}, kind.Missing("username")
	}
	if err := check.ReactionName("username", c.Username); err != nil {
		return Contact{}, kind.BadParam("username", "a username is 1 to 64 characters with no white space, brackets or control characters")
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
	s.contacts.Delete(c.ID)
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
	return c, kind.Wrap("messaging.Contact "+strconv.Quote(id), err)
}

// maxCached bounds the per-contact entries the Service keeps in memory.
const maxCached = 100_000

// remember stores v under key in m, first emptying the caches when they
// hold maxCached entries (they only save queries: emptying costs a query
// per contact later, and loses nothing).
func (s *Service) remember(m *sync.Map, key string, v any) {
	if s.cached.Add(1) > maxCached {
		s.cached.Store(0)
		s.touched.Clear()
		s.contacts.Clear()
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
	c, err := s.repo.GetContact(ctx, id)
	if err != nil {
		return Contact{}, err
	}
	s.remember(&s.contacts, id, cachedContact{c, now})
	return c, nil
}

// Touch records that the contact is active now; it writes at most once per
// Options.TouchInterval per contact and process.
func (s *Service) Touch(ctx context.Context, contactID string) error {
	now := s.now()
	if last, ok := s.touched.Load(contactID); ok && now.Sub(last.(time.Time)) < s.opts.TouchInterval {
		return nil
	}
	if err := s.repo.TouchContact(ctx, contactID, now); err != nil {
		return kind.Wrap("messaging.Touch", err)
	}
	s.remember(&s.touched, contactID, now)
	s.contacts.Delete(contactID)
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
}

// Create sends a message as caller. Errors: ErrInvalid for a missing or bad
// field (the *Error's Param names it), ErrNotFound for a conversation the
// caller may not see, ErrPermission for an attachment of another uploader,
// ErrConflict for an attachment linked elsewhere. The message's Contact is
// the sender as stored, read at most Options.TouchInterval ago (changes made
// through this Service show at once).
func (s *Service) Create(ctx context.Context, caller Contact, in NewMessage) (Message, error) {
	m, err := s.create(ctx, caller, in)
	return m, kind.Wrap("messaging.Create", err)
}

func (s *Service) create(ctx context.Context, caller Contact, in NewMessage) (Message, error) {
	if err := check.ConversationID("conversation_id", in.ConversationID); err != nil {
		return Message{}, err
	}
	if err := check.MessageText("message", in.Text, s.opts.MaxMessageChars); err != nil {
		return Message{}, err
	}
	if err := s.mustView(ctx, caller.ID, in.ConversationID); err != nil {
		return Message{}, err
	}
	if len(in.Attachments) > s.opts.MaxAttachments {
		return Message{}, kind.BadParam("attachments", "a message may have at most "+strconv.Itoa(s.opts.MaxAttachments)+" attachments")
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
	}
	if err := s.repo.CreateMessage(ctx, m, in.Attachments); err != nil {
		return Message{}, linkError(err)
	}
	// The message is stored: from here on, no error may make the client
	// think otherwise (and send it again). What cannot be read back is
	// answered from what is in hand.
	if c, err := s.contact(ctx, caller.ID); err == nil {
		m.Contact = c
	} else {
		s.opts.Logger.WarnContext(ctx, "messaging: cannot read the sender of a new message", "message", m.ID, "err", err)
	}
	m.Reactions, m.Attachments = []Reaction{}, atts
	slices.SortFunc(m.Attachments, func(a, b attachments.Attachment) int { // oldest first, as stored
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	for i := range m.Attachments {
		m.Attachments[i].MessageID, m.Attachments[i].ConversationID = m.ID, m.ConversationID
	}
	return m, nil
}

// linkable checks that the caller may link the attachments ids to a message
// (messageID, or a new one when "") of the conversation, and de-duplicates
// nothing: a repeated id is an error.
func (s *Service) linkable(ctx context.Context, caller Contact, messageID, conversationID string, attIDs []string) ([]attachments.Attachment, error) {
	atts := make([]attachments.Attachment, 0, len(attIDs))
	for i, id := range attIDs {
		if slices.Contains(attIDs[:i], id) {
			return nil, kind.BadParam("attachments", "attachment listed twice: "+id)
		}
		a, err := s.files.Get(ctx, caller.ID, id)
		if errors.Is(err, ErrNotFound) {
			return nil, &Error{Kind: ErrInvalid, Code: kind.CodeInvalid, Param: "attachments", Message: "no such attachment: " + id}
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
			return nil, kind.BadParam("attachments", "attachment belongs to another conversation: "+id)
		}
		atts = append(atts, a)
	}
	return atts, nil
}

// linkError turns a repository's link failure into an error for people.
func linkError(err error) error {
	switch {
	case errors.Is(err, ErrConflict):
		return &Error{Kind: ErrConflict, Param: "attachments", Message: "an attachment is already linked to another message", Err: err}
	case errors.Is(err, ErrNotFound):
		return &Error{Kind: ErrInvalid, Code: kind.CodeInvalid, Param: "attachments", Message: "an attachment no longer exists", Err: err}
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
	return m, kind.Wrap("messaging.Get "+strconv.Quote(id), err)
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

func notFound(id string) error {
	return &Error{Kind: ErrNotFound, Message: "no such message: " + id}
}

// ListOptions select a page of messages.
type ListOptions struct {
	// ConversationID restricts the list to one conversation; when empty,
	// every conversation the caller may see is listed.
	ConversationID string
	// Limit is the page size: 0 for the default of 10, at most
	// Options.MaxListLimit.
	Limit int
	// StartingAfter is the id of a message of the list; the page holds the
	// messages just older than it.
	StartingAfter string
	// EndingBefore is the id of a message of the list; the page holds the
	// messages just newer than it, still newest first.
	EndingBefore string
}

// Page is one page of a list.
type Page struct {
	// Data are the messages of the page, newest first.
	Data []Message
	// HasMore reports whether more messages exist beyond the page in the
	// direction of travel (older, or newer with EndingBefore).
	HasMore bool
}

// List returns a page of messages, newest first. Errors: ErrInvalid for a
// bad limit, conversation id or cursor (an id not in the list).
func (s *Service) List(ctx context.Context, caller Contact, o ListOptions) (Page, error) {
	p, err := s.list(ctx, caller, o)
	return p, kind.Wrap("messaging.List", err)
}

func (s *Service) list(ctx context.Context, caller Contact, o ListOptions) (Page, error) {
	limit, err := check.Limit(o.Limit, s.opts.MaxListLimit)
	if err != nil {
		return Page{}, err
	}
	q := ListQuery{Limit: limit}
	if o.ConversationID != "" {
		if err := check.ConversationID("conversation_id", o.ConversationID); err != nil {
			return Page{}, err
		}
		ok, err := s.policy.CanView(ctx, caller.ID, o.ConversationID)
		if err != nil {
			return Page{}, err
		}
		if !ok {
			return Page{Data: []Message{}}, nil
		}
		q.ConversationIDs = []string{o.ConversationID}
	} else {
		q.ConversationIDs, q.All, err = s.policy.Viewable(ctx, caller.ID)
		if err != nil {
			return Page{}, err
		}
		if !q.All && len(q.ConversationIDs) == 0 {
			return Page{Data: []Message{}}, nil
		}
	}
	q.After, q.Before, err = check.Cursors(o.StartingAfter, o.EndingBefore, func(id string) (Cursor, bool, error) {
		m, err := s.get(ctx, caller, id)
		if errors.Is(err, ErrNotFound) {
			return Cursor{}, false, nil
		}
		inList := q.All || slices.Contains(q.ConversationIDs, m.ConversationID)
		return Cursor{CreatedAt: m.CreatedAt, ID: m.ID}, inList, err
	})
	if err != nil {
		return Page{}, err
	}
	items, more, err := s.repo.ListMessages(ctx, q)
	if err != nil {
		return Page{}, err
	}
	if items == nil {
		items = []Message{}
	}
	return Page{Data: items, HasMore: more}, nil
}

// Update is a change to a message. Nil fields change nothing; at least one
// must be set.
type Update struct {
	// Text replaces the text; only the sender may edit.
	Text *string
	// Reactions are merged into the message's: each reactor is added to its
	// reaction unless already there. A caller reacts only in its own name
	// (its Username).
	Reactions []Reaction
	// Attachments are ids to link, added to those already linked; only the
	// sender may add.
	Attachments []string
	// Read marks the message read (ReadAt set once, to the first read) or
	// unread; anyone who may see the message may.
	Read *bool
}

// Update applies u as caller and returns the message as stored. Editing
// the text, adding a reaction or an attachment sets UpdatedAt. Errors:
// ErrInvalid for an empty update or a bad field, ErrNotFound, ErrPermission
// (another sender's message, a reaction in another's name), ErrConflict (an
// attachment linked elsewhere).
func (s *Service) Update(ctx context.Context, caller Contact, id string, u Update) (Message, error) {
	m, err := s.update(ctx, caller, id, u)
	return m, kind.Wrap("messaging.Update "+strconv.Quote(id), err)
}

func (s *Service) update(ctx context.Context, caller Contact, id string, u Update) (Message, error) {
	if u.Text == nil && len(u.Reactions) == 0 && len(u.Attachments) == 0 && u.Read == nil {
		return Message{}, &Error{Kind: ErrInvalid, Code: kind.CodeMissing, Message: "nothing to update: give message, reactions, attachments or read"}
	}
	if u.Text != nil {
		if err := check.MessageText("message", *u.Text, s.opts.MaxMessageChars); err != nil {
			return Message{}, err
		}
	}
	if err := s.checkReactions(caller, u.Reactions); err != nil {
		return Message{}, err
	}
	if len(u.Attachments) > s.opts.MaxAttachments {
		return Message{}, kind.BadParam("attachments", "a message may have at most "+strconv.Itoa(s.opts.MaxAttachments)+" attachments")
	}
	m, err := s.get(ctx, caller, id)
	if err != nil {
		return Message{}, err
	}
	if (u.Text != nil || len(u.Attachments) > 0) && m.Contact.ID != caller.ID {
		return Message{}, &Error{Kind: ErrPermission, Message: "only the sender may edit a message or add attachments"}
	}
	if _, err := s.linkable(ctx, caller, m.ID, m.ConversationID, u.Attachments); err != nil {
		return Message{}, err
	}
	now := s.now()
	ch := Change{
		Text:             u.Text,
		AddReactions:     u.Reactions,
		LinkAttachments:  u.Attachments,
		Read:             u.Read,
		ReadAt:           now,
		MaxReactionNames: s.opts.MaxReactionNames,
		MaxAttachments:   s.opts.MaxAttachments,
	}
	if u.Text != nil || len(u.Reactions) > 0 || len(u.Attachments) > 0 {
		ch.UpdatedAt = now
	}
	m, err = s.repo.UpdateMessage(ctx, id, ch)
	if errors.Is(err, ErrNotFound) && s.gone(ctx, id) {
		return Message{}, notFound(id)
	}
	return m, linkError(err)
}

// gone reports whether the message is no longer stored, to tell a message
// deleted meanwhile from an attachment deleted meanwhile (both are
// ErrNotFound from UpdateMessage).
func (s *Service) gone(ctx context.Context, id string) bool {
	_, err := s.repo.GetMessage(ctx, id)
	return errors.Is(err, ErrNotFound)
}

func (s *Service) checkReactions(caller Contact, rs []Reaction) error {
	var names []string
	for _, r := range rs {
		if err := check.ReactionName("reactions", r.Name); err != nil {
			return err
		}
		if len(r.Reactors) == 0 {
			return kind.BadParam("reactions", "reaction "+r.Name+" names no reactor")
		}
		for _, who := range r.Reactors {
			if who != caller.Username {
				return &Error{Kind: ErrPermission, Param: "reactions", Message: "you may react only in your own name (" + caller.Username + ")"}
			}
		}
		if !slices.Contains(names, r.Name) {
			names = append(names, r.Name)
		}
	}
	if len(names) > s.opts.MaxReactionNames {
		return kind.BadParam("reactions", "a message may have at most "+strconv.Itoa(s.opts.MaxReactionNames)+" distinct reactions")
	}
	return nil
}

// RemoveReaction removes the caller's own reaction name from the message
// and returns the message; removing one that is not there is not an error.
// Errors: ErrInvalid for a bad name, ErrNotFound.
func (s *Service) RemoveReaction(ctx context.Context, caller Contact, id, name string) (Message, error) {
	m, err := s.removeReaction(ctx, caller, id, name)
	return m, kind.Wrap("messaging.RemoveReaction "+strconv.Quote(id), err)
}

func (s *Service) removeReaction(ctx context.Context, caller Contact, id, name string) (Message, error) {
	if err := check.ReactionName("name", name); err != nil {
		return Message{}, err
	}
	if _, err := s.get(ctx, caller, id); err != nil {
		return Message{}, err
	}
	m, err := s.repo.UpdateMessage(ctx, id, Change{RemoveReaction: &Reaction{Name: name, Reactors: []string{caller.Username}}})
	if errors.Is(err, ErrNotFound) {
		return Message{}, notFound(id)
	}
	return m, err
}

// Delete removes the message, its reactions and its attachments (rows and
// files) for good. Only the sender may: ErrPermission for others,
// ErrNotFound for those who may not see it.
func (s *Service) Delete(ctx context.Context, caller Contact, id string) error {
	return kind.Wrap("messaging.Delete "+strconv.Quote(id), s.delete(ctx, caller, id))
}

func (s *Service) delete(ctx context.Context, caller Contact, id string) error {
	m, err := s.get(ctx, caller, id)
	if err != nil {
		return err
	}
	if m.Contact.ID != caller.ID {
		return &Error{Kind: ErrPermission, Message: "only the sender may delete a message"}
	}
	atts, err := s.repo.DeleteMessage(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return notFound(id)
	}
	if err != nil {
		return err
	}
	keys := make([]string, len(atts))
	for i, a := range atts {
		keys[i] = a.Key
	}
	s.files.DeleteFiles(context.WithoutCancel(ctx), keys)
	return nil
}

// Attach uploads a file and links it at once to the caller's message
// messageID, in the message's conversation. Errors: those of Get and of
// attachments.Service.Upload, ErrPermission for another sender's message,
// ErrInvalid when the message has MaxAttachments already. On failure nothing
// is left.
func (s *Service) Attach(ctx context.Context, caller Contact, messageID string, u attachments.Upload) (attachments.Attachment, error) {
	a, err := s.attach(ctx, caller, messageID, u)
	return a, kind.Wrap("messaging.Attach "+strconv.Quote(messageID), err)
}

func (s *Service) attach(ctx context.Context, caller Contact, messageID string, u attachments.Upload) (attachments.Attachment, error) {
	m, err := s.get(ctx, caller, messageID)
	if errors.Is(err, ErrNotFound) {
		return attachments.Attachment{}, &Error{Kind: ErrNotFound, Param: "message_id", Message: "no such message: " + messageID}
	}
	if err != nil {
		return attachments.Attachment{}, err
	}
	if m.Contact.ID != caller.ID {
		return attachments.Attachment{}, &Error{Kind: ErrPermission, Param: "message_id", Message: "only the sender may add attachments to a message"}
	}
	if u.ConversationID != "" && u.ConversationID != m.ConversationID {
		return attachments.Attachment{}, kind.BadParam("conversation_id", "conversation_id differs from the message's conversation")
	}
	u.ConversationID = m.ConversationID
	a, err := s.files.Upload(ctx, caller.ID, u)
	if err != nil {
		return attachments.Attachment{}, err
	}
	m, err = s.repo.UpdateMessage(ctx, messageID, Change{
		LinkAttachments: []string{a.ID},
		UpdatedAt:       s.now(),
		MaxAttachments:  s.opts.MaxAttachments,
	})
	if err != nil {
		if derr := s.files.Delete(context.WithoutCancel(ctx), caller.ID, a.ID); derr != nil {
			s.opts.Logger.ErrorContext(ctx, "messaging: cannot remove an attachment whose link failed", "attachment", a.ID, "err", derr)
		}
		if errors.Is(err, ErrNotFound) {
			return attachments.Attachment{}, &Error{Kind: ErrNotFound, Param: "message_id", Message: "no such message: " + messageID}
		}
		return attachments.Attachment{}, linkError(err)
	}
	for _, got := range m.Attachments {
		if got.ID == a.ID {
			return got, nil
		}
	}
	a.MessageID = messageID
	return a, nil
}
