package events

import "time"

// Queued returns how many events wait in s's queue for its reader.
func Queued(s *Subscription) int { return len(s.ch) }

// Floor returns the seq up to which s has considered every event; it may
// be called only between calls of s.Next.
func Floor(s *Subscription) int64 { return s.floor }

// Holds reports whether f holds the Policy's answer for the contact and
// the conversation.
func Holds(f *Feed, contactID, conversationID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.viewers[contactID]
	return v != nil && v.sees[conversationID] != nil
}

// Expiry returns when f's answer for the contact and the conversation
// expires (zero when it holds none).
func Expiry(f *Feed, contactID, conversationID string) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v := f.viewers[contactID]; v != nil && v.sees[conversationID] != nil {
		return v.sees[conversationID].expiry()
	}
	return time.Time{}
}

// Admits reports whether f holds a "yes" of the Policy for the contact
// and the conversation.
func Admits(f *Feed, contactID, conversationID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.viewers[contactID]
	if v == nil || v.sees[conversationID] == nil {
		return false
	}
	a := v.sees[conversationID]
	return a.done && a.err == nil && a.ok
}

// Untold returns how many membership changes and typing indicators wait
// for f's next wake-up to the other instances.
func Untold(f *Feed) (members, typings int) {
	f.changedMu.Lock()
	defer f.changedMu.Unlock()
	return len(f.changed), len(f.typings)
}
