package memstore

import (
	"context"
	"slices"
	"strconv"

	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

func attPos(a messaging.Attachment) driver.Cursor {
	return driver.Cursor{Time: a.CreatedAt, ID: a.ID}
}

// CreateAttachment stores a new attachment row. An existing ID is an
// error matching messaging.ErrConflict.
func (s *store) CreateAttachment(ctx context.Context, a messaging.Attachment, rec driver.Recorder) error {
	return s.createAttachment(ctx, a, rec, nil, "")
}

// CreateAttachmentKeyed is CreateAttachment that also stores done, the
// record of an idempotency key; on any error neither is stored.
func (s *store) CreateAttachmentKeyed(ctx context.Context, a messaging.Attachment, rec driver.Recorder, done driver.IdempotencyRecord) error {
	return s.createAttachment(ctx, a, rec, &done, "")
}

// createAttachment stores a and done, and removes the reservation
// reserved unless "".
func (s *store) createAttachment(ctx context.Context, a messaging.Attachment, rec driver.Recorder, done *driver.IdempotencyRecord, reserved string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.reservedFor(reserved); err != nil {
		return err
	}
	if _, ok := s.atts[a.ID]; ok {
		return conflict("an attachment with the id " + strconv.Quote(a.ID) + " already exists")
	}
	if err := s.holds(done); err != nil {
		return err
	}
	defer s.keep(done)
	delete(s.reserved, reserved)
	a.CreatedAt = norm(a.CreatedAt)
	s.atts[a.ID] = a
	if a.ConversationID != "" {
		s.conversation(a.ConversationID, a.CreatedAt)
	}
	if a.MessageID != "" {
		s.linked[a.MessageID] = append(s.linked[a.MessageID], a.ID)
	}
	s.record(rec, driver.Change{Attachments: []messaging.Attachment{a}})
	return nil
}

// GetAttachment returns the attachment, or an error matching
// messaging.ErrNotFound.
func (s *store) GetAttachment(ctx context.Context, id string) (messaging.Attachment, error) {
	if err := ctx.Err(); err != nil {
		return messaging.Attachment{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.atts[id]
	if !ok {
		return messaging.Attachment{}, notFound("attachment", id)
	}
	return a, nil
}

// ListAttachments returns a page of the attachments q selects, newest
// first, and whether more exist in the direction of travel: those of the
// conversations q.ConversationIDs (of every conversation when q.All), and,
// when q.UploaderID is set, those that contact uploaded in no conversation.
// A Limit below 1 is an error matching messaging.ErrInvalid.
func (s *store) ListAttachments(ctx context.Context, q driver.AttachmentQuery) ([]messaging.Attachment, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []messaging.Attachment
	for _, a := range s.atts {
		var in bool
		if a.ConversationID == "" {
			in = q.UploaderID != "" && a.UploaderID == q.UploaderID
		} else {
			in = q.All || slices.Contains(q.ConversationIDs, a.ConversationID) || s.isMember(a.ConversationID, q.MemberID)
		}
		if in {
			all = append(all, a)
		}
	}
	sortNewestFirst(all, attPos)
	sel, more, err := page(all, attPos, q.Limit, q.After, q.Before)
	if err != nil {
		return nil, false, err
	}
	return slices.Clone(sel), more, nil
}

// RenameAttachment sets the file name and returns the updated row, or an
// error matching messaging.ErrNotFound.
func (s *store) RenameAttachment(ctx context.Context, id, filename string, rec driver.Recorder) (messaging.Attachment, error) {
	return s.renameAttachment(ctx, id, filename, rec, nil)
}

// RenameAttachmentKeyed is RenameAttachment that also stores done, the
// record of an idempotency key; on any error neither changes.
func (s *store) RenameAttachmentKeyed(ctx context.Context, id, filename string, rec driver.Recorder, done driver.IdempotencyRecord) (messaging.Attachment, error) {
	return s.renameAttachment(ctx, id, filename, rec, &done)
}

func (s *store) renameAttachment(ctx context.Context, id, filename string, rec driver.Recorder, done *driver.IdempotencyRecord) (messaging.Attachment, error) {
	if err := ctx.Err(); err != nil {
		return messaging.Attachment{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.atts[id]
	if !ok {
		return messaging.Attachment{}, notFound("attachment", id)
	}
	if err := s.holds(done); err != nil {
		return messaging.Attachment{}, err
	}
	a.Filename = filename
	s.atts[id] = a
	s.record(rec, driver.Change{Attachments: []messaging.Attachment{a}})
	s.keep(done)
	return a, nil
}

// DeleteAttachment removes the row (and so the attachment from its
// message), records its Key as a pending deletion and returns the row, or
// an error matching messaging.ErrNotFound.
func (s *store) DeleteAttachment(ctx context.Context, id string, rec driver.Recorder) (messaging.Attachment, error) {
	if err := ctx.Err(); err != nil {
		return messaging.Attachment{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.atts[id]
	if !ok {
		return messaging.Attachment{}, notFound("attachment", id)
	}
	delete(s.atts, id)
	if a.MessageID != "" {
		s.linked[a.MessageID] = slices.DeleteFunc(s.linked[a.MessageID], func(x string) bool { return x == id })
	}
	s.pending = append(s.pending, a.Key)
	c := driver.Change{Removed: []messaging.Attachment{a}}
	if m, ok := s.messages[a.MessageID]; ok {
		v := s.view(m)
		c.Message = &v
	}
	s.record(rec, c)
	return a, nil
}

// PendingDeletions returns up to limit keys of pending deletions, oldest
// first; all of them when limit < 1.
func (s *store) PendingDeletions(ctx context.Context, limit int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.pending)
	if limit > 0 {
		n = min(n, limit)
	}
	return slices.Clone(s.pending[:n]), nil
}

// ForgetDeletion removes key from the pending deletions; a key that is not
// pending is no error.
func (s *store) ForgetDeletion(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = slices.DeleteFunc(s.pending, func(k string) bool { return k == key })
	return nil
}

// UploadedBytes returns the sum of the sizes of the attachments that
// uploaderID uploaded and of its reservations (a walk of every
// attachment: memstore is for tests).
func (s *store) UploadedBytes(ctx context.Context, uploaderID string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, a := range s.atts {
		if a.UploaderID == uploaderID {
			n += a.FileSize
		}
	}
	for _, r := range s.reserved {
		if r.UploaderID == uploaderID {
			n += r.FileSize
		}
	}
	return n, nil
}

// KeysInUse reports, for each of keys, whether it belongs to an attachment
// row or a pending deletion.
func (s *store) KeysInUse(ctx context.Context, keys []string) (map[string]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	used := make(map[string]bool, len(keys))
	for _, k := range keys {
		used[k] = slices.Contains(s.pending, k)
	}
	for _, r := range s.reserved {
		if _, asked := used[r.Key]; asked {
			used[r.Key] = true
		}
	}
	for _, a := range s.atts {
		if _, asked := used[a.Key]; asked {
			used[a.Key] = true
		}
	}
	return used, nil
}
