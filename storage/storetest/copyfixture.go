package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/search"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
)

// copyBase is the time of the copy fixture's first row.
var copyBase = time.Date(2026, 3, 1, 9, 0, 0, 123456000, time.UTC)

func copyAt(s int) time.Time { return copyBase.Add(time.Duration(s) * time.Second) }

// fixture is what fill stored, for view to read back.
type fixture struct {
	contacts []string // ids
	convs    []string
	messages []string
	keys     [][2]string // in-force idempotency keys (scope, key)
	expired  [2]string
}

// fill stores a little of everything in s, and the files of its
// attachments in files; n messages (at least 8) in its conversations.
func fill(t testing.TB, s copyStore, files attachments.BlobStore, n int) fixture {
	t.Helper()
	ctx := context.Background()
	var f fixture
	for i, name := range []string{"alice", "bob", "carol", "dave"} {
		c := messaging.Contact{ID: fmt.Sprintf("ctc_%02d", i), Username: name, PhoneNumber: "+3361234567" + fmt.Sprint(i), CreatedAt: copyAt(i)}
		if i%2 == 0 {
			c.AvatarURL = "https://example.com/" + name + ".png"
			c.LastActiveAt = copyAt(1000 + i)
		}
		require.NoError(t, s.PutContact(ctx, c))
		f.contacts = append(f.contacts, c.ID)
	}
	alice, bob, carol, dave := f.contacts[0], f.contacts[1], f.contacts[2], f.contacts[3]
	f.convs = []string{"general", "random", "files-only", "späce:ünicode"}

	put := func(id, conv string, body string) messaging.Attachment {
		sum := sha256.Sum256([]byte(body))
		a := messaging.Attachment{ID: id, ConversationID: conv, UploaderID: alice, Filename: id + ".txt", FileType: "text/plain; charset=utf-8",
			FileSize: int64(len(body)), SHA256: hex.EncodeToString(sum[:]), Key: attachments.KeyPrefix + installationOf(t, s) + "/" + id, CreatedAt: copyAt(5)}
		require.NoError(t, files.Put(ctx, a.Key, a.FileType, bytes.NewReader([]byte(body))))
		return a
	}
	// Attachments: one to be linked at send, one filed in a conversation
	// without messages, one unlinked without a conversation.
	// The filed one is an image (by its row) with its previews beside it.
	filed := put("att_02", "files-only", "filed")
	filed.ImageWidth, filed.ImageHeight = 640, 480
	for _, size := range attachments.PreviewSizes {
		require.NoError(t, files.Put(ctx, attachments.PreviewKey(filed.Key, size), "image/jpeg", strings.NewReader("preview "+size)))
	}
	for _, a := range []messaging.Attachment{put("att_01", "", "first file"), filed, put("att_03", "", "loose")} {
		require.NoError(t, s.CreateAttachment(ctx, a, nil))
	}
	for i := range n {
		conv := "general"
		if i%5 == 4 {
			conv = "random"
		}
		if i == 7 {
			conv = "späce:ünicode"
		}
		from := f.contacts[i%3]
		m := messaging.Message{ID: fmt.Sprintf("msg_%04d", i), ConversationID: conv, Contact: messaging.Contact{ID: from},
			Text: fmt.Sprintf("message %d «%s»", i, conv), CreatedAt: copyAt(10 + i/2)} // pairs share a time: ids break ties
		var link []string
		if i == 3 {
			link = []string{"att_01"}
		}
		require.NoError(t, s.CreateMessage(ctx, m, link, nil))
		f.messages = append(f.messages, m.ID)
	}
	update := func(id string, ch driver.MessageChange) {
		_, err := s.UpdateMessage(ctx, id, ch)
		require.NoError(t, err)
	}
	// react adds each reactor of each name in a change of its own.
	react := func(id string, name string, who ...string) {
		for _, c := range who {
			update(id, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: c, Add: []string{name}}})
		}
	}
	unreact := func(id string, name string, who ...string) {
		for _, c := range who {
			update(id, driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: c, Remove: []string{name}}})
		}
	}
	react(f.messages[1], "👍", bob, carol)
	react(f.messages[1], "tada", alice)
	update(f.messages[1], driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: dave, Add: []string{"eyes", "👍"}}})
	unreact(f.messages[1], "tada", alice)
	react(f.messages[2], "fire", carol)
	react(f.messages[2], "heart", bob, alice)
	// A popular reaction: more reactors than a message embeds.
	var crowd []string
	for i := range messaging.MaxEmbeddedReactors + 20 {
		c := messaging.Contact{ID: fmt.Sprintf("ctc_fan%03d", i), Username: fmt.Sprintf("fan%03d", i), CreatedAt: copyAt(3)}
		require.NoError(t, s.PutContact(ctx, c))
		crowd = append(crowd, c.ID)
	}
	react(f.messages[4], "🔥", crowd[:70]...)
	react(f.messages[4], "👍", alice)
	react(f.messages[4], "🔥", crowd[70:]...)
	unreact(f.messages[4], "🔥", crowd[3], crowd[110])
	text := "edited once"
	update(f.messages[2], driver.MessageChange{Text: &text, RevisionID: "rev_01", UpdatedAt: copyAt(500)})
	text2 := "edited twice"
	update(f.messages[2], driver.MessageChange{Text: &text2, RevisionID: "rev_02", UpdatedAt: copyAt(501)})
	yes := true
	update(f.messages[0], driver.MessageChange{Read: &yes, ReadAt: copyAt(600)})
	att4 := put("att_04", "", "attached later")
	att4.ConversationID = ""
	update(f.messages[5], driver.MessageChange{NewAttachment: &att4})

	// A message deleted, with its attachment: gone from the copy too.
	del := put("att_05", "", "deleted with its message")
	gone := messaging.Message{ID: "msg_gone", ConversationID: "general", Contact: messaging.Contact{ID: bob}, Text: "bye", CreatedAt: copyAt(9)}
	require.NoError(t, s.CreateAttachment(ctx, del, nil))
	require.NoError(t, s.CreateMessage(ctx, gone, []string{del.ID}, nil))
	_, err := s.DeleteMessage(ctx, gone.ID, nil)
	require.NoError(t, err)

	for _, m := range []struct{ conv, who string }{{"general", alice}, {"general", bob}, {"general", carol}, {"random", dave}} {
		require.NoError(t, s.AddMember(ctx, m.conv, m.who, copyAt(2)))
	}
	require.NoError(t, s.RemoveMember(ctx, "general", carol))
	if n > 6 {
		require.NoError(t, s.MarkRead(ctx, "general", bob, f.messages[6], nil))
		require.NoError(t, s.MarkRead(ctx, "general", carol, f.messages[3], nil))
	}
	require.NoError(t, s.TouchContact(ctx, dave, copyAt(2000)))

	now := time.Now().UTC()
	keyed := messaging.Message{ID: "msg_keyed", ConversationID: "random", Contact: messaging.Contact{ID: dave}, Text: "sent once", CreatedAt: copyAt(3000)}
	done := driver.IdempotencyRecord{Scope: dave, Key: "key-1", Fingerprint: "fp1", Result: []byte(keyed.ID), CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
	require.NoError(t, s.CreateMessageKeyed(ctx, keyed, nil, nil, done))
	f.messages = append(f.messages, keyed.ID)
	f.keys = append(f.keys, [2]string{dave, "key-1"})
	claim := driver.IdempotencyRecord{Scope: alice, Key: "upload-1", Fingerprint: "fp2", Lock: "lock-1", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	_, ok, err := s.ClaimIdempotencyKey(ctx, claim, now.Add(-time.Minute))
	require.NoError(t, err)
	require.True(t, ok)
	f.keys = append(f.keys, [2]string{alice, "upload-1"})
	old := driver.IdempotencyRecord{Scope: bob, Key: "old", Fingerprint: "fp3", CreatedAt: now.Add(-48 * time.Hour), ExpiresAt: now.Add(-24 * time.Hour)}
	_, ok, err = s.ClaimIdempotencyKey(ctx, old, now.Add(-49*time.Hour))
	require.NoError(t, err)
	require.True(t, ok)
	f.expired = [2]string{bob, "old"}
	return f
}

// view reads back, through the Repository, everything a client can see
// of f in s, as JSON: pages walked with cursors both ways, each viewer's
// conversations, members, revisions, idempotency records, and the files.
func view(t testing.TB, s copyStore, files attachments.BlobStore, f fixture) string {
	t.Helper()
	ctx := context.Background()
	out := map[string]any{}
	for _, id := range f.contacts {
		c, err := s.GetContact(ctx, id)
		require.NoError(t, err)
		out["contact "+id] = c
	}
	var pages [][]messaging.Message
	var after *driver.Cursor
	for {
		page, more, err := s.ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 4, After: after}})
		require.NoError(t, err)
		pages = append(pages, page)
		if !more {
			break
		}
		last := page[len(page)-1]
		after = &driver.Cursor{Time: last.CreatedAt, ID: last.ID}
	}
	out["message pages"] = pages
	mid := pages[len(pages)/2][0]
	back, _, err := s.ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"general"}}, Window: driver.Window{Limit: 3, Before: &driver.Cursor{Time: mid.CreatedAt, ID: mid.ID}}})
	require.NoError(t, err)
	out["page before"] = back
	for _, id := range f.messages {
		m, err := s.GetMessage(ctx, id)
		require.NoError(t, err)
		out["message "+id] = m
		revs, _, err := s.ListRevisions(ctx, driver.RevisionQuery{Window: driver.Window{Limit: 10}, MessageID: id})
		require.NoError(t, err)
		out["revisions "+id] = revs
	}
	for _, name := range []string{"🔥", "👍"} {
		var all []messaging.Reactor
		var after *driver.Cursor
		for {
			page, more, err := s.ListReactors(ctx, driver.ReactorQuery{Window: driver.Window{Limit: 30, After: after}, MessageID: f.messages[4], Name: name})
			require.NoError(t, err)
			all = append(all, page...)
			if !more {
				break
			}
			after = &driver.Cursor{ID: page[len(page)-1].ContactID}
		}
		out["reactors "+name] = all
	}
	for _, viewer := range append([]string{""}, f.contacts...) {
		var all []messaging.Conversation
		var after *driver.Cursor
		for {
			page, more, err := s.ListConversations(ctx, driver.ConversationQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 2, After: after}, ViewerID: viewer})
			require.NoError(t, err)
			all = append(all, page...)
			if !more {
				break
			}
			last := page[len(page)-1]
			after = &driver.Cursor{Time: last.UpdatedAt, ID: last.ID}
		}
		out["conversations of "+viewer] = all
		mine, _, err := s.ListConversations(ctx, driver.ConversationQuery{Scope: driver.Scope{MemberID: viewer}, Window: driver.Window{Limit: 10}, ViewerID: viewer})
		require.NoError(t, err)
		out["memberships of "+viewer] = nonNil(mine)
		if viewer != "" {
			loose, _, err := s.ListAttachments(ctx, driver.AttachmentQuery{Window: driver.Window{Limit: 100}, UploaderID: viewer})
			require.NoError(t, err)
			out["uploads of "+viewer] = nonNil(loose)
		}
	}
	for _, conv := range f.convs {
		ms, _, err := s.ListMembers(ctx, driver.MemberQuery{Window: driver.Window{Limit: 10}, ConversationID: conv})
		require.NoError(t, err)
		out["members of "+conv] = nonNil(ms)
	}
	atts, _, err := s.ListAttachments(ctx, driver.AttachmentQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 100}})
	require.NoError(t, err)
	out["attachments"] = atts
	contents := map[string]string{}
	for _, id := range []string{"att_01", "att_02", "att_03", "att_04"} {
		a, err := s.GetAttachment(ctx, id)
		require.NoError(t, err)
		r, err := files.Open(ctx, a.Key)
		require.NoError(t, err, "the file of %s", id)
		data, err := io.ReadAll(r)
		require.NoError(t, r.Close())
		require.NoError(t, err)
		contents[id] = string(data)
		for _, size := range attachments.PreviewSizes {
			if a.ImageWidth == 0 {
				break
			}
			r, err := files.Open(ctx, attachments.PreviewKey(a.Key, size))
			require.NoError(t, err, "the %s preview of %s", size, id)
			data, err := io.ReadAll(r)
			require.NoError(t, r.Close())
			require.NoError(t, err)
			contents[id+" "+size] = string(data)
		}
	}
	out["files"] = contents
	for _, k := range f.keys {
		rec, err := s.GetIdempotencyKey(ctx, k[0], k[1])
		require.NoError(t, err)
		out["key "+k[0]+" "+k[1]] = rec
	}
	// A copy answers the same searches (its index made again from the
	// texts, in the form of its engine), of every conversation and of
	// named ones (which an engine may index apart).
	for _, q := range []string{"message", "MESS", "edited twice", "once", "general", "bye", "message 1"} {
		p, err := search.Parse(q)
		require.NoError(t, err)
		for _, scope := range []driver.Scope{{All: true}, {ConversationIDs: []string{"general"}}} {
			found, more, err := s.SearchMessages(ctx, driver.SearchQuery{Scope: scope, Window: driver.Window{Limit: 100}, Words: p.Words, Prefix: p.Prefix})
			require.NoError(t, err, "SearchMessages %q", q)
			require.False(t, more)
			if q == "message" {
				require.NotEmpty(t, found, "every fixture message says message")
			}
			key := "search " + q
			if !scope.All {
				key += " in general"
			}
			out[key] = messageIDs(found)
		}
	}
	// The installation is not in the view: a copy has its own (see
	// installationOf and copyAll).
	data, err := json.MarshalIndent(out, "", " ")
	require.NoError(t, err)
	return string(data)
}

// installationOf returns the installation id of s.
func installationOf(t testing.TB, s copyStore) string {
	t.Helper()
	ins, ok := any(s).(driver.Installation)
	require.True(t, ok)
	id, err := ins.InstallationID(context.Background())
	require.NoError(t, err)
	return id
}

// expiredGone checks that the expired idempotency record of f is not in s.
func expiredGone(t testing.TB, s copyStore, f fixture) {
	t.Helper()
	_, err := s.GetIdempotencyKey(context.Background(), f.expired[0], f.expired[1])
	require.True(t, errors.Is(err, messaging.ErrNotFound), "the expired key is not copied: %v", err)
}

// objects returns the keys of the objects of files.
func objects(t testing.TB, files attachments.BlobStore) []string {
	t.Helper()
	var keys []string
	require.NoError(t, files.(driver.Lister).List(context.Background(), "", func(o driver.Object) error {
		keys = append(keys, o.Key)
		return nil
	}))
	slices.Sort(keys)
	return keys
}
