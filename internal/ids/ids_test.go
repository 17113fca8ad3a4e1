package ids

import (
	"sort"
	"strings"
	"testing"
	"time"
)

func TestNewSortsInCreationOrder(t *testing.T) {
	var got []string
	for range 5000 {
		got = append(got, New(Message))
	}
	if !sort.StringsAreSorted(got) {
		t.Fatal("ids are not in creation order")
	}
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
		if !Valid(Message, id) {
			t.Fatalf("invalid id %q", id)
		}
	}
}

func TestNewAtEncodesTime(t *testing.T) {
	a := NewAt(Contact, time.Unix(1000, 0))
	if !strings.HasPrefix(a, Contact) || len(a) != len(Contact)+26 {
		t.Fatalf("bad id %q", a)
	}
	b := NewAt(Contact, time.Unix(999, 0)) // clock going back still sorts after
	if b <= a {
		t.Fatalf("%s not after %s", b, a)
	}
	if Valid(Message, a) || Valid(Contact, a+"x") {
		t.Fatal("Valid accepted a wrong id")
	}
}
