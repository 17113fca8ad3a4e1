package check

import (
	"path"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzFilename: a cleaned name is valid UTF-8 of at most 255 bytes, with no
// separator or unseen character (unseenInName), not "." or "..", and
// cleaning it again changes nothing; a name that was cut keeps its short
// extension.
func FuzzFilename(f *testing.F) {
	for _, s := range []string{"notes.txt", "../../etc/passwd", `C:\Users\a\résumé.pdf`, "a\x00b", " . ", "\u202egnp.exe",
		strings.Repeat("é", 200), "\xff\xfe.txt", "a/", "..", "x\u200by",
		strings.Repeat("A", 300) + ".txt", strings.Repeat("é", 200) + ".pdf", "soft\u00adhyphen\u2028\U000E0041.txt"} {
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
			if r == '/' || r == '\\' || unicode.IsControl(r) || invisible(r) || unseenInName(r) {
				t.Fatalf("%q cleaned to %q, which holds %U", name, got, r)
			}
		}
		if again, err := Filename("filename", got); err != nil || again != got {
			t.Fatalf("cleaning %q again gives %q, %v", got, again, err)
		}
		if ext := path.Ext(name); len(name) > 300 && len(ext) >= 2 && len(ext) <= 8 && strings.Trim(ext[1:], "abcdefghijklmnopqrstuvwxyz") == "" && !strings.HasSuffix(got, ext) {
			t.Fatalf("%q cleaned to %q, without its extension %q", name, got, ext)
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
