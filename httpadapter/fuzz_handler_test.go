package httpadapter_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/parleychat/parley/storage/memstore"
)

// Fuzz targets that go through the whole handler: multipart uploads, the
// Range header and the Authorization header. Seed corpora are in
// testdata/fuzz/<target>.

const fuzzBoundary = "XfuzzBOUNDARY"

// firstFile returns the content of the first part named "file" that has a
// file name, read with mime/multipart as an independent oracle, and whether
// the body has one.
func firstFile(body []byte) ([]byte, bool) {
	mr := multipart.NewReader(bytes.NewReader(body), fuzzBoundary)
	for {
		p, err := mr.NextPart()
		if err != nil {
			return nil, false
		}
		if p.FormName() == "file" {
			if p.FileName() == "" {
				return nil, false
			}
			b, err := io.ReadAll(p)
			if err != nil {
				return nil, false
			}
			return b, true
		}
	}
}

func FuzzUpload(f *testing.F) {
	seed := func(parts ...string) []byte {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString("--" + fuzzBoundary + "\r\n" + p + "\r\n")
		}
		b.WriteString("--" + fuzzBoundary + "--\r\n")
		return []byte(b.String())
	}
	f.Add(seed("Content-Disposition: form-data; name=\"conversation_id\"\r\n\r\ngeneral",
		"Content-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nhello"))
	f.Add(seed("Content-Disposition: form-data; name=\"file\"; filename=\"../../etc/passwd\"\r\n\r\nx"))
	f.Add(seed("Content-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nx",
		"Content-Disposition: form-data; name=\"conversation_id\"\r\n\r\ngeneral"))
	f.Add(seed("Content-Disposition: form-data; name=\"file\"\r\n\r\nno name"))
	f.Add(seed("Content-Disposition: form-data; name=\"message_id\"\r\n\r\nmsg_x",
		"Content-Disposition: form-data; name=\"file\"; filename*=UTF-8''r%C3%A9sum%C3%A9.txt\r\n\r\nx"))
	f.Add([]byte("--" + fuzzBoundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nunterminated"))

	e := newEnv(f, memstore.New().Driver(), envConfig{})
	f.Fuzz(func(t *testing.T, body []byte) {
		before := e.blobCount(t)
		res := e.as(t, "alice", "POST", "/v1/attachments", raw("multipart/form-data; boundary="+fuzzBoundary, string(body)))
		switch res.StatusCode {
		case 201:
			content, ok := firstFile(body)
			if !ok {
				t.Fatalf("201 for a body without a file part: %q", body)
			}
			sum := sha256.Sum256(content)
			if got := res.json(t)["sha256"]; got != hex.EncodeToString(sum[:]) {
				t.Fatalf("stored a file other than the one sent: sha256 %v", got)
			}
			if n := e.blobCount(t); n != before+1 {
				t.Fatalf("201 with %d new objects", n-before)
			}
		case 400, 404, 413, 415:
			if n := e.blobCount(t); n != before {
				t.Fatalf("%d with %d objects left behind: %s", res.StatusCode, n-before, res.body)
			}
		default:
			t.Fatalf("status %d: %s", res.StatusCode, res.body)
		}
	})
}

// FuzzRange: a Range header is answered with the whole file (200), the
// asked ranges (206, at most 16 of them, each the right bytes), or 416;
// never more than the file and its multipart framing.
func FuzzRange(f *testing.F) {
	for _, s := range []string{"bytes=0-4", "bytes=-5", "bytes=5-", "bytes=0-0,2-2,4-4", "bytes=100-200",
		"bytes=0-1,0-1,0-1", "bytes=" + strings.Repeat("0-0,", 20) + "0-0", "items=0-1", "bytes=1-0", "bytes=-0"} {
		f.Add(s)
	}
	e := newEnv(f, memstore.New().Driver(), envConfig{})
	data := strings.Repeat("0123456789abcdef", 64) // 1 KiB
	id := e.upload(f, "alice", "general", "r.txt", "text/plain", data)
	path := "/v1/attachments/" + id + "/r.txt"
	f.Fuzz(func(t *testing.T, rng string) {
		if !validHeaderValue(rng) || len(rng) > 8<<10 {
			return // not a header value a client can send
		}
		res := e.as(t, "bob", "GET", path, nil, "Range", rng)
		switch res.StatusCode {
		case 200:
			if string(res.body) != data {
				t.Fatalf("200 with %d bytes", len(res.body))
			}
		case 416:
		case 206:
			mt, params, err := mime.ParseMediaType(res.Header.Get("Content-Type"))
			if err != nil {
				t.Fatal(err)
			}
			if mt != "multipart/byteranges" {
				checkRange(t, res.Header.Get("Content-Range"), res.body, data)
				return
			}
			mr := multipart.NewReader(bytes.NewReader(res.body), params["boundary"])
			n := 0
			for {
				p, err := mr.NextPart()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(p)
				checkRange(t, p.Header.Get("Content-Range"), b, data)
				n++
			}
			if n > 16 {
				t.Fatalf("%d ranges answered", n)
			}
		default:
			t.Fatalf("status %d for Range %q: %s", res.StatusCode, rng, res.body)
		}
	})
}

// checkRange checks that b holds the bytes of data that cr names.
func checkRange(t *testing.T, cr string, b []byte, data string) {
	t.Helper()
	var first, last, size int
	spec, ok := strings.CutPrefix(cr, "bytes ")
	if !ok {
		t.Fatalf("Content-Range %q", cr)
	}
	span, total, _ := strings.Cut(spec, "/")
	a, z, _ := strings.Cut(span, "-")
	first, err1 := strconv.Atoi(a)
	last, err2 := strconv.Atoi(z)
	size, err3 := strconv.Atoi(total)
	if err1 != nil || err2 != nil || err3 != nil || size != len(data) || first > last || last >= size {
		t.Fatalf("Content-Range %q", cr)
	}
	if string(b) != data[first:last+1] {
		t.Fatalf("range %q holds other bytes", cr)
	}
}

// FuzzAuthorization: a request is served only with "Bearer <a known
// token>" (the scheme in any case, spaces around the token); anything
// else is a 401, never another status.
func FuzzAuthorization(f *testing.F) {
	for _, s := range []string{"Bearer tok-alice", "bearer tok-bob", "BEARER   tok-alice  ", "Bearer tok-alicex", "Basic dG9rLWFsaWNl",
		"Bearer", "Bearer ", "tok-alice", "Bearer tok-alice tok-bob", "Bearer\ttok-alice"} {
		f.Add(s)
	}
	e := newEnv(f, memstore.New().Driver(), envConfig{})
	f.Fuzz(func(t *testing.T, v string) {
		if strings.ContainsAny(v, "\r\n\x00") || !validHeaderValue(v) {
			return
		}
		req, err := http.NewRequest("GET", e.url+"/v1/messages?conversation_id=general", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", v)
		res, err := e.srv.Client().Do(req)
		if err != nil {
			return // the client refused to send it
		}
		res.Body.Close()
		tok := ""
		if len(v) >= 7 && strings.EqualFold(v[:7], "bearer ") {
			tok = strings.TrimSpace(v[7:])
		}
		_, known := e.tokens[tok]
		want := 401
		if known {
			want = 200
		}
		if res.StatusCode != want {
			t.Fatalf("Authorization %q: status %d, want %d", v, res.StatusCode, want)
		}
	})
}

// validHeaderValue reports whether net/http sends v as it is (no leading
// or trailing white space it would trim, printable bytes).
func validHeaderValue(v string) bool {
	if v != strings.TrimSpace(v) {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
