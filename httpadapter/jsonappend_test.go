package httpadapter

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/messaging"
)

// FuzzAppendString checks that appendString writes what json.Marshal
// writes for every string, appended after what the slice held.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `"quoted" \ back`, "<a href='x'>&</a>", "\x00\x01\b\f\n\r\t\x1f\x7f",
		"caf\xc3\xa9 \xe2\x80\xa8 \xe2\x80\xa9 \xff\xfe", "\xe2\x80", "emoji \U0001F600", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		got := appendString([]byte("prefix"), s)
		if string(got) != "prefix"+string(want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got[len("prefix"):], want)
		}
	})
}

// The reference encodings: the structs encoding/json wrote before the
// appending encoder (jsonappend.go), member for member.
type refContact struct {
	ID           string `json:"id"`
	Username     string `json:"username"`
	PhoneNumber  string `json:"phone_number"`
	AvatarURL    string `json:"avatar_url"`
	LastActiveAt *int64 `json:"last_active_at"`
	CreatedAt    int64  `json:"created_at"`
}

type refAttachment struct {
	ID             string  `json:"id"`
	Object         string  `json:"object"`
	MessageID      *string `json:"message_id"`
	ConversationID *string `json:"conversation_id"`
	Filename       string  `json:"filename"`
	FileURL        string  `json:"file_url"`
	FileType       string  `json:"file_type"`
	FileSize       int64   `json:"file_size"`
	SHA256         string  `json:"sha256"`
	ImageWidth     int     `json:"image_width,omitempty"`
	ImageHeight    int     `json:"image_height,omitempty"`
	CreatedAt      int64   `json:"created_at"`
}

type refMessage struct {
	ID             string                `json:"id"`
	Object         string                `json:"object"`
	ConversationID string                `json:"conversation_id"`
	Contact        refContact            `json:"contact"`
	Message        string                `json:"message"`
	Reactions      []map[string][]string `json:"reactions"`
	ReactionCounts map[string]int        `json:"reaction_counts"`
	Attachments    []refAttachment       `json:"attachments"`
	ReadAt         *int64                `json:"read_at"`
	CreatedAt      int64                 `json:"created_at"`
	UpdatedAt      *int64                `json:"updated_at"`
	ParentID       *string               `json:"parent_id"`
	ReplyCount     int64                 `json:"reply_count"`
	LastReplyAt    *int64                `json:"last_reply_at"`
}

func refUnix(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	u := t.Unix()
	return &u
}

func refNullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func refAttachmentOf(a messaging.Attachment, u string) refAttachment {
	return refAttachment{a.ID, "attachment", refNullable(a.MessageID), refNullable(a.ConversationID), a.Filename, u,
		a.FileType, a.FileSize, a.SHA256, a.ImageWidth, a.ImageHeight, a.CreatedAt.Unix()}
}

// TestAppendJSONMatchesEncodingJSON checks the messages and attachments of
// the appending encoder, in a list, against encoding/json's encoding of
// the reference structs: set and unset times and ids, no and several
// reactions and attachments, strings that need escaping.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	at := time.Unix(1_700_000_000, 500).UTC()
	tricky := "a \"quote\", <tag> & \u2028 caf\xc3\xa9 \xff"
	att := messaging.Attachment{ID: "att_1", MessageID: "msg_1", ConversationID: "conv", Filename: tricky,
		FileType: "image/png", FileSize: 12345, SHA256: "abc", ImageWidth: 640, ImageHeight: 480, CreatedAt: at}
	msgs := []messageJSON{
		{m: messaging.Message{ID: "msg_0", ConversationID: "conv", Contact: messaging.Contact{ID: "ctc_1", Username: "alice", CreatedAt: at},
			Reactions: []messaging.Reaction{}, Attachments: []messaging.Attachment{}, CreatedAt: at}},
		{m: messaging.Message{ID: "msg_1", ConversationID: "conv",
			Contact: messaging.Contact{ID: "ctc_2", Username: "bob", PhoneNumber: "+1555", AvatarURL: "https://x/<a>", LastActiveAt: at, CreatedAt: at},
			Text:    tricky,
			Reactions: []messaging.Reaction{{Name: "<&>", Reactors: nil}, {Name: "a", Reactors: []string{"carol"}},
				{Name: "thumbs_up", Reactors: []string{"alice", "bob"}, Count: 150}},
			Attachments: []messaging.Attachment{att, {ID: "att_2", FileType: "text/plain", CreatedAt: at}},
			ReadAt:      at, CreatedAt: at, UpdatedAt: at.Add(time.Hour),
			ParentID: "msg_r\"<", ReplyCount: 3, LastReplyAt: at.Add(2 * time.Hour)},
			fileURLs: []string{"https://h/v1/attachments/att_1/a%20b?x=<1>&y=2", "u2"}},
	}
	ref := make([]refMessage, len(msgs))
	for i, x := range msgs {
		m := x.m
		c := m.Contact
		r := refMessage{ID: m.ID, Object: "message", ConversationID: m.ConversationID,
			Contact: refContact{c.ID, c.Username, c.PhoneNumber, c.AvatarURL, refUnix(c.LastActiveAt), c.CreatedAt.Unix()},
			Message: m.Text, Reactions: []map[string][]string{}, ReactionCounts: map[string]int{}, Attachments: []refAttachment{},
			ReadAt: refUnix(m.ReadAt), CreatedAt: m.CreatedAt.Unix(), UpdatedAt: refUnix(m.UpdatedAt),
			ParentID: refNullable(m.ParentID), ReplyCount: m.ReplyCount, LastReplyAt: refUnix(m.LastReplyAt)}
		for _, re := range m.Reactions {
			who := re.Reactors
			if who == nil {
				who = []string{}
			}
			r.Reactions = append(r.Reactions, map[string][]string{re.Name: who})
			// (in the order of the reactions, which the test keeps sorted
			// as encoding/json sorts a map's keys)
			r.ReactionCounts[re.Name] = max(re.Count, len(re.Reactors))
		}
		for j, a := range m.Attachments {
			r.Attachments = append(r.Attachments, refAttachmentOf(a, x.fileURLs[j]))
		}
		ref[i] = r
	}
	want, err := json.Marshal(struct {
		Object  string       `json:"object"`
		Data    []refMessage `json:"data"`
		HasMore bool         `json:"has_more"`
	}{"list", ref, true})
	require.NoError(t, err)
	got, err := list[messageJSON]{Object: "list", Data: msgs, HasMore: true}.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))

	// One message and one attachment alone, as GET answers them.
	one, err := msgs[1].MarshalJSON()
	require.NoError(t, err)
	want1, err := json.Marshal(ref[1])
	require.NoError(t, err)
	assert.Equal(t, string(want1), string(one))
	a, err := attachmentJSON{att, "u"}.MarshalJSON()
	require.NoError(t, err)
	wantA, err := json.Marshal(refAttachmentOf(att, "u"))
	require.NoError(t, err)
	assert.Equal(t, string(wantA), string(a))
}
