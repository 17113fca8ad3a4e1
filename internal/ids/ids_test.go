package ids

import (
	"crypto/rand"
	"encoding/binary"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewSortsInCreationOrder(t *testing.T) {
	var got []string
	for range 5000 {
		got = append(got, New(Message))
	}
	assertIncreasing(t, Message, got)
}

// TestNewAtSortsWithinOneMillisecond makes many ids for the same instant:
// the random part is incremented for each, so they still sort in order.
func TestNewAtSortsWithinOneMillisecond(t *testing.T) {
	at := time.Now().Add(time.Hour) // later than any id made so far
	var got []string
	for range 100_000 {
		got = append(got, NewAt(Attachment, at))
	}
	assertIncreasing(t, Attachment, got)
	first, _ := decode(strings.TrimPrefix(got[0], Attachment))
	last, _ := decode(strings.TrimPrefix(got[len(got)-1], Attachment))
	assert.Equal(t, first[:6], last[:6], "one millisecond")
}

// TestNewIsSafeForConcurrentUse: ids made at once by many goroutines are
// distinct, and each goroutine's are in order.
func TestNewIsSafeForConcurrentUse(t *testing.T) {
	const workers, each = 8, 2000
	got := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				got[w] = append(got[w], New(Contact))
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, ids := range got {
		assertIncreasing(t, Contact, ids)
		for _, id := range ids {
			require.False(t, seen[id], "duplicate id %s", id)
			seen[id] = true
		}
	}
}

func TestNewAtEncodesTime(t *testing.T) {
	at := time.Now().Add(2 * time.Hour) // later than any id made so far
	a := NewAt(Contact, at)
	require.True(t, Valid(Contact, a), "%q", a)
	b, ok := decode(strings.TrimPrefix(a, Contact))
	require.True(t, ok)
	var ms [8]byte
	copy(ms[2:], b[:6])
	assert.Equal(t, uint64(at.UnixMilli()), binary.BigEndian.Uint64(ms[:]))

	later := NewAt(Contact, at.Add(-time.Minute)) // clock going back still sorts after
	assert.Greater(t, later, a)
}

func TestValid(t *testing.T) {
	id := New(Message)
	suffix := strings.TrimPrefix(id, Message)
	// at puts c at position i of the suffix.
	at := func(i int, c string) string { return Message + suffix[:i] + c + suffix[i+1:] }
	for _, tc := range []struct {
		name, prefix, s string
		want            bool
	}{
		{"new id", Message, id, true},
		{"zero", Message, Message + strings.Repeat("0", 26), true},
		{"largest", Message, Message + "7" + strings.Repeat("z", 25), true},
		{"every letter", Message, Message + "0123456789abcdefghjkmnpqrs", true},
		{"every letter 2", Message, Message + "0000000000tvwxyz0000000000", true},
		{"other prefix", "req_", "req_" + suffix, true},
		{"no prefix", "", suffix, true},

		{"i", Message, at(10, "i"), false},
		{"l", Message, at(11, "l"), false},
		{"o", Message, at(12, "o"), false},
		{"u", Message, at(25, "u"), false},
		{"first 8", Message, Message + "8" + suffix[1:], false},
		{"first z", Message, Message + "z" + suffix[1:], false},
		{"upper-case", Message, Message + strings.ToUpper(suffix), false},
		{"one upper-case letter", Message, Message + "0000000000000000000000000A", false},
		{"upper-case prefix", Message, "MSG_" + suffix, false},
		{"punctuation", Message, at(20, "-"), false},
		{"non-ASCII", Message, Message + suffix[:24] + "é", false},
		{"NUL", Message, at(3, "\x00"), false},
		{"short", Message, id[:len(id)-1], false},
		{"long", Message, id + "0", false},
		{"empty", Message, "", false},
		{"prefix only", Message, Message, false},
		{"wrong prefix", Attachment, id, false},
		{"missing prefix", Message, suffix, false},
		{"prefix twice", Message, Message + id[:len(id)-len(Message)], false},
	} {
		assert.Equal(t, tc.want, Valid(tc.prefix, tc.s), "%s: Valid(%q, %q)", tc.name, tc.prefix, tc.s)
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	cases := [][16]byte{{}, {0: 0xff, 15: 0xff}}
	var ones [16]byte
	for i := range ones {
		ones[i] = 0xff
	}
	cases = append(cases, ones)
	for range 1000 {
		var b [16]byte
		_, _ = rand.Read(b[:])
		cases = append(cases, b)
	}
	for _, b := range cases {
		s := encode(b)
		got, ok := decode(s)
		require.True(t, ok, "decode(%q)", s)
		require.Equal(t, b, got, "decode(encode(%x)) = decode(%q)", b, s)
	}
	assert.Equal(t, strings.Repeat("0", 26), encode([16]byte{}))
	assert.Equal(t, "7"+strings.Repeat("z", 25), encode(ones))
}

// TestEncodeSortsLikeBytes: the order of two ids as strings is the order
// of their 128 bits, which is what makes them sort by time.
func TestEncodeSortsLikeBytes(t *testing.T) {
	for range 1000 {
		var a, b [16]byte
		_, _ = rand.Read(a[:])
		b = a
		i := int(a[0]) % 16
		b[i]++ // b differs from a in one byte, often by carrying nothing
		want := slices.Compare(a[:], b[:])
		assert.Equal(t, want, strings.Compare(encode(a), encode(b)), "%x vs %x", a, b)
	}
}

func TestIncrementCarries(t *testing.T) {
	b := [10]byte{0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff}
	increment(&b)
	assert.Equal(t, [10]byte{0, 0, 0, 0, 0, 0, 0, 2, 0, 0}, b)
}

// FuzzValid: whatever Valid accepts is exactly what encode writes for the
// bits decode reads from it, so an accepted id has one spelling.
func FuzzValid(f *testing.F) {
	f.Add(New(Message))
	f.Add(Message + strings.Repeat("0", 26))
	f.Add(Message + "7" + strings.Repeat("z", 25))
	f.Add(Message + "8" + strings.Repeat("0", 25))
	f.Add(Message + "0123456789abcdefghjkmnpqrs")
	f.Add(Message + "ilou0123456789abcdefghjkmn")
	f.Add(strings.ToUpper(New(Message)))
	f.Add("msg_")
	f.Fuzz(func(t *testing.T, s string) {
		if !Valid(Message, s) {
			return
		}
		b, ok := decode(s[len(Message):])
		if !ok {
			t.Fatalf("Valid(%q) but decode fails", s)
		}
		if got := Message + encode(b); got != s {
			t.Fatalf("Valid(%q) but it encodes back as %q", s, got)
		}
	})
}

// assertIncreasing checks that ids are valid and strictly increasing.
func assertIncreasing(tb testing.TB, prefix string, ids []string) {
	tb.Helper()
	for i, id := range ids {
		require.True(tb, Valid(prefix, id), "invalid id %q", id)
		if i > 0 {
			require.Less(tb, ids[i-1], id, "ids %d and %d are not in creation order", i-1, i)
		}
	}
}

func TestSealerIdsAreOpaque(t *testing.T) {
	key := make([]byte, 16)
	key[0] = 1
	s, err := NewSealer(key)
	require.NoError(t, err)
	other, err := NewSealer(make([]byte, 16))
	require.NoError(t, err)
	seen := map[string]bool{}
	var inOrder []string
	for _, n := range []int64{1, 2, 3, 255, 256, 1 << 40, 1<<63 - 1} {
		id := s.Seal(Event, n)
		assert.True(t, Valid(Event, id), "%d: %q is a valid id", n, id)
		assert.False(t, seen[id], "%d: ids of different numbers differ", n)
		seen[id] = true
		inOrder = append(inOrder, id)
		assert.Equal(t, id, s.Seal(Event, n), "one id per number")
		got, ok := s.Open(Event, id)
		assert.True(t, ok, "%d", n)
		assert.Equal(t, n, got)
		_, ok = s.Open(Message, id)
		assert.False(t, ok, "another prefix")
		_, ok = other.Open(Event, id)
		assert.False(t, ok, "another key")
		assert.NotEqual(t, id, other.Seal(Event, n), "another key, another id")
	}
	assert.False(t, slices.IsSorted(inOrder), "ids do not sort by number")
	// Neighbours share no long prefix, as numbered or time-ordered ids do.
	a, b := s.Seal(Event, 1000), s.Seal(Event, 1001)
	assert.NotEqual(t, a[:8], b[:8])

	// No id of New, no changed id and no other string is one of s's.
	for range 10_000 {
		_, ok := s.Open(Event, NewAt(Event, time.Now()))
		require.False(t, ok)
	}
	id := s.Seal(Event, 42)
	for i := len(Event); i < len(id); i++ {
		c := byte('0')
		if id[i] == '0' {
			c = '1'
		}
		changed := id[:i] + string(c) + id[i+1:]
		_, ok := s.Open(Event, changed)
		assert.False(t, ok, "%q changed at %d", changed, i)
	}
	for _, str := range []string{"", "evt_", "evt_zzzzzzzzzzzzzzzzzzzzzzzzzz", id[:29]} {
		_, ok := s.Open(Event, str)
		assert.False(t, ok, "%q", str)
	}
	_, err = NewSealer([]byte("short"))
	assert.Error(t, err)
}
