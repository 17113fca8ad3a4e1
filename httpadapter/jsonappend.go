package httpadapter

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// This file appends JSON values to a byte slice, as encoding/json writes
// them (compact, HTML-escaped), without its reflection and without a new
// slice per value: a page of messages is written into one buffer.
// FuzzAppendString checks appendString against json.Marshal.

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it: '"', '\\' and control characters, '<', '>' and '&' (as
// \u003c, \u003e, \u0026), U+2028 and U+2029, and each byte of invalid
// UTF-8 as \ufffd.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendKey appends "key": (key needs no escaping) after a comma unless
// first.
func appendKey(b []byte, key string, first bool) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

// appendUnix appends t in Unix seconds.
func appendUnix(b []byte, t time.Time) []byte {
	return strconv.AppendInt(b, t.Unix(), 10)
}

// appendUnixOrNull appends t in Unix seconds, or null when t is zero.
func appendUnixOrNull(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	return appendUnix(b, t)
}

// appendStringOrNull appends s as a string, or null when s is "".
func appendStringOrNull(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}
