package check

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFilename(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"notes.txt", "notes.txt"},
		{"../../etc/passwd", "passwd"},
		{`C:\Users\ann\report.pdf`, "report.pdf"},
		{"  spaced name.png  ", "spaced name.png"},
		{"tab\there\x00.txt", "tabhere.txt"},
		{"bad\xffutf8.txt", "badutf8.txt"},
		{"\u202egnp.exe", "gnp.exe"},
		{"zero\u200bwidth.txt", "zerowidth.txt"},
		{"é" + strings.Repeat("x", 300), "é" + strings.Repeat("x", 253)},
		{strings.Repeat("é", 200), strings.Repeat("é", 127)}, // never cut inside a character
	} {
		got, err := Filename("filename", tc.in)
		require.NoError(t, err, "%q", tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
		assert.LessOrEqual(t, len(got), 255)
	}
	for _, bad := range []string{"", "   ", ".", "..", "dir/", "a/..", "\x01\x02", "\u00ad\u2028\U000E0041"} {
		_, err := Filename("filename", bad)
		var e *Error
		require.True(t, errors.As(err, &e), "%q: %v", bad, err)
		assert.Equal(t, "filename", e.Param)
		assertInvalid(t, err)
	}
}

// TestFilenameCutKeepsExtension: a name cut to 255 bytes keeps its
// extension (issue 30: 300 × A + ".txt" became 255 A), on a character
// boundary, unless the "extension" is too long to be one.
func TestFilenameCutKeepsExtension(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{strings.Repeat("A", 300) + ".txt", strings.Repeat("A", 251) + ".txt"},
		{strings.Repeat("é", 200) + ".pdf", strings.Repeat("é", 125) + ".pdf"}, // 250 + 4 bytes: no half character
		{"é" + strings.Repeat("x", 300) + ".tar.gz", "é" + strings.Repeat("x", 250) + ".gz"},
		{"a" + strings.Repeat(" ", 300) + ".txt", "a.txt"},                                                                    // no white space before the extension
		{strings.Repeat("A", 300) + ".a b", strings.Repeat("A", 255)},                                                         // white space: no extension
		{strings.Repeat("A", 200) + "." + strings.Repeat("x", 100), strings.Repeat("A", 200) + "." + strings.Repeat("x", 54)}, // too long to be an extension
		{strings.Repeat("A", 251) + ".txt", strings.Repeat("A", 251) + ".txt"},                                                // 255 bytes: not cut
	} {
		got, err := Filename("filename", tc.in)
		require.NoError(t, err, "%q", tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
		assert.LessOrEqual(t, len(got), 255)
		assert.True(t, utf8.ValidString(got))
	}
}

// TestFilenameInvisible: characters that are not seen, or that break a
// line, are removed from file names (issue 30: U+2028, soft hyphens and
// tag characters survived); the joiners that scripts and emoji need stay.
func TestFilenameInvisible(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"line\u2028sep\u2029.txt", "linesep.txt"},
		{"soft\u00adhyphen.txt", "softhyphen.txt"},
		{"tag\U000E0001\U000E0065\U000E007Fs.txt", "tags.txt"},
		{"\u202aa\u202bb\u202cc\u202dd\u202ee.txt", "abcde.txt"},         // embeddings and overrides
		{"\u2066a\u2067b\u2068c\u2069d\u200ee\u200ff.txt", "abcdef.txt"}, // isolates and marks
		{"z\u200bw\u2060j\ufeffn.txt", "zwjn.txt"},                       // zero-width space, word joiner, BOM
		{"invisible\u2061\u2062\u2063\u2064ops.txt", "invisibleops.txt"},
		{"mongolian\u180evs.txt", "mongolianvs.txt"},
		{"hangul\u3164\u115f\u1160\uffa0filler.txt", "hangulfiller.txt"},
		{"cgj\u034f.txt", "cgj.txt"},
		{"annot\ufff9a\ufffab\ufffb.txt", "annotab.txt"},
		{"shorthand\U0001BCA0\U0001BCA3.txt", "shorthand.txt"},
		{"\U0001F468\u200d\U0001F469\u200d\U0001F467.png", "\U0001F468\u200d\U0001F469\u200d\U0001F467.png"},             // emoji joined by ZWJ
		{"\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645.txt", "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645.txt"}, // Persian needs ZWNJ
		{"\u2764\ufe0f.png", "\u2764\ufe0f.png"},                                                                         // variation selector
		{"caf\u0065\u0301.txt", "caf\u0065\u0301.txt"},                                                                   // combining accent
	} {
		got, err := Filename("filename", tc.in)
		require.NoError(t, err, "%q", tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
	}
}

func TestConversationID(t *testing.T) {
	for _, ok := range []string{"a", "general", "team-1_b.c:d", strings.Repeat("z", 128)} {
		assert.NoError(t, ConversationID("conversation_id", ok), ok)
	}
	for _, bad := range []string{strings.Repeat("z", 129), "has space", "slash/no", "ünï", "semi;colon"} {
		assertInvalid(t, ConversationID("conversation_id", bad), bad)
	}
	var e *Error
	require.True(t, errors.As(ConversationID("conversation_id", ""), &e))
	assert.Equal(t, CodeMissing, e.Code)
}

func TestMessageText(t *testing.T) {
	assert.NoError(t, MessageText("message", "line one\nline two\ttabbed", 4000))
	assert.NoError(t, MessageText("message", strings.Repeat("é", 10), 10), "counted in characters, not bytes")
	assertInvalid(t, MessageText("message", strings.Repeat("é", 11), 10))
	assertInvalid(t, MessageText("message", " \n\t ", 10))
	assertInvalid(t, MessageText("message", "nul\x00", 10))
	assertInvalid(t, MessageText("message", "\xff", 10))
	assertInvalid(t, MessageText("message", "cr\r\n", 10), "only newline and tab")
}

func TestReactionName(t *testing.T) {
	assert.NoError(t, ReactionName("reactions", "thumbs_up"))
	assert.NoError(t, ReactionName("reactions", "👍"))
	assert.NoError(t, ReactionName("reactions", "👨\u200d👩\u200d👧"), "emoji joined by ZWJ")
	for _, bad := range []string{"", "two words", "br[ack]et", strings.Repeat("x", 65), "ctl\x07", ".", "..", "a/b", "\u202eab"} {
		assertInvalid(t, ReactionName("reactions", bad), bad)
	}
}

func TestLimit(t *testing.T) {
	n, err := Limit(0, 100)
	require.NoError(t, err)
	assert.Equal(t, 10, n)
	n, err = Limit(100, 100)
	require.NoError(t, err)
	assert.Equal(t, 100, n)
	for _, bad := range []int{-1, 101} {
		_, err := Limit(bad, 100)
		var e *Error
		require.True(t, errors.As(err, &e))
		assert.Equal(t, "limit", e.Param)
	}
}

func TestCursors(t *testing.T) {
	known := map[string]int{"a": 1, "b": 2}
	at := func(id string) (int, bool, error) { p, ok := known[id]; return p, ok, nil }

	after, before, err := Cursors("a", "", at)
	require.NoError(t, err)
	assert.Equal(t, 1, *after)
	assert.Nil(t, before)

	after, before, err = Cursors("", "b", at)
	require.NoError(t, err)
	assert.Nil(t, after)
	assert.Equal(t, 2, *before)

	for _, tc := range []struct{ after, before, param string }{
		{"a", "b", "ending_before"}, {"zzz", "", "starting_after"}, {"", "zzz", "ending_before"},
	} {
		_, _, err := Cursors(tc.after, tc.before, at)
		var e *Error
		require.True(t, errors.As(err, &e), "%v", tc)
		assert.Equal(t, tc.param, e.Param)
	}
	boom := errors.New("boom")
	_, _, err = Cursors("a", "", func(string) (int, bool, error) { return 0, false, boom })
	assert.ErrorIs(t, err, boom)
}

// assertInvalid asserts that err is an *Error.
func assertInvalid(t *testing.T, err error, msgAndArgs ...any) {
	t.Helper()
	var e *Error
	assert.True(t, errors.As(err, &e), msgAndArgs...)
}

// TestMessageTextBidi: a message may not hold the bidirectional overrides
// that names and file names reject (issue 10, defect 6), but keeps the
// marks and isolates right-to-left text needs.
func TestMessageTextBidi(t *testing.T) {
	for _, bad := range []string{"look: \u202egnp.exe", "a\u202ab\u202c", "\u202dx"} {
		assert.Error(t, MessageText("message", bad, 4000), "%q", bad)
	}
	for _, good := range []string{"שלום \u200fעולם", "abc \u2067عربى\u2069 def", "mixed \u200e123"} {
		assert.NoError(t, MessageText("message", good, 4000), "%q", good)
	}
}
