package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

const formType = "application/x-www-form-urlencoded"

// opSpec is one kind of request.
type opSpec struct {
	route string // for messages
	do    func(ctx context.Context, w *worker) (status int, err error)
}

// opNames are the operations, in the order they run by default.
var opNames = []string{"list", "create", "get", "deep", "react", "upload", "mix"}

// opTable holds every operation but mix (see worker.mix).
var opTable = map[string]opSpec{
	"create": {"POST /v1/messages", func(ctx context.Context, w *worker) (int, error) {
		w.seq++
		body := "conversation_id=" + url.QueryEscape(w.t.CreateConv) + "&message=load+message+" + strconv.FormatInt(w.seq, 10)
		status, _, err := w.t.do(ctx, http.MethodPost, "/v1/messages", strings.NewReader(body), int64(len(body)), formType, false)
		return status, err
	}},
	"get": {"GET /v1/messages/{id}", func(ctx context.Context, w *worker) (int, error) {
		status, _, err := w.t.do(ctx, http.MethodGet, "/v1/messages/"+url.PathEscape(w.message()), nil, 0, "", false)
		return status, err
	}},
	"list": {"GET /v1/messages?conversation_id=…&limit=10", func(ctx context.Context, w *worker) (int, error) {
		status, _, err := w.t.do(ctx, http.MethodGet, "/v1/messages?conversation_id="+url.QueryEscape(w.t.Conv)+"&limit=10", nil, 0, "", false)
		return status, err
	}},
	"deep": {"GET /v1/messages?conversation_id=…&limit=10&starting_after=…", func(ctx context.Context, w *worker) (int, error) {
		status, _, err := w.t.do(ctx, http.MethodGet, "/v1/messages?conversation_id="+url.QueryEscape(w.t.Conv)+"&limit=10&starting_after="+url.QueryEscape(w.t.Cursor), nil, 0, "", false)
		return status, err
	}},
	"react": {"PUT /v1/messages/{id}, DELETE /v1/messages/{id}/reactions/{name}", func(ctx context.Context, w *worker) (int, error) {
		// Every worker reacts to the same message: each request adds a
		// reaction or takes back the one it added.
		id := url.PathEscape(w.t.ids[0])
		if name := w.reacted; name != "" {
			status, _, err := w.t.do(ctx, http.MethodDelete, "/v1/messages/"+id+"/reactions/"+name, nil, 0, "", false)
			if status/100 == 2 {
				w.reacted = ""
			}
			return status, err
		}
		name := reactionNames[w.rng.IntN(len(reactionNames))]
		body := "reactions%5B" + name + "%5D%5B%5D=" + url.QueryEscape(w.t.User)
		status, _, err := w.t.do(ctx, http.MethodPut, "/v1/messages/"+id, strings.NewReader(body), int64(len(body)), formType, false)
		if status/100 == 2 {
			w.reacted = name
		}
		return status, err
	}},
	"upload": {"POST /v1/attachments", func(ctx context.Context, w *worker) (int, error) {
		u := w.t.upload
		status, _, err := w.t.do(ctx, http.MethodPost, "/v1/attachments", u.reader(), u.length(), u.ctype, false)
		if status/100 == 2 {
			w.bytes += u.size
		}
		return status, err
	}},
}

// reactionNames are the reactions react adds, in the caller's name.
var reactionNames = []string{"thumbs_up", "heart", "laugh", "eyes", "tada"}

// worker is the state of one connection's loop.
type worker struct {
	t    *target
	rng  *rand.Rand
	seq  int64 // messages posted, for their text
	hist histogram
	// ok and errs count requests; errsBy counts errors by "op status" or
	// "op error"; firstErr is the first transport error.
	ok, errs int64
	errsBy   map[string]int64
	firstErr error
	bytes    int64  // uploaded
	reacted  string // the reaction react added and takes back next
}

func (t *target) newWorker(i int) *worker {
	return &worker{t: t, rng: rand.New(rand.NewPCG(uint64(i)+1, 0x9e3779b97f4a7c15)), errsBy: map[string]int64{}}
}

// message picks a message to get.
func (w *worker) message() string {
	return w.t.ids[w.rng.IntN(len(w.t.ids))]
}

// mixPart is one operation of a mix and its weight.
type mixPart struct {
	op     string
	weight int
}

// mix is a weighted choice of operations.
type mix []mixPart

// defaultMix is a chat's realistic load: mostly reading the latest page.
const defaultMix = "list=60,create=20,get=10,react=10"

// parseMix reads "list=60,create=20,…".
func parseMix(s string) (mix, error) {
	var m mix
	for part := range strings.SplitSeq(s, ",") {
		name, w, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(w)
		if !ok || err != nil || n < 1 {
			return nil, fmt.Errorf("-mix: %q is not op=weight with a weight of at least 1", part)
		}
		if _, known := opTable[name]; !known {
			return nil, fmt.Errorf("-mix: unknown op %q", name)
		}
		if slices.ContainsFunc(m, func(p mixPart) bool { return p.op == name }) {
			return nil, fmt.Errorf("-mix: %s comes twice", name)
		}
		m = append(m, mixPart{name, n})
	}
	return m, nil
}

// pick chooses an operation with probability weight/total.
func (m mix) pick(rng *rand.Rand) string {
	total := 0
	for _, p := range m {
		total += p.weight
	}
	r := rng.IntN(total)
	for _, p := range m {
		if r < p.weight {
			return p.op
		}
		r -= p.weight
	}
	return m[len(m)-1].op
}

func (m mix) String() string {
	parts := make([]string, len(m))
	for i, p := range m {
		parts[i] = p.op + "=" + strconv.Itoa(p.weight)
	}
	return strings.Join(parts, ",")
}

// uploadBody is a multipart/form-data body with a conversation_id field and
// a file part of size bytes. Only its framing is kept in memory: the file's
// bytes come from a generator as the request is written.
type uploadBody struct {
	prefix, suffix []byte
	size           int64
	ctype          string
}

func newUploadBody(conv string, size int64) uploadBody {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if conv != "" {
		_ = mw.WriteField("conversation_id", conv)
	}
	_, _ = mw.CreateFormFile("file", "loadtest.bin")
	u := uploadBody{prefix: bytes.Clone(buf.Bytes()), size: size, ctype: mw.FormDataContentType()}
	buf.Reset()
	_ = mw.Close()
	u.suffix = bytes.Clone(buf.Bytes())
	return u
}

func (u uploadBody) length() int64 { return int64(len(u.prefix)) + u.size + int64(len(u.suffix)) }

func (u uploadBody) reader() io.Reader {
	return io.MultiReader(bytes.NewReader(u.prefix), &patternReader{left: u.size}, bytes.NewReader(u.suffix))
}

// pattern is the file content, repeated: not all zeros, so that nothing on
// the way can compress it to nothing.
var pattern = func() []byte {
	b := make([]byte, 64<<10)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}()

// patternReader yields left bytes of pattern, over and over.
type patternReader struct {
	left int64
	off  int
}

func (r *patternReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n := 0
	for n < len(p) {
		c := copy(p[n:], pattern[r.off:])
		n += c
		r.off = (r.off + c) % len(pattern)
	}
	r.left -= int64(n)
	return n, nil
}

// WriteTo lets io.Copy (and the HTTP transport) skip a copy.
func (r *patternReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for r.left > 0 {
		chunk := pattern[r.off:]
		if int64(len(chunk)) > r.left {
			chunk = chunk[:r.left]
		}
		n, err := w.Write(chunk)
		total += int64(n)
		r.left -= int64(n)
		r.off = (r.off + n) % len(pattern)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// sortedKeys returns the keys of m in opNames order.
func sortedKeys(m map[string]bool) []string {
	var out []string
	for _, o := range opNames {
		if m[o] {
			out = append(out, o)
		}
	}
	return out
}
