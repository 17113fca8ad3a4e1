package httpadapter

import (
	"bytes"
	"io"
	"mime/multipart"
)

// errUnclosed answers a multipart body that ends before its closing
// delimiter.
var errUnclosed = bodyInvalid("the multipart/form-data body ends before its closing boundary (--boundary--): it was cut short")

// formParts reads the parts of a multipart/form-data body as
// multipart.Reader does, but refuses a body that ends without its closing
// delimiter "--boundary--". mime/multipart takes the end of a body cut just
// after a delimiter line for the end of the parts (the part it expected
// has no header yet), so a truncated upload was accepted as complete.
//
// The closing delimiter is found by watching the bytes read for
// "\n--boundary--" (or "--boundary--" at the start), which no part may
// hold: a boundary never occurs in the parts it delimits (RFC 2046, 5.1.1).
// A part whose lines end in CRLF could still hold "\n--boundary--" after a
// bare LF, which the watch would take for the end; only a body made so on
// purpose does, and it gains nothing it could not have by closing the body.
type formParts struct {
	mr    *multipart.Reader
	watch *closeWatch
}

func newFormParts(r io.Reader, boundary string) *formParts {
	delim := []byte("\n--" + boundary + "--")
	w := &closeWatch{r: r, delim: delim, tail: make([]byte, 1, 2*len(delim))}
	w.tail[0] = '\n' // the start of the body counts as a line start
	return &formParts{mr: multipart.NewReader(w, boundary), watch: w}
}

// NextPart returns the next part, io.EOF after the closing delimiter, or
// errUnclosed when the body ends without it.
func (p *formParts) NextPart() (*multipart.Part, error) {
	part, err := p.mr.NextPart()
	if err == io.EOF && !p.watch.seen {
		return nil, errUnclosed
	}
	return part, err
}

// closeWatch reports whether the bytes read through it held delim. It
// keeps the last len(delim)-1 bytes read, so that it finds a delim split
// between reads, and looks at no byte twice but those. Its tail has room
// for 2*len(delim) bytes, so that no read allocates.
type closeWatch struct {
	r     io.Reader
	delim []byte
	tail  []byte // the last bytes read, fewer than len(delim)
	seen  bool
}

func (w *closeWatch) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n == 0 || w.seen {
		return n, err
	}
	b := p[:n]
	// Across the previous read and this one.
	joint := append(w.tail, b[:min(len(b), len(w.delim)-1)]...)
	if bytes.Contains(joint, w.delim) || bytes.Contains(b, w.delim) {
		w.seen = true
		return n, err
	}
	keep := len(w.delim) - 1
	if len(joint) > keep {
		joint = joint[len(joint)-keep:]
	}
	if len(b) >= keep {
		joint = b[len(b)-keep:]
	}
	w.tail = append(w.tail[:0], joint...)
	return n, err
}
