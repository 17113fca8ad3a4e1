package messaging_test

import (
	"context"
	"strings"
	"testing"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// FuzzForgedCursor: whatever cursor and conversation a caller sends, a
// list never holds an item of a conversation the caller may not see, nor of
// another conversation than the one asked for; and a cursor naming a
// hidden item fails exactly as one naming no item does, so that it tells
// nothing of the hidden conversation.
func FuzzForgedCursor(f *testing.F) {
	ctx := context.Background()
	store := memstore.New()
	msgs := svctest.New(f, store, memstore.NewBlobStore(), &messaging.Options{Policy: messaging.MembersOnly()})
	files := msgs.Files()
	must := func(err error) {
		if err != nil {
			f.Fatal(err)
		}
	}
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	must(err)
	bob, err := msgs.SaveContact(ctx, messaging.Contact{Username: "bob"})
	must(err)
	for _, m := range []struct{ conv, who string }{{"team", alice.ID}, {"team", bob.ID}, {"secret", alice.ID}, {"other", bob.ID}} {
		must(msgs.AddMember(ctx, m.conv, m.who))
	}
	var pool []string // ids of every conversation, hidden ones included
	for i := range 12 {
		conv := []string{"team", "secret", "other"}[i%3]
		m, err := msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: conv, Text: "m"})
		if conv == "other" {
			m, err = msgs.Create(ctx, bob, messaging.NewMessage{ConversationID: conv, Text: "m"})
		}
		must(err)
		a, err := files.Upload(ctx, alice, attachments.Upload{Filename: "f.txt", ConversationID: []string{"team", "secret", ""}[i%3], Body: strings.NewReader("x")})
		must(err)
		pool = append(pool, m.ID, a.ID)
	}
	visible := func(conv string) bool { return conv == "team" || conv == "other" }

	f.Add(uint8(0), "", uint8(0), "", false, uint8(5))
	f.Add(uint8(2), "", uint8(1), "", true, uint8(3))
	f.Add(uint8(255), "msg_01m841w6yzbrqaqxbhqtccwcce", uint8(2), "secret", false, uint8(100))
	f.Add(uint8(255), "att_x", uint8(255), "team", true, uint8(0))
	f.Fuzz(func(t *testing.T, pick uint8, raw string, convPick uint8, rawConv string, before bool, limit uint8) {
		cursor := raw
		if int(pick) < len(pool) {
			cursor = pool[pick]
		}
		conv := rawConv
		if int(convPick) < 4 {
			conv = []string{"", "team", "secret", "other"}[convPick]
		}
		o := messaging.ListOptions{Limit: int(limit % 101)}
		ao := messaging.ListOptions{Limit: int(limit % 101)}
		if before {
			o.EndingBefore, ao.EndingBefore = cursor, cursor
		} else {
			o.StartingAfter, ao.StartingAfter = cursor, cursor
		}
		page, err := msgs.Messages(ctx, bob, conv, o)
		check := func(itemConv string) {
			if !visible(itemConv) && itemConv != "" || conv != "" && itemConv != conv {
				t.Fatalf("listing %q with cursor %q gave an item of %q", conv, cursor, itemConv)
			}
		}
		if err == nil {
			for _, m := range page.Data {
				check(m.ConversationID)
			}
		} else {
			sameAsUnknown(t, err, cursor, func(c string) error {
				o.StartingAfter, o.EndingBefore = swap(before, c)
				_, err := msgs.Messages(ctx, bob, conv, o)
				return err
			})
		}
		apage, err := files.Attachments(ctx, bob, conv, ao)
		if err == nil {
			for _, a := range apage.Data {
				check(a.ConversationID)
				if a.ConversationID == "" && a.UploaderID != bob.ID {
					t.Fatalf("another's unfiled upload %s listed", a.ID)
				}
			}
		} else {
			sameAsUnknown(t, err, cursor, func(c string) error {
				ao.StartingAfter, ao.EndingBefore = swap(before, c)
				_, err := files.Attachments(ctx, bob, conv, ao)
				return err
			})
		}
	})
}

func swap(before bool, c string) (after, bef string) {
	if before {
		return "", c
	}
	return c, ""
}

// sameAsUnknown checks that err, the failure of a list with cursor, is
// the failure the list gives for an id of the same type that names
// nothing, but for the id itself.
func sameAsUnknown(t *testing.T, err error, cursor string, list func(cursor string) error) {
	t.Helper()
	prefix := ""
	for _, p := range []string{ids.Message, ids.Attachment} {
		if ids.Valid(p, cursor) {
			prefix = p
		}
	}
	if prefix == "" {
		return
	}
	unknown := ids.New(prefix)
	other := list(unknown)
	var e1, e2 *messaging.Error
	if !asError(err, &e1) || !asError(other, &e2) {
		t.Fatalf("errors %v, %v", err, other)
	}
	if e1.Kind != e2.Kind || e1.Param != e2.Param || strings.ReplaceAll(e1.Message, cursor, "ID") != strings.ReplaceAll(e2.Message, unknown, "ID") {
		t.Fatalf("a hidden cursor fails otherwise than an unknown one: %v / %v", e1, e2)
	}
}

func asError(err error, e **messaging.Error) bool {
	for err != nil {
		if x, ok := err.(*messaging.Error); ok {
			*e = x
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}
