package check

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzFilename: a cleaned name is valid UTF-8 of at most 255 bytes, with no
// separator, control or invisible character, not "." or "..", and cleaning
// it again changes nothing.
func FuzzFilename(f *testing.F) {
	for _, s := range []string{"notes.txt", "../../etc/passwd", `C:\Users\a\résumé.pdf`, "a\x00b", " . ", "\u202egnp.exe",
		strings.Repeat("é", 200), "\xff\xfe.txt", "a/", "..", "x\u200by"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got, err := Filename("filename", name)
		if err != nil {
			return
		}
		if !utf8.ValidString(got) || len(got) > 255 || got == "." || got == ".." || got == "" {
			t.Fatalf("%q cleaned to %q", name, got)
		}
		for _, r := range got {
			if r == '/' || r == '\\' || unicode.IsControl(r) || invisible(r) {
				t.Fatalf("%q cleaned to %q, which holds %U", name, got, r)
			}
		}
		if again, err := Filename("filename", got); err != nil || again != got {
			t.Fatalf("cleaning %q again gives %q, %v", got, again, err)
		}
	})
}

// FuzzConversationID: an accepted id is 1 to 128 letters, digits and
// _ - . : only.
func FuzzConversationID(f *testing.F) {
	for _, s := range []string{"general", "a:b.c-d_e", "", strings.Repeat("a", 129), "a b", "é", "private/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ConversationID("conversation_id", s) != nil {
			return
		}
		if len(s) < 1 || len(s) > 128 || strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:") != "" {
			t.Fatalf("%q accepted", s)
		}
	})
}
