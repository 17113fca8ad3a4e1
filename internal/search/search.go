// Package search splits text into the words that message search compares:
// runs of Unicode letters and digits (with the marks that belong to them),
// with case and accents folded, so that "CAFÉ", "Café" and "cafe" are one
// word. Every backend stores and queries the words this package returns,
// so that one query finds the same messages on all of them, whatever each
// engine's own tokenizer, stop words or minimum word length would do.
//
// Folding is Unicode compatibility decomposition (NFKD: "ﬁ" is "fi", "①" is
// "1", full-width letters are the ASCII ones), without the combining
// diacritical marks (the accents of Latin, Greek and Cyrillic letters; the
// vowel signs of Indic scripts stay), then full case folding ("ß" is
// "ss"), recomposed (NFC). Scripts written without spaces between words (Chinese,
// Japanese, Thai) give one word for each run of letters between spaces and
// punctuation: a search finds such text by a whole run, or by its start
// as the last word of the query.
package search

import (
	"errors"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// MaxWordRunes is the length at which words are cut: longer words are
// stored and compared by their first MaxWordRunes characters, which keeps
// every word within what each engine indexes (PostgreSQL's lexemes,
// MySQL's full-text tokens).
const MaxWordRunes = 64

// Words returns the distinct folded words of text, sorted.
func Words(text string) []string {
	var words []string
	each(text, func(w string) { words = append(words, w) })
	slices.Sort(words)
	return slices.Compact(words)
}

// Query is a parsed search query: a message matches when its words
// include every one of Words, and one that starts with Prefix (when not
// empty).
type Query struct {
	// Words are the words that must be found whole, distinct, in the order
	// of the query.
	Words []string
	// Prefix is the query's last word, which also matches the words it
	// starts, so that results follow a person typing; "" when a word of
	// Words already starts with it (the condition then always holds).
	Prefix string
}

// ErrNoWords is returned by Parse for a query that holds no word.
var ErrNoWords = errors.New("search: the query holds no word")

// Parse splits q into its folded words, the last one a prefix.
func Parse(q string) (Query, error) {
	var all []string
	each(q, func(w string) { all = append(all, w) })
	if len(all) == 0 {
		return Query{}, ErrNoWords
	}
	prefix := all[len(all)-1]
	var out Query
	for _, w := range all[:len(all)-1] {
		if !slices.Contains(out.Words, w) {
			out.Words = append(out.Words, w)
		}
	}
	if !slices.ContainsFunc(out.Words, func(w string) bool { return strings.HasPrefix(w, prefix) }) {
		out.Prefix = prefix
	}
	return out, nil
}

// Match reports whether a text whose words (as Words returns them) are
// words matches q. It is the reference the backends agree with.
func (q Query) Match(words []string) bool {
	for _, w := range q.Words {
		if _, ok := slices.BinarySearch(words, w); !ok {
			return false
		}
	}
	if q.Prefix == "" {
		return true
	}
	i, _ := slices.BinarySearch(words, q.Prefix)
	return i < len(words) && strings.HasPrefix(words[i], q.Prefix)
}

// each calls fn with every folded word of text, in order, repeats
// included. It splits text into runs of letters, numbers and marks, folds
// each run that is not ASCII, and splits the folded run again (folding can
// make separators: "½" is "1⁄2").
func each(text string, fn func(string)) {
	start, ascii := -1, true
	for i, r := range text {
		if r < utf8.RuneSelf && isWordRune(r) || r >= utf8.RuneSelf && isRawWordRune(r) {
			if start < 0 {
				start, ascii = i, true
			}
			ascii = ascii && r < utf8.RuneSelf
			continue
		}
		if start >= 0 {
			emitRun(text[start:i], ascii, fn)
			start = -1
		}
	}
	if start >= 0 {
		emitRun(text[start:], ascii, fn)
	}
}

func emitRun(run string, ascii bool, fn func(string)) {
	if ascii {
		emit(run, fn)
		return
	}
	folded := fold(run)
	start := -1
	for i, r := range folded {
		if isWordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			emit(folded[start:i], fn)
			start = -1
		}
	}
	if start >= 0 {
		emit(folded[start:], fn)
	}
}

// emit passes w, cut to MaxWordRunes and lower-cased when ASCII (fold has
// folded the rest), to fn.
func emit(w string, fn func(string)) {
	if len(w) > MaxWordRunes {
		if n := utf8.RuneCountInString(w); n > MaxWordRunes {
			i := 0
			for range MaxWordRunes {
				_, size := utf8.DecodeRuneInString(w[i:])
				i += size
			}
			w = w[:i]
		}
	}
	fn(lowerASCII(w))
}

// isWordRune reports whether r belongs to a word of folded text.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r)
}

// isRawWordRune reports whether r, not ASCII, belongs to a run of text
// before folding: letters, numbers of every kind ("①", "²") and marks.
func isRawWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.M, r)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// diacritics are the combining diacritical marks: the accents of Latin,
// Greek and Cyrillic letters once NFKD has parted them from their letters;
// other marks (the vowel signs of Indic scripts) are letters of their words.
var diacritics = &unicode.RangeTable{R16: []unicode.Range16{
	{Lo: 0x0300, Hi: 0x036f, Stride: 1}, // Combining Diacritical Marks
	{Lo: 0x1ab0, Hi: 0x1aff, Stride: 1}, // … Extended
	{Lo: 0x1dc0, Hi: 0x1dff, Stride: 1}, // … Supplement
	{Lo: 0x20d0, Hi: 0x20ff, Stride: 1}, // … for Symbols (enclosing marks too)
	{Lo: 0xfe20, Hi: 0xfe2f, Stride: 1}, // Combining Half Marks
}}

// folder does full case folding; a Caser of Fold is safe for concurrent use.
var folder = cases.Fold()

// fold folds the case and accents of a run that is not all ASCII. It
// decomposes again after case folding, which can make what decomposition
// changes (U+0130 folds to "i" and a combining dot), and lower-cases after
// folding, which makes some letters capital (Cherokee's small letters fold
// to the capitals, and x/text folds the capitals back to the small ones).
func fold(run string) string {
	s := undiacritic(norm.NFKD.String(run))
	if isASCII(s) {
		return s // lower-cased by emit
	}
	s = strings.ToLower(folder.String(s))
	return norm.NFC.String(undiacritic(norm.NFKD.String(s)))
}

// undiacritic removes the diacritics of decomposed s.
func undiacritic(s string) string {
	i := strings.IndexFunc(s, isDiacritic)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		if !isDiacritic(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isDiacritic(r rune) bool { return r >= 0x300 && unicode.Is(diacritics, r) }
