package httpadapter

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFormPartsClosing reads bodies through formParts in reads of every
// size: a body with its closing delimiter ends with io.EOF, wherever the
// reads split the delimiter; one without it ends with errUnclosed.
func TestFormPartsClosing(t *testing.T) {
	part := "--b0undary\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n" + strings.Repeat("data-", 2000) + "\r\n"
	for _, tc := range []struct {
		name, body string
		closed     bool
	}{
		{"closed", part + "--b0undary--\r\n", true},
		{"closed, no CRLF", part + "--b0undary--", true},
		{"closed, two parts", part + part + "--b0undary--\r\n", true},
		{"no parts", "--b0undary--\r\n", true},
		{"preamble", "preamble\r\n" + part + "--b0undary--\r\n", true},
		{"cut after a delimiter line", part + "--b0undary\r\n", false},
		{"cut after a part's headers", part + "--b0undary\r\nContent-Disposition: form-data; name=\"g\"\r\n\r\n", false},
		{"a lone dash", part + "--b0undary-", false},
		{"closing delimiter in the preamble only", "x--b0undary--\r\n" + part, false},
	} {
		for _, size := range []int{1, 2, 7, 13, 4096, 1 << 20} {
			r := io.Reader(strings.NewReader(tc.body))
			if size == 1 {
				r = iotest.OneByteReader(r)
			} else {
				r = &chunked{r: r, n: size}
			}
			fp := newFormParts(r, "b0undary")
			var err error
			for err == nil {
				var p io.Reader
				if p, err = fp.NextPart(); err == nil {
					_, err = io.Copy(io.Discard, p)
				}
			}
			if tc.closed {
				assert.Equal(t, io.EOF, err, "%s, reads of %d", tc.name, size)
			} else {
				assert.True(t, errors.Is(err, errUnclosed) || err != io.EOF, "%s, reads of %d: %v", tc.name, size, err)
				assert.NotEqual(t, io.EOF, err, "%s, reads of %d", tc.name, size)
			}
		}
	}
}

// chunked reads at most n bytes at a time.
type chunked struct {
	r io.Reader
	n int
}

func (c *chunked) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// TestCloseWatchTail: the watch keeps fewer bytes than the delimiter, and
// finds a delimiter split over many reads.
func TestCloseWatchTail(t *testing.T) {
	delim := "\n--abc--"
	body := strings.Repeat("x", 100) + delim + "tail"
	for i := 1; i < len(body); i++ {
		w := &closeWatch{r: iotest.HalfReader(&chunked{r: strings.NewReader(body), n: i}), delim: []byte(delim), tail: make([]byte, 0, 2*len(delim))}
		_, err := io.Copy(io.Discard, w)
		require.NoError(t, err)
		assert.True(t, w.seen, "reads of %d", i)
		assert.Less(t, len(w.tail), len(delim))
	}
	w := &closeWatch{r: strings.NewReader(strings.Repeat("\n--abc-", 1000)), delim: []byte(delim)}
	_, _ = io.Copy(io.Discard, w)
	assert.False(t, w.seen)
	assert.True(t, bytes.HasSuffix([]byte("\n--abc-"), w.tail))
}
