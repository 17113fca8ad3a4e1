package driver

import "github.com/parleychat/parley/internal/search"

// SearchWords returns the distinct words of text that search compares,
// sorted: runs of Unicode letters and digits, with case and accents folded
// ("CAFÉ", "Café" and "cafe" are "cafe"), each cut to MaxSearchWordRunes
// characters. A backend stores them with the message's text (when it
// creates or edits it) and matches a SearchQuery against them, so that
// every backend finds the same messages whatever its own tokenizer, stop
// words or minimum word length would do.
func SearchWords(text string) []string { return search.Words(text) }

// MaxSearchWordRunes is the most characters of a word of SearchWords.
const MaxSearchWordRunes = search.MaxWordRunes
