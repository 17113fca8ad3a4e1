package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// Store is what a backend implements: both repositories, and the outbox
// their writes fill, over the same storage.
type Store interface {
	driver.MessageStore
	driver.AttachmentStore
	driver.EventStore
}

// RunConformanceTests runs the repository contract against stores made by
// newStore; each call must return a fresh, empty store (cleanup via
// t.Cleanup).
func RunConformanceTests(t *testing.T, newStore func(t *testing.T) Store) {
	t.Helper()
	groups := []struct {
		name  string
		tests []test
	}{
		{"Contacts", contactTests},
		{"Messages", messageTests},
		{"Lists", listTests},
		{"Reactions", reactionTests},
		{"Reactors", reactorTests},
		{"Links", linkTests},
		{"Updates", updateTests},
		{"Deletes", deleteTests},
		{"Attachments", attachmentTests},
		{"Concurrency", concurrencyTests},
		{"Conversations", conversationTests},
		{"Events", eventTests},
		{"Service", serviceTests},
		{"Keys", keyTests},
		{"Revisions", revisionTests},
		{"NewAttachment", attachTests},
		{"Installation", installationTests},
		{"Threads", threadTests},
		{"Search", searchTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					h := newHarness(t, newStore(t))
					h.another = func() Store { return newStore(t) }
					tc.run(t, h)
				})
			}
		})
	}
}

// RunSearchTests runs the Search group of the repository contract alone,
// for a store in a configuration of its own (newStore as for
// RunConformanceTests).
func RunSearchTests(t *testing.T, newStore func(t *testing.T) Store) {
	t.Helper()
	for _, tc := range searchTests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newHarness(t, newStore(t)))
		})
	}
}

// test is one subtest of the repository suite.
type test struct {
	name string
	run  func(t *testing.T, h *harness)
}

// harness holds a fresh store and makes fixtures in it.
type harness struct {
	t   *testing.T
	s   Store
	ctx context.Context
	// another returns another fresh store of the same backend; nil when
	// the suite was given none (RunSearchTests).
	another func() Store
}

func newHarness(t *testing.T, s Store) *harness {
	t.Helper()
	require.NotNil(t, s, "newStore returned nil")
	return &harness{t: t, s: s, ctx: t.Context()}
}

// base is the time fixtures are made at: UTC, microsecond precision.
var base = time.Date(2025, 3, 4, 5, 6, 7, 123456000, time.UTC)

// at returns base plus sec seconds.
func at(sec int) time.Time { return base.Add(time.Duration(sec) * time.Second) }

// contact stores a contact with every field set.
func (h *harness) contact(username string) messaging.Contact {
	h.t.Helper()
	c := messaging.Contact{
		ID:          ids.NewAt(ids.Contact, base),
		Username:    username,
		PhoneNumber: "+1 555 0100",
		AvatarURL:   "https://example.com/avatars/" + username + ".png",
		CreatedAt:   base,
	}
	require.NoError(h.t, h.s.PutContact(h.ctx, c), "PutContact %q", username)
	return c
}

// newMessage returns a message (not stored) from sender in conv, created at
// created; Contact holds the sender's ID only, as the Service passes it.
func newMessage(conv string, sender messaging.Contact, created time.Time) messaging.Message {
	id := ids.NewAt(ids.Message, created)
	return messaging.Message{
		ID:             id,
		ConversationID: conv,
		Contact:        messaging.Contact{ID: sender.ID},
		Text:           "message " + id,
		CreatedAt:      created,
	}
}

// message stores a message from sender in conv, linking atts, and returns
// it as GetMessage should (with the full contact).
func (h *harness) message(conv string, sender messaging.Contact, created time.Time, atts ...string) messaging.Message {
	h.t.Helper()
	m := newMessage(conv, sender, created)
	require.NoError(h.t, h.s.CreateMessage(h.ctx, m, atts, nil), "CreateMessage")
	m.Contact = sender
	return m
}

// newAttachment returns an attachment (not stored) with every field set.
func newAttachment(conv, uploaderID string, created time.Time) messaging.Attachment {
	id := ids.NewAt(ids.Attachment, created)
	sum := sha256.Sum256([]byte(id))
	return messaging.Attachment{
		ID:             id,
		ConversationID: conv,
		UploaderID:     uploaderID,
		Filename:       "file-" + id[len(id)-6:] + ".txt",
		FileType:       "text/plain; charset=utf-8",
		FileSize:       int64(len(id)) * 1000,
		SHA256:         hex.EncodeToString(sum[:]),
		Key:            attachments.KeyPrefix + id,
		CreatedAt:      created,
	}
}

// attachment stores an attachment of conv (or none) uploaded by uploader.
func (h *harness) attachment(conv string, uploader messaging.Contact, created time.Time) messaging.Attachment {
	h.t.Helper()
	a := newAttachment(conv, uploader.ID, created)
	require.NoError(h.t, h.s.CreateAttachment(h.ctx, a, nil), "CreateAttachment")
	return a
}

// get returns the message, which must exist.
func (h *harness) get(id string) messaging.Message {
	h.t.Helper()
	m, err := h.s.GetMessage(h.ctx, id)
	require.NoError(h.t, err, "GetMessage %s", id)
	return m
}

// getAttachment returns the attachment, which must exist.
func (h *harness) getAttachment(id string) messaging.Attachment {
	h.t.Helper()
	a, err := h.s.GetAttachment(h.ctx, id)
	require.NoError(h.t, err, "GetAttachment %s", id)
	return a
}

// update applies ch, which must succeed, and checks that it returned the
// message as GetMessage does after it.
func (h *harness) update(id string, ch driver.MessageChange) messaging.Message {
	h.t.Helper()
	m, err := h.s.UpdateMessage(h.ctx, id, ch)
	require.NoError(h.t, err, "UpdateMessage %s", id)
	assertMessage(h.t, h.get(id), m, "UpdateMessage must return the message as GetMessage does after it")
	return m
}

// linked returns a as linked to m.
func linked(a messaging.Attachment, m messaging.Message) messaging.Attachment {
	a.MessageID, a.ConversationID = m.ID, m.ConversationID
	return a
}

// normMessage makes nil and empty slices alike, for comparison.
func normMessage(m messaging.Message) messaging.Message {
	if m.Reactions == nil {
		m.Reactions = []messaging.Reaction{}
	}
	if m.Attachments == nil {
		m.Attachments = []messaging.Attachment{}
	}
	return m
}

// assertMessage checks that got is want, field by field.
func assertMessage(tb testing.TB, want, got messaging.Message, msgAndArgs ...any) bool {
	tb.Helper()
	return assert.Equal(tb, normMessage(want), normMessage(got), msgAndArgs...)
}

// assertUTC checks that t is in UTC.
func assertUTC(tb testing.TB, t time.Time, field string) {
	tb.Helper()
	assert.Equal(tb, time.UTC, t.Location(), "%s must be returned in UTC", field)
}

// messageIDs returns the ids of ms.
func messageIDs(ms []messaging.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// attachmentIDs returns the ids of as.
func attachmentIDs(as []messaging.Attachment) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.ID
	}
	return out
}

// item is the position of a list item.
type item struct {
	id string
	at time.Time
}

func (it item) cursor() *driver.Cursor {
	return &driver.Cursor{Time: it.at, ID: it.id}
}

// newestFirst returns the ids of items sorted by (at, id) descending.
func newestFirst(items []item) []string {
	s := slices.Clone(items)
	slices.SortFunc(s, func(a, b item) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		switch {
		case a.id > b.id:
			return -1
		case a.id < b.id:
			return 1
		}
		return 0
	})
	out := make([]string, len(s))
	for i, it := range s {
		out[i] = it.id
	}
	return out
}

// tiedItems returns n positions, oldest first, starting at start: each
// three in a row share a CreatedAt, and the ids are made in a shuffled
// order, so that neither the order of ids nor the order of insertion tells
// the order of the list.
func tiedItems(prefix string, start time.Time, n int, seed uint64) []item {
	items := make([]item, n)
	for i := range items {
		items[i].at = start.Add(time.Duration(i/3) * time.Second)
	}
	r := rand.New(rand.NewPCG(seed, seed))
	order := r.Perm(n)
	var made []string
	for range n {
		made = append(made, ids.NewAt(prefix, start))
	}
	// Within a group of equal times the ids must still sort in list order
	// for the expectations below; across groups they are shuffled.
	for i, j := range order {
		items[i].id = made[j]
	}
	for g := 0; g < n; g += 3 {
		grp := items[g:min(g+3, n)]
		idsOf := make([]string, len(grp))
		for k := range grp {
			idsOf[k] = grp[k].id
		}
		slices.Sort(idsOf)
		for k := range grp {
			grp[k].id = idsOf[k]
		}
	}
	return items
}

// shuffled returns a copy of items in a random (seeded) order.
func shuffled[T any](items []T, seed uint64) []T {
	s := slices.Clone(items)
	r := rand.New(rand.NewPCG(seed, seed+1))
	r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s
}

// itoa is strconv.Itoa.
func itoa(i int) string { return strconv.Itoa(i) }

// Limits returns a MessageChange.Check with the messaging Service's rule on
// counts, for tests that drive a Repository directly: a change may not take
// a message beyond names distinct reactions or atts attachments (0: no
// limit), unless it adds none. Its error matches messaging.ErrInvalid.
func Limits(names, atts int) func(before, after driver.MessageCounts) error {
	return func(before, after driver.MessageCounts) error {
		if names > 0 && after.ReactionNames > names && after.ReactionNames > before.ReactionNames {
			return fmt.Errorf("more than %d reaction names: %w", names, messaging.ErrInvalid)
		}
		if atts > 0 && after.Attachments > atts && after.Attachments > before.Attachments {
			return fmt.Errorf("more than %d attachments: %w", atts, messaging.ErrInvalid)
		}
		return nil
	}
}

// Storage returns s as a host holds a backend, for messaging.New: its
// Driver method returns s. Tests use it to hand the services a Store
// whose methods they wrap.
func Storage(s driver.Store) messaging.Storage { return storage{s} }

type storage struct{ s driver.Store }

func (st storage) Driver() driver.Store { return st.s }
