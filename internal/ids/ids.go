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
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
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

// Sealer makes the opaque ids of a store's numbered items (its events)
// of their numbers, under a secret key of the store, and reads them back:
// an id is the AES encryption of the number (64 bits) and 64 zero bits,
// written as every id is. Ids of consecutive numbers look unrelated, so
// an id tells nothing of the number, nor of how many items came between
// two ids; the zero bits make an id that no Sealer of this key made (one
// changed by hand, another store's) read as none, but with a chance of
// 2^-64.
type Sealer struct{ block cipher.Block }

// NewSealer returns the Sealer of key, which is 16, 24 or 32 bytes.
func NewSealer(key []byte) (*Sealer, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return &Sealer{b}, nil
}

// Seal returns the id of the number n with the given prefix.
func (s *Sealer) Seal(prefix string, n int64) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(n))
	s.block.Encrypt(b[:], b[:])
	return prefix + encode(b)
}

// Open returns the number of an id that Seal made with this prefix and
// key, and false for any other string.
func (s *Sealer) Open(prefix, id string) (int64, bool) {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok {
		return 0, false
	}
	b, ok := decode(rest)
	if !ok {
		return 0, false
	}
	s.block.Decrypt(b[:], b[:])
	if binary.BigEndian.Uint64(b[8:]) != 0 {
		return 0, false
	}
	n := binary.BigEndian.Uint64(b[:8])
	if n == 0 || n > 1<<63-1 {
		return 0, false
	}
	return int64(n), true
}
