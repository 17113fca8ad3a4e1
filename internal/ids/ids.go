// Package ids makes the server's identifiers: a type prefix and a 26-character
// suffix that sorts in creation order (a ULID in lower-case Crockford base32:
// 48 bits of Unix milliseconds, then 80 bits that are random for the first id
// of a millisecond and incremented for the ones after it).
//
// Time-ordered ids append to the right edge of a B-tree index, which is what
// makes inserts cheap on every SQL backend.
//
//	id := ids.New("msg_")       // "msg_01jz…"
//	ok := ids.Valid("msg_", id) // what New writes, and nothing else
package ids

import (
	"crypto/rand"
	"strings"
	"sync"
	"time"
)

const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// Prefixes of the identifier types.
const (
	Message    = "msg_"
	Attachment = "att_"
	Contact    = "ctc_"
	Event      = "evt_"
	Revision   = "rev_"
	Upload     = "upl_"
)

var (
	mu     sync.Mutex
	lastMS uint64
	last   [10]byte
)

// New returns a new identifier with the given prefix, greater than every
// identifier this process made before with any prefix.
func New(prefix string) string {
	return NewAt(prefix, time.Now())
}

// NewAt is New for a given time; ids made for earlier times than the last one
// still sort after it (the clock never goes back within a process).
func NewAt(prefix string, t time.Time) string {
	ms := uint64(t.UnixMilli())
	mu.Lock()
	if ms <= lastMS {
		ms = lastMS
		increment(&last)
	} else {
		lastMS = ms
		_, _ = rand.Read(last[:])
		last[0] &= 0x7f // room to increment within the millisecond
	}
	r := last
	mu.Unlock()

	var b [16]byte
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	copy(b[6:], r[:])
	return prefix + encode(b)
}

func increment(b *[10]byte) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i]++
		if b[i] != 0 {
			return
		}
	}
}

// encode writes 128 bits as 26 base32 characters, most significant first.
func encode(b [16]byte) string {
	var out [26]byte
	// 130 bits of output: two leading zero bits, then the 128 bits of b.
	var acc uint32
	bits := 2
	j := 0
	for _, c := range b {
		acc = acc<<8 | uint32(c)
		bits += 8
		for bits >= 5 {
			bits -= 5
			out[j] = alphabet[(acc>>bits)&31]
			j++
		}
	}
	return string(out[:])
}

// Valid reports whether s is an id with the given prefix: the prefix, then
// exactly the 26 characters that encode writes (lower-case, from alphabet,
// the first 0-7). Other spellings of the same 128 bits (upper-case, or the
// i, l, o that Crockford's decoders read as 1, 1, 0) are not ids: ids are
// compared as strings, so each must have one spelling.
func Valid(prefix, s string) bool {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return false
	}
	_, ok = decode(rest)
	return ok
}

// values maps each byte to its value in alphabet, or to invalid.
var values = func() (v [256]byte) {
	for i := range v {
		v[i] = invalid
	}
	for i := range len(alphabet) {
		v[alphabet[i]] = byte(i)
	}
	return v
}()

const invalid = 0xff

// decode is the inverse of encode: the 128 bits that s encodes, and false if
// s is not 26 characters of alphabet whose first is 0-7 (the two bits above
// the 128 must be zero).
func decode(s string) (b [16]byte, ok bool) {
	if len(s) != 26 || values[s[0]] > 7 {
		return b, false
	}
	acc := uint32(values[s[0]])
	bits := 3
	j := 0
	for i := 1; i < len(s); i++ {
		v := values[s[i]]
		if v == invalid {
			return b, false
		}
		acc = acc<<5 | uint32(v)
		bits += 5
		if bits >= 8 {
			bits -= 8
			b[j] = byte(acc >> bits)
			j++
		}
	}
	return b, true
}

// sequencedFlag marks the ids of Sequenced in the first byte of the 80
// bits after the time, whose top bit New always leaves clear.
const sequencedFlag = 0x80

// Sequenced returns the id of a store's seq-th event, for a store that
// numbers its events itself and keeps no id of its own (an index on a
// random id is a page more that every write carries): the Unix
// milliseconds of t, then a flag no id of New has, 15 zero bits and seq.
// Two events of different seqs never have the same id, and no id of New
// is a Sequenced one. SeqOf reads the seq back.
func Sequenced(prefix string, t time.Time, seq int64) string {
	ms := uint64(t.UnixMilli())
	var b [16]byte
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	b[6] = sequencedFlag
	s := uint64(seq)
	for i := 15; i >= 8; i-- {
		b[i] = byte(s)
		s >>= 8
	}
	return prefix + encode(b)
}

// SeqOf returns the seq of an id that Sequenced made with this prefix, and
// false for any other string.
func SeqOf(prefix, id string) (int64, bool) {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok {
		return 0, false
	}
	b, ok := decode(rest)
	if !ok || b[6] != sequencedFlag || b[7] != 0 {
		return 0, false
	}
	var seq uint64
	for _, c := range b[8:] {
		seq = seq<<8 | uint64(c)
	}
	if seq == 0 || seq > 1<<63-1 {
		return 0, false
	}
	return int64(seq), true
}
