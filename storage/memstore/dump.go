package memstore

import (
	"cmp"
	"context"
	"iter"
	"slices"
	"strings"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/storecopy"
)

var _ storecopy.Sink = (*store)(nil)

// Snapshot returns a copy of every row of the Store, made under its lock
// (storecopy.Source): it takes as much memory again as the rows. Like
// InstallationID, it makes the Store's installation id if it has none
// yet; it changes nothing else.
func (s *store) Snapshot(ctx context.Context) (storecopy.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.installation == "" {
		s.installation = ids.New("ins_")
	}
	d := &dump{in: storecopy.Installation{ID: s.installation, Epoch: s.epoch}}
	for _, c := range s.contacts {
		d.rows[storecopy.Contacts].Contacts = append(d.rows[storecopy.Contacts].Contacts, c)
	}
	slices.SortFunc(d.rows[storecopy.Contacts].Contacts, func(a, b messaging.Contact) int { return strings.Compare(a.ID, b.ID) })

	for _, c := range s.convs {
		d.rows[storecopy.Conversations].Conversations = append(d.rows[storecopy.Conversations].Conversations, s.conversationRow(c))
	}
	slices.SortFunc(d.rows[storecopy.Conversations].Conversations, func(a, b storecopy.Conversation) int { return strings.Compare(a.ID, b.ID) })
	d.rows[storecopy.Members].Members = s.memberRows()

	// A thread is kept, replies or not, until its root goes: one whose
	// replies were all deleted still holds who takes part in it.
	if len(s.threads) > 0 {
		return nil, noThreads("memstore.Snapshot", "the store holds threads")
	}
	msgs := make([]storecopy.Message, 0, len(s.messages))
	for _, m := range s.messages {
		if m.ParentID != "" {
			return nil, noThreads("memstore.Snapshot", "the store holds thread replies")
		}
		msgs = append(msgs, storecopy.Message{
			ID: m.ID, ConversationID: m.ConversationID, ContactID: m.Contact.ID, Text: m.Text,
			ReadAt: m.ReadAt, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt,
			ReactionCount: len(s.reacts[m.ID]), AttachmentCount: len(s.linked[m.ID]),
		})
	}
	slices.SortFunc(msgs, func(a, b storecopy.Message) int { return strings.Compare(a.ID, b.ID) })
	d.rows[storecopy.Messages].Messages = msgs
	d.rows[storecopy.ReactionNames].ReactionNames, d.rows[storecopy.Reactions].Reactions = s.reactionRows(msgs)

	for _, a := range s.atts {
		d.rows[storecopy.Attachments].Attachments = append(d.rows[storecopy.Attachments].Attachments, a)
	}
	slices.SortFunc(d.rows[storecopy.Attachments].Attachments, func(a, b messaging.Attachment) int { return strings.Compare(a.ID, b.ID) })
	for _, r := range s.revisions {
		d.rows[storecopy.Revisions].Revisions = append(d.rows[storecopy.Revisions].Revisions, r)
	}
	slices.SortFunc(d.rows[storecopy.Revisions].Revisions, func(a, b messaging.Revision) int { return strings.Compare(a.ID, b.ID) })
	for _, r := range s.keys {
		d.rows[storecopy.IdempotencyKeys].IdempotencyKeys = append(d.rows[storecopy.IdempotencyKeys].IdempotencyKeys, copyRecord(r))
	}
	slices.SortFunc(d.rows[storecopy.IdempotencyKeys].IdempotencyKeys, func(a, b driver.IdempotencyRecord) int {
		return cmp.Or(strings.Compare(a.Scope, b.Scope), strings.Compare(a.Key, b.Key))
	})
	return d, nil
}

// conversationRow returns c's row, its counters counted; under s.mu.
func (s *store) conversationRow(c *conversation) storecopy.Conversation {
	r := storecopy.Conversation{ID: c.id, CreatedAt: c.createdAt, UpdatedAt: c.createdAt, MessageCount: int64(len(c.msgs))}
	var last *messaging.Message
	for _, id := range c.msgs {
		if m := s.messages[id]; last == nil || compareCursor(msgPos(m), msgPos(last)) > 0 {
			last = m
		}
	}
	if last != nil {
		r.LastMessageID, r.UpdatedAt = last.ID, last.CreatedAt
	}
	return r
}

// memberRows returns the state of each contact in each conversation that
// has some (a membership, a read position, messages of its own), by
// conversation and contact; under s.mu.
func (s *store) memberRows() []storecopy.Member {
	rows := map[member]*storecopy.Member{}
	get := func(k member) *storecopy.Member {
		r, ok := rows[k]
		if !ok {
			r = &storecopy.Member{ConversationID: k.conversation, ContactID: k.contact}
			rows[k] = r
		}
		return r
	}
	for k, at := range s.members {
		r := get(k)
		r.IsMember, r.JoinedAt = true, at
	}
	for k, pos := range s.reads {
		if pos.msgID != "" {
			r := get(k)
			r.ReadCreated, r.ReadMessageID = pos.at, pos.msgID
		}
	}
	for _, m := range s.messages {
		get(member{m.ConversationID, m.Contact.ID}).OwnCount++
	}
	out := make([]storecopy.Member, 0, len(rows))
	for k, r := range rows {
		if r.ReadMessageID != "" {
			pos := s.reads[k]
			for _, id := range s.convs[k.conversation].msgs {
				if m := s.messages[id]; !pos.after(m) {
					r.ReadCount++
					if m.Contact.ID == k.contact {
						r.OwnReadCount++
					}
				}
			}
		}
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b storecopy.Member) int {
		return cmp.Or(strings.Compare(a.ConversationID, b.ConversationID), strings.Compare(a.ContactID, b.ContactID))
	})
	return out
}

// dump is a Snapshot: the rows, copied.
type dump struct {
	in   storecopy.Installation
	rows [storecopy.IdempotencyKeys + 1]storecopy.Batch
}

func (d *dump) Installation(ctx context.Context) (storecopy.Installation, error) {
	return d.in, ctx.Err()
}

func (d *dump) Count(ctx context.Context, k storecopy.Kind) (int64, error) {
	if k < 0 || int(k) >= len(d.rows) {
		return 0, nil
	}
	b := d.rows[k]
	b.Kind = k
	return int64(b.Len()), ctx.Err()
}

func (d *dump) Rows(ctx context.Context, k storecopy.Kind, size int) iter.Seq2[*storecopy.Batch, error] {
	return func(yield func(*storecopy.Batch, error) bool) {
		if k < 0 || int(k) >= len(d.rows) {
			return
		}
		all := d.rows[k]
		all.Kind = k
		n := all.Len()
		size = max(size, 1)
		for start := 0; start < n; start += size {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			end := min(n, start+size)
			b := &storecopy.Batch{Kind: k}
			switch k {
			case storecopy.Contacts:
				b.Contacts = slices.Clone(all.Contacts[start:end])
			case storecopy.Conversations:
				b.Conversations = slices.Clone(all.Conversations[start:end])
			case storecopy.Members:
				b.Members = slices.Clone(all.Members[start:end])
			case storecopy.Messages:
				b.Messages = slices.Clone(all.Messages[start:end])
			case storecopy.ReactionNames:
				b.ReactionNames = slices.Clone(all.ReactionNames[start:end])
			case storecopy.Reactions:
				b.Reactions = slices.Clone(all.Reactions[start:end])
			case storecopy.Attachments:
				b.Attachments = slices.Clone(all.Attachments[start:end])
			case storecopy.Revisions:
				b.Revisions = slices.Clone(all.Revisions[start:end])
			case storecopy.IdempotencyKeys:
				for _, r := range all.IdempotencyKeys[start:end] {
					b.IdempotencyKeys = append(b.IdempotencyKeys, copyRecord(r))
				}
			}
			if !yield(b, nil) {
				return
			}
		}
	}
}

func (d *dump) Close() error { return nil }

// SetInstallation gives the Store the installation id and epoch of in
// (storecopy.Sink).
func (s *store) SetInstallation(ctx context.Context, in storecopy.Installation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.installation, s.epoch = in.ID, in.Epoch
	return nil
}

// Uncopied returns the number of the Store's rows that no copy carries
// (storecopy.Sink): events, handler positions, upload reservations and
// pending deletions.
func (s *store) Uncopied(ctx context.Context) (map[string]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return map[string]int64{"events": int64(len(s.out.events)), "handler positions": int64(len(s.out.cursors)),
		"upload reservations": int64(len(s.reserved)), "pending deletions": int64(len(s.pending))}, nil
}

// Load stores the rows of b that it does not hold (storecopy.Sink),
// all or none: a contact whose username another contact has fails it
// with an error matching messaging.ErrConflict. The counters of
// conversations, members and messages are the Store's own, counted from
// its rows.
func (s *store) Load(ctx context.Context, b *storecopy.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range b.Conversations {
		if strings.Contains(c.ID, "/") { // a thread's conversation (storecopy.Message)
			return noThreads("memstore.Load", "the source holds threads")
		}
	}
	if b.Kind == storecopy.Contacts {
		for _, c := range b.Contacts {
			if other, ok := s.usernames[c.Username]; ok && other != c.ID {
				return conflict("the username " + c.Username + " is taken by another contact")
			}
		}
	}
	switch b.Kind {
	case storecopy.Contacts:
		for _, c := range b.Contacts {
			if _, ok := s.contacts[c.ID]; !ok {
				c.CreatedAt, c.LastActiveAt = norm(c.CreatedAt), norm(c.LastActiveAt)
				s.contacts[c.ID] = c
				s.usernames[c.Username] = c.ID
			}
		}
	case storecopy.Conversations:
		for _, c := range b.Conversations {
			s.conversation(c.ID, c.CreatedAt)
		}
	case storecopy.Members:
		for _, m := range b.Members {
			k := member{m.ConversationID, m.ContactID}
			if _, ok := s.members[k]; !ok && m.IsMember {
				s.members[k] = norm(m.JoinedAt)
			}
			if _, ok := s.reads[k]; !ok && m.ReadMessageID != "" {
				s.reads[k] = readPos{at: norm(m.ReadCreated), msgID: m.ReadMessageID}
			}
		}
	case storecopy.Messages:
		for _, m := range b.Messages {
			if _, ok := s.messages[m.ID]; ok {
				continue
			}
			s.messages[m.ID] = &messaging.Message{
				ID: m.ID, ConversationID: m.ConversationID, Contact: messaging.Contact{ID: m.ContactID}, Text: m.Text,
				ReadAt: norm(m.ReadAt), CreatedAt: norm(m.CreatedAt), UpdatedAt: norm(m.UpdatedAt),
			}
			c := s.conversation(m.ConversationID, m.CreatedAt)
			c.msgs = append(c.msgs, m.ID)
		}
	case storecopy.ReactionNames, storecopy.Reactions:
		s.loadReactions(b)
	case storecopy.Attachments:
		for _, a := range b.Attachments {
			if _, ok := s.atts[a.ID]; ok {
				continue
			}
			a.CreatedAt = norm(a.CreatedAt)
			s.atts[a.ID] = a
			if a.MessageID != "" {
				s.linked[a.MessageID] = append(s.linked[a.MessageID], a.ID)
			}
		}
	case storecopy.Revisions:
		for _, r := range b.Revisions {
			if _, ok := s.revisions[r.ID]; !ok {
				r.CreatedAt = norm(r.CreatedAt)
				s.addRevision(r)
			}
		}
	case storecopy.IdempotencyKeys:
		for _, r := range b.IdempotencyKeys {
			k := keyID{r.Scope, r.Key}
			if _, ok := s.keys[k]; !ok {
				r = copyRecord(r)
				r.CreatedAt, r.ExpiresAt = norm(r.CreatedAt), norm(r.ExpiresAt)
				s.keys[k] = r
			}
		}
	}
	return nil
}

// noThreads is the error of a copy from or into a memstore of a store with
// threads, which memstore's rows do not carry yet: a refusal, rather than
// replies copied as plain messages or threads as conversations.
func noThreads(op, what string) error {
	return &messaging.Error{Kind: messaging.ErrUnimplemented, Op: op,
		Message: what + ", which a copy from or into memstore does not carry yet; nothing of them was copied"}
}
