package httpadapter

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/parleychat/parley/messaging"
)

// Fuzz targets of the parsers of request bodies and queries. Each checks
// properties, not only the absence of panics: a decoded form re-encodes to
// the same values, every refusal is a 4xx, and work grows no faster than
// the input. Seed corpora are in testdata/fuzz/<target>.

// params are the parameters the handlers read from a write's body.
var params = []string{"conversation_id", "message", "attachments", "reactions", "read", "filename"}

// readAll reads every parameter as the handlers do, and checks that each
// refusal is a client error.
func readAll(t *testing.T, in input) {
	t.Helper()
	for _, p := range params {
		_, _, err := in.str(p)
		mustBeClientError(t, err)
		_, _, err = in.list(p)
		mustBeClientError(t, err)
		_, _, err = in.reactions(p)
		mustBeClientError(t, err)
		_, err = in.boolean(p)
		mustBeClientError(t, err)
	}
}

func mustBeClientError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if st := classify(err).status; st < 400 || st > 499 {
		t.Fatalf("error %v answers %d, not a 4xx", err, st)
	}
}

// encodeForm writes pairs as application/x-www-form-urlencoded.
func encodeForm(f formInput) string {
	var b strings.Builder
	for i, p := range f {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(p.key))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(p.value))
	}
	return b.String()
}

// encodeReactions writes reactions in bracket notation.
func encodeReactions(rs []messaging.Reaction) string {
	var f formInput
	for _, r := range rs {
		if len(r.Reactors) == 0 {
			f = append(f, pair{"reactions[" + r.Name + "][]", ""})
		}
		for _, who := range r.Reactors {
			f = append(f, pair{"reactions[" + r.Name + "][]", who})
		}
	}
	return encodeForm(f)
}

func FuzzForm(f *testing.F) {
	for _, s := range []string{
		"conversation_id=general&message=hello",
		"reactions[thumbs_up][]=alice&reactions[tada][]=bob&reactions[thumbs_up][]=carol",
		"attachments[]=att_1&attachments[0]=att_2&attachments=att_3",
		"reactions[a]b][]=x&reactions=1&reactionsx=2&read=true&read=false",
		"%zz=1", "a=%E2%82%AC&b=+&&c", "reactions[%5B][]=%00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		in, err := parseForm(body)
		mustBeClientError(t, err)
		if err != nil {
			return
		}
		readAll(t, in)
		// A decoded form re-encodes to the same pairs.
		again, err := parseForm(encodeForm(in))
		if err != nil || !reflect.DeepEqual(in, again) {
			t.Fatalf("re-encoded form differs: %q → %q (%v)", in, again, err)
		}
		// Reactions re-encode to the same reactions, names in first-use
		// order and reactors in order.
		rs, ok, err := in.reactions("reactions")
		if err != nil || !ok {
			return
		}
		back, err := parseForm(encodeReactions(rs))
		if err != nil {
			t.Fatalf("re-encoded reactions do not parse: %v", err)
		}
		rs2, _, err := back.reactions("reactions")
		if err != nil || !reflect.DeepEqual(rs, rs2) {
			t.Fatalf("reactions differ after a round trip: %v → %v (%v)", rs, rs2, err)
		}
	})
}

func FuzzJSON(f *testing.F) {
	for _, s := range []string{
		`{"conversation_id": "general", "message": "hi", "attachments": ["att_1"]}`,
		`{"reactions": [{"thumbs_up": ["alice"]}, {"tada": ["bob", "alice"]}]}`,
		`{"reactions": {"thumbs_up": ["alice"], "tada": []}}`,
		`{"read": true, "read": false}`, `{"message": null}`, `[1]`, `{"a": 1} x`,
		`{"message": "\ud800"}`, "{\"message\": \"\xff\"}", `{"reactions": {"a": null}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		in, err := parseJSONInput([]byte(body))
		mustBeClientError(t, err)
		// Text is valid UTF-8, as in forms (README): a body that is not, or
		// escapes half a surrogate pair, is refused rather than read with
		// U+FFFD in their place.
		if err == nil && (!utf8.ValidString(body) || strings.Contains(body, `\u`) && loneSurrogate(body)) {
			t.Fatalf("accepted a body with invalid text: %q", body)
		}
		if err != nil {
			return
		}
		readAll(t, in)
		rs, ok, err := in.reactions("reactions")
		if err != nil || !ok {
			return
		}
		// Both shapes of the same reactions decode to them.
		arr := make([]map[string][]string, len(rs))
		var obj strings.Builder
		obj.WriteString(`{"reactions": {`)
		for i, r := range rs {
			who := r.Reactors
			if who == nil {
				who = []string{}
			}
			arr[i] = map[string][]string{r.Name: who}
			k, _ := json.Marshal(r.Name)
			v, _ := json.Marshal(who)
			if i > 0 {
				obj.WriteByte(',')
			}
			obj.Write(k)
			obj.WriteByte(':')
			obj.Write(v)
		}
		obj.WriteString("}}")
		a, _ := json.Marshal(map[string]any{"reactions": arr})
		for _, enc := range []string{string(a), obj.String()} {
			back, err := parseJSONInput([]byte(enc))
			if err != nil {
				t.Fatalf("re-encoded reactions do not parse: %v: %s", err, enc)
			}
			rs2, _, err := back.reactions("reactions")
			if err != nil || !reflect.DeepEqual(rs, rs2) {
				t.Fatalf("reactions differ after a round trip through %s: %v → %v (%v)", enc, rs, rs2, err)
			}
		}
	})
}

// loneSurrogate reports, independently of the parser, whether a JSON text
// escapes a surrogate that is not half of a pair: encoding/json decodes one
// to U+FFFD, which the text does not hold otherwise.
func loneSurrogate(body string) bool {
	if strings.ContainsRune(body, utf8.RuneError) || strings.Contains(strings.ToLower(body), `\ufffd`) {
		return false
	}
	dec := json.NewDecoder(strings.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if s, ok := tok.(string); ok && strings.ContainsRune(s, utf8.RuneError) {
			return true
		}
	}
}

// FuzzWorkPerByte looks for inputs whose cost grows faster than their size.
// The fuzzer mutates one parameter template; the body holds k copies of it,
// each with "#" replaced by the copy's number (so that names differ, the
// shape of the quadratic reaction lookup). Parsing 16 times the copies must
// cost well under 256 times as much, as a quadratic parser would.
func FuzzWorkPerByte(f *testing.F) {
	f.Add("reactions[r#][]=alice", uint8(0))
	f.Add(`{"r#": ["alice"]}`, uint8(1))
	f.Add(`"r#": ["alice"]`, uint8(2))
	f.Add("attachments[]=att_#", uint8(0))
	f.Add(`"m#": "x"`, uint8(3))
	f.Fuzz(func(t *testing.T, tmpl string, shape uint8) {
		if len(tmpl) > 64 || !strings.Contains(tmpl, "#") {
			return
		}
		body := func(k int) []byte {
			var b strings.Builder
			switch shape % 4 {
			case 0: // form pairs
				for i := range k {
					if i > 0 {
						b.WriteByte('&')
					}
					b.WriteString(strings.ReplaceAll(tmpl, "#", strconv.Itoa(i)))
				}
			case 1: // JSON reactions, array shape
				b.WriteString(`{"reactions": [`)
				for i := range k {
					if i > 0 {
						b.WriteByte(',')
					}
					b.WriteString(strings.ReplaceAll(tmpl, "#", strconv.Itoa(i)))
				}
				b.WriteString("]}")
			case 2: // JSON reactions, object shape
				b.WriteString(`{"reactions": {`)
				for i := range k {
					if i > 0 {
						b.WriteByte(',')
					}
					b.WriteString(strings.ReplaceAll(tmpl, "#", strconv.Itoa(i)))
				}
				b.WriteString("}}")
			case 3: // JSON members
				b.WriteString("{")
				for i := range k {
					if i > 0 {
						b.WriteByte(',')
					}
					b.WriteString(strings.ReplaceAll(tmpl, "#", strconv.Itoa(i)))
				}
				b.WriteString("}")
			}
			return []byte(b.String())
		}
		// The least of five runs: a pause of the collector or the
		// scheduler lengthens one run, not all.
		cost := func(data []byte) time.Duration {
			best := time.Duration(1<<63 - 1)
			for range 5 {
				start := time.Now()
				var in input
				var err error
				if shape%4 == 0 {
					in, err = parseForm(string(data))
				} else {
					in, err = parseJSONInput(data)
				}
				if err == nil {
					readAll(t, in)
				}
				best = min(best, time.Since(start))
			}
			return best
		}
		small, large := body(300), body(4800)
		// Below a few milliseconds the clock and the scheduler dominate. A
		// busy machine (CI runs every backend's tests at once under -race)
		// can stretch one measurement: superlinear work is so in three
		// measurements, noise is not.
		var cs, cl time.Duration
		for range 3 {
			cs, cl = cost(small), cost(large)
			if cl <= 20*time.Millisecond || cl <= 64*max(cs, 50*time.Microsecond) {
				return
			}
		}
		t.Fatalf("16 times the input cost %v against %v: superlinear (template %q, shape %d)", cl, cs, tmpl, shape%4)
	})
}

// FuzzListQuery: the query of a list either fails as a 400 or yields
// single values, a limit of at least 1 given as a decimal number, and
// non-empty cursors.
func FuzzListQuery(f *testing.F) {
	for _, s := range []string{
		"conversation_id=general&limit=5", "limit=0", "limit=5&limit=500", "limit=-1", "limit=1e3",
		"starting_after=msg_01&ending_before=msg_02", "starting_after=", "limit=%zz", "limit=+7",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		r := &http.Request{URL: &url.URL{RawQuery: query}}
		p, err := readListParams(r)
		mustBeClientError(t, err)
		if err != nil {
			return
		}
		q, _ := url.ParseQuery(query)
		if vs, ok := q["limit"]; ok {
			n, err := strconv.Atoi(vs[0])
			if len(vs) != 1 || err != nil || n < 1 || n != p.limit {
				t.Fatalf("limit %q accepted as %d", vs, p.limit)
			}
		} else if p.limit != 0 {
			t.Fatalf("no limit, yet %d", p.limit)
		}
		for name, got := range map[string]string{"conversation_id": p.conversationID, "starting_after": p.startingAfter, "ending_before": p.endingBefore} {
			vs := q[name]
			if len(vs) > 1 || len(vs) == 1 && (vs[0] == "" || vs[0] != got) || len(vs) == 0 && got != "" {
				t.Fatalf("%s %q read as %q", name, vs, got)
			}
		}
	})
}

// FuzzBearerToken: a token is read only from one header of the scheme
// Bearer (any case) and is what follows it, trimmed.
func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer tok-alice", "bearer  tok ", "Basic abc", "Bearer", "Bearer ", "BEARER x y", "Bearertok"} {
		f.Add(s, false)
	}
	f.Add("Bearer a", true)
	f.Fuzz(func(t *testing.T, v string, twice bool) {
		r := &http.Request{Header: http.Header{"Authorization": {v}}}
		if twice {
			r.Header.Add("Authorization", v)
		}
		tok, ok := bearerToken(r)
		if twice {
			if ok {
				t.Fatalf("two Authorization headers accepted")
			}
			return
		}
		want := len(v) >= 7 && strings.EqualFold(v[:7], "bearer ")
		if ok != want {
			t.Fatalf("%q: ok %v", v, ok)
		}
		if ok && tok != strings.TrimSpace(v[7:]) {
			t.Fatalf("%q: token %q", v, tok)
		}
	})
}
