package storecopy

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/claim"
	"github.com/parleychat/parley/messaging"
)

// A copy trusts no row of its source: a tampered source made an earlier
// copy write an object outside attachments/ in the destination bucket and
// accept 30 MB texts (issue 30). validate checks each row as the API
// checks input, and refuses the first bad one by its id.

// maxIDBytes bounds every id and name a row holds: a username or a
// reaction name is up to 64 characters, of up to 4 bytes each.
const maxIDBytes = 256

// maxKeyChars bounds an idempotency key, in characters.
const maxKeyChars = 255

// rowRules are what validate checks rows against.
type rowRules struct {
	maxText int          // the most characters of a message's or revision's text
	rights  claim.Rights // the source's rights: the keys its files may have
	// noBucket is true in a copy of the rows only, which cannot read the
	// handovers of the source's bucket: a key under any installation's
	// prefix may be one handed to the source.
	noBucket bool
}

// keyRights returns the rights that key must be served by: r.rights, or
// without the source's bucket, those of the installation whose prefix
// the key is under, if it is one (claim.ValidInstallationID: the ids that
// attachments serves files of).
func (r *rowRules) keyRights(key string) claim.Rights {
	if !r.noBucket {
		return r.rights
	}
	rest, _ := strings.CutPrefix(key, attachments.KeyPrefix)
	seg, _, ok := strings.Cut(rest, "/")
	if !ok || !claim.ValidInstallationID(seg) {
		return r.rights
	}
	return claim.RightsOf(nil, attachments.KeyPrefix, seg)
}

// badRow is the error of a row the copy refuses.
func badRow(k Kind, id, what string) error {
	return &messaging.Error{Kind: messaging.ErrInvalid, Op: "storecopy.Copy", Message: fmt.Sprintf(
		"the source's %s row %q is refused: %s; nothing of it was copied (mend or delete the row in the source, then copy again)", k, id, what)}
}

// okID reports whether s is an id or a name as the API could have made
// it: 1 to 256 bytes of UTF-8, no control characters.
func okID(s string) bool {
	if s == "" || len(s) > maxIDBytes || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// okText reports whether s is a text of at most max characters of UTF-8.
func okText(s string, max int) bool {
	return utf8.ValidString(s) && (len(s) <= max || utf8.RuneCountInString(s) <= max)
}

// validate checks the rows of b, and returns the error of the first bad
// one.
func validate(b *Batch, r *rowRules) error {
	ids := func(k Kind, id string, fields ...string) error {
		for _, f := range fields {
			if !okID(f) {
				return badRow(k, id, fmt.Sprintf("the id %q is not 1 to %d bytes of UTF-8 without control characters", f, maxIDBytes))
			}
		}
		return nil
	}
	for _, c := range b.Contacts {
		if err := ids(Contacts, c.ID, c.ID, c.Username); err != nil {
			return err
		}
	}
	for _, c := range b.Conversations {
		if err := ids(Conversations, c.ID, c.ID); err != nil {
			return err
		}
	}
	for _, m := range b.Members {
		if err := ids(Members, m.ConversationID+" "+m.ContactID, m.ConversationID, m.ContactID); err != nil {
			return err
		}
	}
	for _, m := range b.Messages {
		if err := ids(Messages, m.ID, m.ID, m.ConversationID, m.ContactID); err != nil {
			return err
		}
		if !okText(m.Text, r.maxText) {
			return badRow(Messages, m.ID, fmt.Sprintf("its text is not UTF-8 of at most %d characters (Options.MaxTextChars)", r.maxText))
		}
	}
	for _, n := range b.ReactionNames {
		if err := ids(ReactionNames, n.MessageID, n.MessageID, n.Name); err != nil {
			return err
		}
	}
	for _, n := range b.Reactions {
		if err := ids(Reactions, n.MessageID, n.MessageID, n.Name, n.ContactID); err != nil {
			return err
		}
	}
	for _, a := range b.Attachments {
		if err := ids(Attachments, a.ID, a.ID, a.UploaderID, a.Filename); err != nil {
			return err
		}
		if !r.keyRights(a.Key).Serves(attachments.KeyPrefix, a.Key, a.ID) {
			return badRow(Attachments, a.ID, fmt.Sprintf("its key %q is not a key the source made for it (%s, the source's installation id or a prefix handed to it, then the attachment id)", a.Key, attachments.KeyPrefix))
		}
		if a.FileSize < 0 {
			return badRow(Attachments, a.ID, "its size is negative")
		}
		if a.ImageWidth < 0 || a.ImageHeight < 0 {
			return badRow(Attachments, a.ID, "its image size is negative")
		}
	}
	for _, v := range b.Revisions {
		if err := ids(Revisions, v.ID, v.ID, v.MessageID); err != nil {
			return err
		}
		if !okText(v.Text, r.maxText) {
			return badRow(Revisions, v.ID, fmt.Sprintf("its text is not UTF-8 of at most %d characters (Options.MaxTextChars)", r.maxText))
		}
	}
	for _, k := range b.IdempotencyKeys {
		if !okID(k.Scope) || !okText(k.Key, maxKeyChars) || k.Key == "" {
			return badRow(IdempotencyKeys, k.Scope+" "+k.Key, "its caller or key is not 1 to 255 characters of UTF-8")
		}
		// A done record keeps the id of what it answered, no more.
		if res := string(k.Result); k.Lock == "" && !okID(res) || k.Lock != "" && res != "" {
			return badRow(IdempotencyKeys, k.Scope+" "+k.Key, "its result is not the id of a message or attachment")
		}
	}
	return nil
}
