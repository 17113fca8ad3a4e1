package events

// Queued returns how many events wait in s's queue for its reader.
func Queued(s *Subscription) int { return len(s.ch) }

// Holds reports whether f holds the Policy's answer for the contact and
// the conversation.
func Holds(f *Feed, contactID, conversationID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.viewers[contactID]
	return v != nil && v.sees[conversationID] != nil
}
