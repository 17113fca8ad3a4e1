// Package check holds the input rules that messaging and attachments share:
// identifiers chosen by clients, text, page sizes and file names. Each rule
// takes the name of the parameter it checks, and returns nil or an *Error
// naming it, which the services turn into a *messaging.Error of kind
// ErrInvalid (a 400 naming the parameter over HTTP):
//
//	if err := check.ConversationID("conversation_id", in.ConversationID); err != nil {
//		return Message{}, err
//	}
//	name, err := check.Filename("filename", u.Filename) // cleaned to its base name
package check

import (
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Error is an argument that breaks a rule. The services turn it into a
// *messaging.Error of kind ErrInvalid with the same Code, Param and
// Message.
type Error struct {
	// Code is CodeMissing or CodeInvalid.
	Code string
	// Param names the argument at fault.
	Param string
	// Message is written for people.
	Message string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// The codes of an Error, as in the API's error object.
const (
	CodeMissing = "parameter_missing"
	CodeInvalid = "parameter_invalid"
)

// Missing reports that a required parameter is absent.
func Missing(param string) *Error {
	return &Error{Code: CodeMissing, Param: param, Message: "missing required parameter: " + param}
}

// BadParam reports that a parameter is malformed or out of range.
func BadParam(param, msg string) *Error {
	return &Error{Code: CodeInvalid, Param: param, Message: msg}
}

// ConversationID checks a client-chosen conversation id: 1 to 128 letters,
// digits and _ - . :
func ConversationID(param, s string) error {
	if s == "" {
		return Missing(param)
	}
	if len(s) > 128 {
		return BadParam(param, param+" must be at most 128 characters")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':') {
			return BadParam(param, param+" may hold only letters, digits and _ - . :")
		}
	}
	return nil
}

// Text checks that s is valid UTF-8 with no control characters; newline and
// tab are allowed when multiline is true.
func Text(param, s string, multiline bool) error {
	if !utf8.ValidString(s) {
		return BadParam(param, param+" must be valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\t')) {
			return BadParam(param, param+" must not contain control characters")
		}
	}
	return nil
}

// invisible reports the characters that change how text around them is
// shown without being shown themselves: bidirectional controls (which can
// make "gnp.exe" look like "exe.png") and the zero-width space and no-break
// space. The zero-width joiner of emoji sequences is not among them.
func invisible(r rune) bool {
	return unicode.Is(unicode.Bidi_Control, r) || r == '\u200b' || r == '\u2060' || r == '\ufeff'
}

// bidiOverride reports the bidirectional embeddings and overrides (LRE,
// RLE, PDF, LRO, RLO), which make text show in another order than it is
// read ("exe.png" shown for "gnp.exe"). Marks and isolates, which right-
// to-left text needs, are allowed in messages.
func bidiOverride(r rune) bool { return '\u202a' <= r && r <= '\u202e' }

// MessageText checks the text of a message: required, not only white space,
// at most max characters, no control characters but newline and tab, and no
// bidirectional embedding or override.
func MessageText(param, s string, max int) error {
	if s == "" {
		return Missing(param)
	}
	if err := Text(param, s, true); err != nil {
		return err
	}
	if strings.TrimSpace(s) == "" {
		return BadParam(param, param+" must not be empty")
	}
	if strings.ContainsFunc(s, bidiOverride) {
		return BadParam(param, param+" must not contain bidirectional embedding or override characters (U+202A to U+202E)")
	}
	if n := utf8.RuneCountInString(s); n > max {
		return BadParam(param, param+" is too long: at most "+strconv.Itoa(max)+" characters")
	}
	return nil
}

// ReactionName checks a reaction name: 1 to 64 characters, no white space,
// brackets, slashes, control or invisible characters, and not "." or ".."
// (a name is also a path segment: DELETE …/reactions/{name}).
func ReactionName(param, s string) error {
	if s == "" {
		return BadParam(param, "a reaction name must not be empty")
	}
	if err := Text(param, s, false); err != nil {
		return err
	}
	if utf8.RuneCountInString(s) > 64 {
		return BadParam(param, "a reaction name must be at most 64 characters")
	}
	if strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '[' || r == ']' || r == '/' || invisible(r) }) {
		return BadParam(param, "a reaction name must not contain white space, brackets, slashes or invisible characters")
	}
	if s == "." || s == ".." {
		return BadParam(param, "a reaction name must not be . or ..")
	}
	return nil
}

// Limit resolves a page size: 0 means the default of 10; anything outside
// 1..max is an error naming param "limit".
func Limit(n, max int) (int, error) {
	if n == 0 {
		return min(10, max), nil
	}
	if n < 1 || n > max {
		return 0, BadParam("limit", "limit must be between 1 and "+strconv.Itoa(max))
	}
	return n, nil
}

// Cursors resolves the ids of starting_after and ending_before, of which at
// most one may be set, to positions in a list. at reports an item's
// position and whether it belongs to the list being paged (false for an
// unknown or hidden id); an id that does not is an error naming its
// parameter.
func Cursors[P any](after, before string, at func(id string) (P, bool, error)) (afterPos, beforePos *P, err error) {
	if after != "" && before != "" {
		return nil, nil, BadParam("ending_before", "starting_after and ending_before cannot be used together")
	}
	resolve := func(param, id string) (*P, error) {
		if id == "" {
			return nil, nil
		}
		pos, ok, err := at(id)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, UnknownCursor(param, id)
		}
		return &pos, nil
	}
	if afterPos, err = resolve("starting_after", after); err != nil {
		return nil, nil, err
	}
	beforePos, err = resolve("ending_before", before)
	return afterPos, beforePos, err
}

// UnknownCursor is the error of a cursor parameter (starting_after,
// ending_before) whose id names no item of the list being paged.
func UnknownCursor(param, id string) error {
	return BadParam(param, param+" names no item of this list: "+id)
}

// Filename cleans an uploaded file's name: its base name (after the last /
// or \), invalid UTF-8 and the characters unseenInName reports removed,
// surrounding white space trimmed, and cut to at most 255 bytes on a
// character boundary, keeping its extension (see cutName). A name that is
// empty after cleaning, "." or ".." is an error. Cleaning a cleaned name
// changes nothing.
func Filename(param, name string) (string, error) {
	name = strings.ToValidUTF8(name, "")
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if unseenInName(r) {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(cutName(strings.TrimSpace(name), maxNameBytes))
	if name == "" || name == "." || name == ".." || path.Base(name) != name {
		return "", BadParam(param, param+" is empty or not a valid file name")
	}
	return name, nil
}

// maxNameBytes is the longest file name, in bytes of UTF-8.
const maxNameBytes = 255

// maxExtBytes is the longest extension (with its dot) that cutName keeps:
// longer than any in use, short enough that the name keeps most of its
// stem.
const maxExtBytes = 32

// cutName cuts name to at most max bytes on a character boundary. The cut
// is made in the stem so that the extension (path.Ext: from the last dot)
// stays, unless that "extension" is longer than maxExtBytes or holds white
// space, which is no extension but a name with a dot in it: then the end
// is cut. (300 × "A" + ".txt" gives 251 × "A" + ".txt".) Only the last
// extension is kept: "….tar.gz" keeps ".gz".
func cutName(name string, max int) string {
	if len(name) <= max {
		return name
	}
	ext := path.Ext(name)
	if len(ext) < 2 || len(ext) > maxExtBytes || len(ext) == len(name) || strings.ContainsFunc(ext, unicode.IsSpace) {
		ext = ""
	}
	stem := name[:len(name)-len(ext)]
	for len(stem) > max-len(ext) {
		_, size := utf8.DecodeLastRuneInString(stem)
		stem = stem[:len(stem)-size]
	}
	return strings.TrimRightFunc(stem, unicode.IsSpace) + ext
}

// unseenInName reports the characters removed from file names: those that
// are not shown, or that break the line a name is shown on, so that a name
// reads as what it is. They are the control characters; the format
// characters (category Cf: the bidirectional controls, which can make
// "gnp.exe" look like "exe.png", the soft hyphen, zero-width spaces, the
// word joiner and invisible operators, the byte order mark, the tag
// characters U+E0000 to U+E007F, the interlinear annotation marks, …);
// the line and paragraph separators U+2028 and U+2029; and the other
// code points Unicode says to ignore when they cannot be shown (Hangul
// fillers, the combining grapheme joiner, unassigned tag and format
// code points). The zero-width joiner and non-joiner (U+200D, U+200C)
// stay: emoji sequences and Persian and Indic words need them, and they
// hide nothing. So do variation selectors, which choose how an emoji is
// drawn.
func unseenInName(r rune) bool {
	if r == '\u200c' || r == '\u200d' {
		return false
	}
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Other_Default_Ignorable_Code_Point)
}

// IdempotencyKey checks an idempotency key: 1 to 255 characters of valid
// UTF-8 with no control characters.
func IdempotencyKey(param, key string) error {
	if key == "" {
		return Missing(param)
	}
	if err := Text(param, key, false); err != nil {
		return BadParam(param, "an idempotency key is 1 to 255 characters with no control characters")
	}
	if utf8.RuneCountInString(key) > 255 {
		return BadParam(param, "an idempotency key is at most 255 characters")
	}
	return nil
}
