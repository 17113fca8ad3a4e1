package search

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWordsFold(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"CAFÉ Café cafe", []string{"cafe"}},
		{"Die Straße, GRÜSSE!", []string{"die", "grusse", "strasse"}},
		{"Élève à l'école", []string{"a", "ecole", "eleve", "l"}},
		{"ПРИВЕТ, мир! Ёлка", []string{"елка", "мир", "привет"}},
		{"ΚΑΛΗΜΈΡΑ οδός ΟΔΟΣ", []string{"καλημερα", "οδοσ"}},
		{"it's room 42b; e-mail: bob@example.com", []string{"42b", "bob", "com", "e", "example", "it", "mail", "room", "s"}},
		{"ﬁne ① ＡＢＣ", []string{"1", "abc", "fine"}},
		{"İstanbul", []string{"istanbul"}},
		{"東京タワー 行こう", []string{"東京タワー", "行こう"}},
		{"नमस्ते दुनिया", []string{"दुनिया", "नमस्ते"}},
		{"   \n\t.,;!?", nil},
		{"", nil},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Words(tt.text), "Words(%q)", tt.text)
	}
}

func TestWordsCut(t *testing.T) {
	long := strings.Repeat("é", MaxWordRunes+10)
	got := Words(long + " " + strings.Repeat("A", 200))
	require.Len(t, got, 2)
	for _, w := range got {
		assert.Equal(t, MaxWordRunes, utf8.RuneCountInString(w), w)
	}
	assert.Equal(t, strings.Repeat("a", MaxWordRunes), got[0])
	assert.Equal(t, strings.Repeat("e", MaxWordRunes), got[1])
}

func TestParse(t *testing.T) {
	tests := []struct {
		q    string
		want Query
	}{
		{"meet", Query{Prefix: "meet"}},
		{"Team MEET", Query{Words: []string{"team"}, Prefix: "meet"}},
		{"meeting mee", Query{Words: []string{"meeting"}}},
		{"café café caf", Query{Words: []string{"cafe"}}},
		{"a b a c", Query{Words: []string{"a", "b"}, Prefix: "c"}},
		{"notes, draft!", Query{Words: []string{"notes"}, Prefix: "draft"}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.q)
		require.NoError(t, err, tt.q)
		assert.Equal(t, tt.want, got, "Parse(%q)", tt.q)
	}
	for _, q := range []string{"", " ", "!!! ...", "\u00ad\u200b"} {
		_, err := Parse(q)
		assert.ErrorIs(t, err, ErrNoWords, "Parse(%q)", q)
	}
}

func TestMatch(t *testing.T) {
	text := Words("Meeting notes: the CAFÉ on Friday")
	tests := []struct {
		q    string
		want bool
	}{
		{"meet", true},
		{"notes meet", true},
		{"cafe fri", true},
		{"Café", true},
		{"the", true},
		{"th", true},
		{"notes", true},
		{"note", true},     // the last word is a prefix
		{"note fr", false}, // but earlier words are whole
		{"saturday", false},
		{"meeting cafe sat", false},
		{"friday meetings", false},
	}
	for _, tt := range tests {
		q, err := Parse(tt.q)
		require.NoError(t, err)
		assert.Equal(t, tt.want, q.Match(text), "query %q in %v", tt.q, text)
	}
}

// FuzzParse checks that any query parses without panicking into valid
// words, and that folding is idempotent: a word searched for is found in
// a text that is that word.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"meet", "CAFÉ Straße", "İı ß ẞ ς Σ", "東京 ①", "a\u0301\u20dd", "\xff\xfe", "㎆ ǰ ΐ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		parsed, err := Parse(q)
		if err != nil {
			if len(Words(q)) != 0 {
				t.Fatalf("Parse(%q) failed but Words finds %q", q, Words(q))
			}
			return
		}
		all := append(append([]string(nil), parsed.Words...), parsed.Prefix)
		for _, w := range all {
			if w == "" && w != parsed.Prefix {
				t.Fatalf("empty word in %+v", parsed)
			}
			if !utf8.ValidString(w) || utf8.RuneCountInString(w) > MaxWordRunes {
				t.Fatalf("bad word %q from %q", w, q)
			}
		}
		for _, w := range Words(q) {
			if again := Words(w); len(again) != 1 || again[0] != w {
				t.Fatalf("folding %q is not idempotent: %q", w, again)
			}
		}
		if !parsed.Match(Words(q)) {
			t.Fatalf("query %q does not match its own text (%+v, %q)", q, parsed, Words(q))
		}
	})
}

func BenchmarkWords(b *testing.B) {
	for _, bm := range []struct{ name, text string }{
		{"ascii", "Meeting notes for Friday: we agreed to ship the new onboarding flow, and Bob will write the release notes."},
		{"accents", "Réunion de vendredi : nous avons décidé de livrer le nouveau parcours d'accueil, et Zoë écrira les notes."},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Words(bm.text)
			}
		})
	}
}
