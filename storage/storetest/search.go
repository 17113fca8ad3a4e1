package storetest

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/internal/search"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// searchTests check MessageStore.SearchMessages: every backend finds the
// same messages for the same query, whatever its own tokenizer, stop
// words and minimum word length.
var searchTests = []test{
	{"words", testSearchWords},
	{"edited_by_new_text_only", testSearchEdited},
	{"deleted_never", testSearchDeleted},
	{"cursors", testSearchCursors},
	{"scope", testSearchScope},
	{"replies", testSearchReplies},
}

// testSearchReplies: replies are found, with their ParentID, and a
// deleted root kept as a tombstone is not (on a store of threads).
func testSearchReplies(t *testing.T, h *harness) {
	if _, ok := h.s.(driver.ThreadStore); !ok {
		return // no replies on this store: nothing more to check
	}
	alice := h.contact("alice")
	root := newMessage("c", alice, at(1))
	root.Text = "harbour trip"
	require.NoError(t, h.s.CreateMessage(h.ctx, root, nil, nil))
	reply := newMessage("c", alice, at(2))
	reply.Text = "harbour at noon"
	reply.ParentID = root.ID
	require.NoError(t, h.s.CreateMessage(h.ctx, reply, nil, nil))
	all := driver.Scope{All: true}
	got, _, err := h.s.SearchMessages(h.ctx, searchQuery(t, "harb", all, driver.Window{Limit: 10}))
	require.NoError(t, err)
	require.Equal(t, []string{reply.ID, root.ID}, messageIDs(got))
	assert.Equal(t, root.ID, got[0].ParentID, "a reply carries its parent")

	// A member finds the replies of its conversations, whether it is in
	// few (a store may list them) or in many (a store may probe each
	// row's membership); a stranger finds none.
	bob, carol := h.contact("bob"), h.contact("carol")
	require.NoError(t, h.s.AddMember(h.ctx, "c", bob.ID, at(3)))
	require.NoError(t, h.s.AddMember(h.ctx, "c", carol.ID, at(3)))
	for i := range 40 {
		require.NoError(t, h.s.AddMember(h.ctx, "many-"+itoa(i), carol.ID, at(3)))
	}
	for _, who := range []messaging.Contact{bob, carol} {
		assert.Equal(t, []string{reply.ID, root.ID}, h.searchIDs("harbour", driver.Scope{MemberID: who.ID}), "a member: %s", who.Username)
	}
	assert.Empty(t, h.searchIDs("harbour", driver.Scope{MemberID: h.contact("dave").ID}), "a stranger")
	_, err = h.s.DeleteMessage(h.ctx, root.ID, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{reply.ID}, h.searchIDs("harbour", all), "a tombstone is not found")
}

// searchQuery returns the SearchQuery of the query q over scope, for a
// page of limit.
func searchQuery(t *testing.T, q string, scope driver.Scope, w driver.Window) driver.SearchQuery {
	t.Helper()
	p, err := search.Parse(q)
	require.NoError(t, err, "query %q", q)
	return driver.SearchQuery{Scope: scope, Window: w, Words: p.Words, Prefix: p.Prefix}
}

// searchIDs returns the ids of the first page of up to 100 messages of the
// query q over scope, checking that there are no more.
func (h *harness) searchIDs(q string, scope driver.Scope) []string {
	h.t.Helper()
	got, more, err := h.s.SearchMessages(h.ctx, searchQuery(h.t, q, scope, driver.Window{Limit: 100}))
	require.NoError(h.t, err, "SearchMessages %q", q)
	assert.False(h.t, more, "query %q: more", q)
	return messageIDs(got)
}

func testSearchWords(t *testing.T, h *harness) {
	alice := h.contact("alice")
	texts := []string{
		"Meeting notes for Friday",               // 0
		"Die Straße ist GRÜN",                    // 1
		"Élève à l'école, café crème",            // 2
		"ПРИВЕТ мир, Ёлка",                       // 3
		"ΚΑΛΗΜΈΡΑ οδός",                          // 4
		"it's room 42b; e-mail: bob@example.com", // 5
		"a the of an I",                          // 6: stop words, short words
		"meet me at the CAFE",                    // 7
		"東京タワー 行こう",                              // 8
		"x",                                      // 9
		"Les Élèves de l'ÉCOLE — ÇA VA",          // 10
		"ĉu vi ŝatas ĉokoladon? Ωμέγα",           // 11
	}
	msgs := make([]messaging.Message, len(texts))
	for i, text := range texts {
		m := newMessage("c", alice, at(i))
		m.Text = text
		require.NoError(t, h.s.CreateMessage(h.ctx, m, nil, nil))
		msgs[i] = m
	}
	h.message("c", alice, at(100)) // "message msg_…": noise
	tests := []struct {
		q    string
		want []int // oldest first
	}{
		{"meet", []int{0, 7}},
		{"meeting", []int{0}},
		{"MEETING Notes", []int{0}},
		{"notes meet", []int{0}},
		{"note fr", nil}, // earlier words are whole words
		{"friday meetings", nil},
		{"strasse", []int{1}},
		{"STRASSE grün", []int{1}},
		{"grun", []int{1}},
		{"straße ist", []int{1}},
		{"ecole", []int{2, 10}},
		{"École", []int{2, 10}},
		{"eleve", []int{2, 10}},
		{"eleves ecole", []int{10}},
		{"ca va", []int{10}},
		{"ÇA", []int{2, 7, 10}}, // "ca" begins "cafe"
		{"CAFÉ", []int{2, 7}},
		{"cafe creme", []int{2}},
		{"привет", []int{3}},
		{"ПРИВ", []int{3}},
		{"елка", []int{3}},
		{"ёлка мир", []int{3}},
		{"καλημέρα", []int{4}},
		{"ΟΔΟΣ", []int{4}},
		{"οδό", []int{4}},
		{"ωμεγα", []int{11}},
		{"cu chokoladon", nil},
		{"ĉu ĉokolado", []int{11}},
		{"bob@example.com", []int{5}},
		{"e-mail", []int{5}},
		{"42B", []int{5}},
		{"42", []int{5}},
		{"it's", []int{5}},
		{"the", []int{6, 7}},
		{"a", []int{2, 6, 7}},
		{"i", []int{1, 5, 6}},
		{"an", []int{6}},
		{"of the", []int{6}},
		{"the a", []int{6, 7}},
		{"東京タワー", []int{8}},
		{"東京", []int{8}},
		{"行こう", []int{8}},
		{"x", []int{9}},
		{"the x", nil},
		{"zzz", nil},
		{"message", []int{}}, // the noise, checked below
	}
	for _, tt := range tests {
		got := h.searchIDs(tt.q, driver.Scope{All: true})
		if tt.q == "message" {
			assert.Len(t, got, 1, "query %q", tt.q)
			continue
		}
		want := []string{}
		for _, i := range slices.Backward(tt.want) {
			want = append(want, msgs[i].ID)
		}
		if !assert.Equal(t, want, nonNil(got), "query %q", tt.q) {
			for _, id := range got {
				for i, m := range msgs {
					if m.ID == id {
						t.Logf("query %q found %d: %q", tt.q, i, texts[i])
					}
				}
			}
		}
	}
	// A result is the message as GetMessage returns it.
	got, _, err := h.s.SearchMessages(h.ctx, searchQuery(t, "friday", driver.Scope{ConversationIDs: []string{"c"}}, driver.Window{Limit: 5}))
	require.NoError(t, err)
	require.Len(t, got, 1)
	assertMessage(t, h.get(msgs[0].ID), got[0])
}

func testSearchEdited(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m := newMessage("c", alice, at(1))
	m.Text = "alpha beta"
	require.NoError(t, h.s.CreateMessage(h.ctx, m, nil, nil))
	all := driver.Scope{All: true}
	assert.Equal(t, []string{m.ID}, h.searchIDs("alpha", all))
	text := "Gamma delta"
	h.update(m.ID, driver.MessageChange{Text: &text, RevisionID: ids.NewAt(ids.Revision, at(2)), UpdatedAt: at(2)})
	assert.Empty(t, h.searchIDs("alpha", all), "the old text is not found")
	assert.Empty(t, h.searchIDs("beta", all), "the old text is not found")
	assert.Equal(t, []string{m.ID}, h.searchIDs("gamma", all), "the new text is found")
	assert.Equal(t, []string{m.ID}, h.searchIDs("delta gam", all), "the new text is found")
	// A change that leaves the text keeps it found.
	read := true
	h.update(m.ID, driver.MessageChange{Read: &read, ReadAt: at(3)})
	assert.Equal(t, []string{m.ID}, h.searchIDs("gamma", all))
}

func testSearchDeleted(t *testing.T, h *harness) {
	alice := h.contact("alice")
	m1 := newMessage("c", alice, at(1))
	m1.Text = "omega one"
	m2 := newMessage("c", alice, at(2))
	m2.Text = "omega two"
	for _, m := range []messaging.Message{m1, m2} {
		require.NoError(t, h.s.CreateMessage(h.ctx, m, nil, nil))
	}
	all := driver.Scope{All: true}
	assert.Equal(t, []string{m2.ID, m1.ID}, h.searchIDs("omega", all))
	_, err := h.s.DeleteMessage(h.ctx, m2.ID, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{m1.ID}, h.searchIDs("omega", all))
	assert.Empty(t, h.searchIDs("two", all))
	assert.Equal(t, []string{m1.ID}, h.searchIDs("omega", driver.Scope{ConversationIDs: []string{"c"}}))
}

// testSearchCursors pages through 25 matches (tied times, other
// conversations and messages that do not match in between) both ways.
func testSearchCursors(t *testing.T, h *harness) {
	alice := h.contact("alice")
	items := tiedItems(ids.Message, at(0), 25, 5)
	for i, it := range shuffled(items, 6) {
		m := newMessage("c", alice, it.at)
		m.ID = it.id
		m.Text = "the Report of week " + itoa(i)
		require.NoError(t, h.s.CreateMessage(h.ctx, m, nil, nil))
		other := newMessage("c", alice, it.at)
		other.Text = "weekly notes" // "week" is whole but "rep" not there
		require.NoError(t, h.s.CreateMessage(h.ctx, other, nil, nil))
	}
	for _, scope := range []driver.Scope{{All: true}, {ConversationIDs: []string{"c"}}} {
		testCursors(t, items, func(t *testing.T, limit int, after, before *driver.Cursor) ([]string, bool) {
			t.Helper()
			got, more, err := h.s.SearchMessages(h.ctx, searchQuery(t, "week rep", scope, driver.Window{Limit: limit, After: after, Before: before}))
			require.NoError(t, err)
			return messageIDs(got), more
		})
	}
}

// testSearchScope: a caller sees the matches of its Scope only: those of
// its memberships, of a list of conversations, of both, or of all.
func testSearchScope(t *testing.T, h *harness) {
	alice, bob := h.contact("alice"), h.contact("bob")
	byConv := map[string][]string{}
	for i, conv := range []string{"a", "b", "c", "a", "b", "c", "d"} {
		m := newMessage(conv, alice, at(i))
		m.Text = "Quarterly plan " + conv
		require.NoError(t, h.s.CreateMessage(h.ctx, m, nil, nil))
		byConv[conv] = append([]string{m.ID}, byConv[conv]...)
	}
	require.NoError(t, h.s.AddMember(h.ctx, "a", bob.ID, at(10)))
	require.NoError(t, h.s.AddMember(h.ctx, "c", bob.ID, at(10)))
	require.NoError(t, h.s.RemoveMember(h.ctx, "c", bob.ID))
	newest := func(convs ...string) []string {
		var out []string
		for _, c := range convs {
			out = append(out, byConv[c]...)
		}
		slices.Sort(out)
		slices.Reverse(out) // ids are time-ordered here
		return out
	}
	for _, tt := range []struct {
		name  string
		scope driver.Scope
		want  []string
	}{
		{"member", driver.Scope{MemberID: bob.ID}, newest("a")},
		{"ids", driver.Scope{ConversationIDs: []string{"b", "d"}}, newest("b", "d")},
		{"member_and_ids", driver.Scope{MemberID: bob.ID, ConversationIDs: []string{"d"}}, newest("a", "d")},
		{"all", driver.Scope{All: true, MemberID: bob.ID}, newest("a", "b", "c", "d")},
		{"none", driver.Scope{ConversationIDs: []string{"nowhere"}}, []string{}},
		{"member_of_none", driver.Scope{MemberID: alice.ID}, []string{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, nonNil(h.searchIDs("quarterly PL", tt.scope)))
		})
	}
	// A page of the member's scope, then the next.
	got, more, err := h.s.SearchMessages(h.ctx, searchQuery(t, "plan", driver.Scope{MemberID: bob.ID}, driver.Window{Limit: 1}))
	require.NoError(t, err)
	assert.Equal(t, newest("a")[:1], messageIDs(got))
	assert.True(t, more)
	got, more, err = h.s.SearchMessages(h.ctx, searchQuery(t, "plan", driver.Scope{MemberID: bob.ID}, driver.Window{Limit: 1, After: &driver.Cursor{Time: got[0].CreatedAt, ID: got[0].ID}}))
	require.NoError(t, err)
	assert.Equal(t, newest("a")[1:], messageIDs(got))
	assert.False(t, more)
}
