package storecopy

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"time"
)

// row is one row as the verification compares it: its key (which orders
// the rows of a kind the same in every store) and its fields.
type row struct {
	key    string
	names  []string
	values []string
}

// tm is a time as compared: microseconds since the epoch, "" for the zero
// time.
func tm(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMicro(), 10)
}

func num[T int | int64](n T) string { return strconv.FormatInt(int64(n), 10) }

// rowsOf yields the rows of kind k of snap as compared, leaving out
// idempotency records expired at cut.
func rowsOf(ctx context.Context, snap Snapshot, k Kind, size int, cut time.Time) iter.Seq2[row, error] {
	return func(yield func(row, error) bool) {
		lastMsg, n := "", 0 // the ordinal of reaction rows in their message
		for b, err := range snap.Rows(ctx, k, size) {
			if err != nil {
				yield(row{}, err)
				return
			}
			for i := range b.Len() {
				var r row
				switch k {
				case Contacts:
					c := b.Contacts[i]
					r = row{c.ID, []string{"username", "phone number", "avatar URL", "last active", "created"},
						[]string{c.Username, c.PhoneNumber, c.AvatarURL, tm(c.LastActiveAt), tm(c.CreatedAt)}}
				case Conversations:
					c := b.Conversations[i]
					r = row{c.ID, []string{"created", "updated", "message count", "last message"},
						[]string{tm(c.CreatedAt), tm(c.UpdatedAt), num(c.MessageCount), c.LastMessageID}}
				case Members:
					m := b.Members[i]
					r = row{m.ConversationID + "\x00" + m.ContactID,
						[]string{"membership", "joined", "read position", "read message", "read count", "own count", "own read count"},
						[]string{strconv.FormatBool(m.IsMember), tm(m.JoinedAt), tm(m.ReadCreated), m.ReadMessageID, num(m.ReadCount), num(m.OwnCount), num(m.OwnReadCount)}}
				case Messages:
					m := b.Messages[i]
					r = row{m.ID, []string{"conversation", "contact", "text", "read", "created", "updated", "reaction count", "attachment count", "thread", "deleted"},
						[]string{m.ConversationID, m.ContactID, m.Text, tm(m.ReadAt), tm(m.CreatedAt), tm(m.UpdatedAt), num(m.ReactionCount), num(m.AttachmentCount),
							strconv.FormatBool(m.Thread), strconv.FormatBool(m.Deleted)}}
				case ReactionNames, Reactions:
					if msg := reactionMessage(b, i); msg != lastMsg {
						lastMsg, n = msg, 0
					}
					n++
					r.key, r.names, r.values = reactionFields(b, i, n)
				case Attachments:
					a := b.Attachments[i]
					r = row{a.ID, []string{"message", "conversation", "uploader", "file name", "file type", "file size", "sha256", "image width", "image height", "key", "created"},
						[]string{a.MessageID, a.ConversationID, a.UploaderID, a.Filename, a.FileType, num(a.FileSize), a.SHA256, num(a.ImageWidth), num(a.ImageHeight), a.Key, tm(a.CreatedAt)}}
				case Revisions:
					v := b.Revisions[i]
					r = row{v.ID, []string{"message", "text", "created"}, []string{v.MessageID, v.Text, tm(v.CreatedAt)}}
				case IdempotencyKeys:
					v := b.IdempotencyKeys[i]
					if !v.ExpiresAt.After(cut) {
						continue
					}
					r = row{v.Scope + "\x00" + v.Key, []string{"fingerprint", "lock", "result", "created", "expires"},
						[]string{v.Fingerprint, v.Lock, string(v.Result), tm(v.CreatedAt), tm(v.ExpiresAt)}}
				}
				if !yield(r, nil) {
					return
				}
			}
		}
	}
}

// maxDiffs is the most differences a verification names.
const maxDiffs = 20

// compareRows compares the rows of kind k of the two snapshots, and
// returns the number of rows of each and up to maxDiffs differences.
func compareRows(ctx context.Context, k Kind, src, dst Snapshot, size int, cut time.Time) (nSrc, nDst int64, diffs []string, err error) {
	next1, stop1 := iter.Pull2(rowsOf(ctx, src, k, size, cut))
	defer stop1()
	next2, stop2 := iter.Pull2(rowsOf(ctx, dst, k, size, cut))
	defer stop2()
	a, errA, okA := next1()
	b, errB, okB := next2()
	for okA || okB {
		if errA != nil {
			return nSrc, nDst, diffs, fmt.Errorf("read the source's %s: %w", k, errA)
		}
		if errB != nil {
			return nSrc, nDst, diffs, fmt.Errorf("read the destination's %s: %w", k, errB)
		}
		switch {
		case okA && (!okB || a.key < b.key):
			diffs = addDiff(diffs, fmt.Sprintf("%s: %s is missing from the destination", k, showKey(a.key)))
			nSrc++
			a, errA, okA = next1()
		case okB && (!okA || b.key < a.key):
			diffs = addDiff(diffs, fmt.Sprintf("%s: %s is in the destination only", k, showKey(b.key)))
			nDst++
			b, errB, okB = next2()
		default:
			for i := range a.values {
				if a.values[i] != b.values[i] {
					diffs = addDiff(diffs, fmt.Sprintf("%s: %s differs in its %s (source %s, destination %s)",
						k, showKey(a.key), a.names[i], showValue(a.values[i]), showValue(b.values[i])))
					break
				}
			}
			nSrc++
			nDst++
			a, errA, okA = next1()
			b, errB, okB = next2()
		}
	}
	return nSrc, nDst, diffs, nil
}

func addDiff(diffs []string, d string) []string {
	if len(diffs) < maxDiffs {
		diffs = append(diffs, d)
	}
	return diffs
}

// showKey shows a row's key: its parts quoted.
func showKey(k string) string {
	out := ""
	start := 0
	for i := 0; i <= len(k); i++ {
		if i == len(k) || k[i] == 0 {
			if out != "" {
				out += " "
			}
			out += strconv.Quote(k[start:i])
			start = i + 1
		}
	}
	return out
}

// showValue shows a value, cut short.
func showValue(v string) string {
	if len(v) > 40 {
		return strconv.Quote(v[:40]) + "…"
	}
	if v == "" {
		return "none"
	}
	return strconv.Quote(v)
}
