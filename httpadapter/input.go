package httpadapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/parleychat/parley/messaging"
)

// input is the parameters of a write, whatever the body's format.
// Every accessor fails with a 400 naming the parameter when it is malformed
// or, being single-valued, given more than once.
type input interface {
	// str returns a single-valued text parameter.
	str(name string) (v string, ok bool, err error)
	// list returns an array of text (form: name[]=a&name[]=b).
	list(name string) (v []string, ok bool, err error)
	// reactions returns reactions (form: name[thumbs_up][]=alice), names in
	// the order first given, reactors in the order given.
	reactions(name string) (v []messaging.Reaction, ok bool, err error)
	// boolean returns a true/false parameter, nil when absent.
	boolean(name string) (*bool, error)
}

func twice(name string) error {
	return badParam(name, name+" was given more than once")
}

// maxPairs bounds the parameters of one request: the pairs of a form, the
// parts of a multipart body, the members of a JSON object, and the names
// and reactors of reactions. No request needs more than a few dozen, and
// the work spent on a request must grow no faster than its size: past the
// bound the request is a 400 at once.
const maxPairs = 1000

var errTooManyPairs = bodyInvalid("the body has more than " + strconv.Itoa(maxPairs) + " parameters")

// readInput parses the body of a write: application/x-www-form-urlencoded,
// multipart/form-data or application/json, at most a.maxBody bytes. A
// request with no body and no Content-Type has no parameters.
func (a *api) readInput(w http.ResponseWriter, r *http.Request) (input, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			return formInput{}, nil
		}
		var one [1]byte
		if n, _ := io.ReadFull(r.Body, one[:]); n == 0 {
			return formInput{}, nil
		}
		return nil, unsupportedMediaType("a request body needs a Content-Type: application/x-www-form-urlencoded, multipart/form-data or application/json")
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil, unsupportedMediaType("malformed Content-Type")
	}
	switch mt {
	case "application/x-www-form-urlencoded", "application/json":
	case "multipart/form-data":
		return a.readMultipartInput(w, r)
	default:
		return nil, unsupportedMediaType("unsupported Content-Type " + strconv.Quote(mt) + ": use application/x-www-form-urlencoded, multipart/form-data or application/json")
	}
	data, err := a.readBody(w, r)
	if err != nil {
		return nil, err
	}
	if mt == "application/json" {
		return parseJSONInput(data)
	}
	return parseForm(string(data))
}

// readBody reads the whole body, at most a.maxBody bytes.
func (a *api) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > a.maxBody {
		return nil, a.bodyTooLarge()
	}
	if r.Body == nil {
		return nil, nil
	}
	body := http.MaxBytesReader(w, r.Body, a.maxBody)
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	if _, err := buf.ReadFrom(body); err != nil {
		return nil, a.bodyError(err)
	}
	return buf.Bytes(), nil
}

func (a *api) bodyTooLarge() error {
	return newHTTPError(http.StatusRequestEntityTooLarge, typeInvalidRequest, codeTooLarge,
		"the request body is larger than the limit of "+strconv.FormatInt(a.maxBody, 10)+" bytes")
}

// bodyError turns a failure to read a body into a 413 (over a limit), the
// adapter's own 400 when it is one, or a 400 body_invalid.
func (a *api) bodyError(err error) error {
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return newHTTPError(http.StatusRequestEntityTooLarge, typeInvalidRequest, codeTooLarge,
			"the request body is larger than the limit of "+strconv.FormatInt(mb.Limit, 10)+" bytes")
	}
	var he *httpError
	if errors.As(err, &he) {
		return err
	}
	return bodyInvalid("the request body cannot be read or parsed")
}

// readMultipartInput reads a multipart/form-data body of plain fields; a
// file part counts as a field holding the file's content.
func (a *api) readMultipartInput(w http.ResponseWriter, r *http.Request) (input, error) {
	if r.ContentLength > a.maxBody {
		return nil, a.bodyTooLarge()
	}
	_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type")) // parsed by readInput
	boundary := params["boundary"]
	if boundary == "" {
		return nil, bodyInvalid("malformed multipart/form-data body: no boundary")
	}
	mr := newFormParts(http.MaxBytesReader(w, r.Body, a.maxBody), boundary)
	var f formInput
	var buf bytes.Buffer
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return f, nil
		}
		if err != nil {
			return nil, a.bodyError(err)
		}
		if len(f) == maxPairs {
			return nil, errTooManyPairs
		}
		buf.Reset()
		if _, err := buf.ReadFrom(p); err != nil {
			return nil, a.bodyError(err)
		}
		f = append(f, pair{key: p.FormName(), value: buf.String()})
	}
}

// pair is one key=value of a form, in the order it came.
type pair struct{ key, value string }

// formInput is the fields of an urlencoded or multipart form, in order.
type formInput []pair

// parseForm parses application/x-www-form-urlencoded data, keeping the
// order of the pairs (reactions are listed in the order first used).
func parseForm(s string) (formInput, error) {
	var f formInput
	for s != "" {
		var kv string
		kv, s, _ = strings.Cut(s, "&")
		if kv == "" {
			continue
		}
		if len(f) == maxPairs {
			return nil, errTooManyPairs
		}
		k, v, _ := strings.Cut(kv, "=")
		k, err1 := url.QueryUnescape(k)
		v, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			return nil, bodyInvalid("malformed application/x-www-form-urlencoded body")
		}
		f = append(f, pair{key: k, value: v})
	}
	return f, nil
}

func (f formInput) str(name string) (string, bool, error) {
	var v string
	ok := false
	for _, p := range f {
		if p.key == name {
			if ok {
				return "", false, twice(name)
			}
			v, ok = p.value, true
		} else if len(p.key) > len(name) && p.key[len(name)] == '[' && strings.HasPrefix(p.key, name) {
			return "", false, badParam(name, name+" takes a single value")
		}
	}
	return v, ok, nil
}

// list accepts name[]=a, name[0]=a and name=a, in the order given.
func (f formInput) list(name string) ([]string, bool, error) {
	var vs []string
	ok := false
	for _, p := range f {
		if !strings.HasPrefix(p.key, name) {
			continue
		}
		rest := p.key[len(name):]
		if rest == "" || rest == "[]" || isIndex(rest) {
			vs, ok = append(vs, p.value), true
		} else if rest[0] == '[' {
			return nil, false, badParam(name, "malformed "+name+": use "+name+"[]=<value>")
		}
	}
	return vs, ok, nil
}

// isIndex reports whether s is "[<digits>]".
func isIndex(s string) bool {
	if len(s) < 3 || s[0] != '[' || s[len(s)-1] != ']' {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// reactions accepts name[<reaction>][]=<reactor> (and name[<reaction>]=…).
func (f formInput) reactions(name string) ([]messaging.Reaction, bool, error) {
	var rs reactionList
	ok := false
	for _, p := range f {
		if !strings.HasPrefix(p.key, name) {
			continue
		}
		rest := p.key[len(name):]
		if rest == "" {
			return nil, false, badParam(name, "malformed "+name+": use "+name+"[<reaction_name>][]=<reactor>")
		}
		if rest[0] != '[' {
			continue // another parameter whose name starts with name
		}
		end := strings.IndexByte(rest, ']')
		if end < 0 || rest[end+1:] != "" && rest[end+1:] != "[]" && !isIndex(rest[end+1:]) {
			return nil, false, badParam(name, "malformed "+name+": use "+name+"[<reaction_name>][]=<reactor>")
		}
		if err := rs.add(name, rest[1:end], p.value); err != nil {
			return nil, false, err
		}
		ok = true
	}
	return rs.list, ok, nil
}

// reactionList gathers reactions in first-use order; it finds a name in
// constant time, and stops past maxPairs names and reactors.
type reactionList struct {
	list  []messaging.Reaction
	index map[string]int // name → its place in list
	n     int            // names and reactors added
}

// add adds who to the reaction called name. An empty who only makes sure
// the name is there (a reaction with no reactor, which the Service rejects
// with a 400).
func (l *reactionList) add(param, name, who string) error {
	if l.n++; l.n > maxPairs {
		return badParam(param, param+" names more than "+strconv.Itoa(maxPairs)+" reactions and reactors")
	}
	i, ok := l.index[name]
	if !ok {
		if l.index == nil {
			l.index = make(map[string]int)
		}
		i = len(l.list)
		l.index[name] = i
		l.list = append(l.list, messaging.Reaction{Name: name})
	}
	if who != "" {
		l.list[i].Reactors = append(l.list[i].Reactors, who)
	}
	return nil
}

func (f formInput) boolean(name string) (*bool, error) {
	v, ok, err := f.str(name)
	if err != nil || !ok {
		return nil, err
	}
	return parseBool(name, v)
}

func parseBool(name, v string) (*bool, error) {
	var b bool
	switch v {
	case "true":
		b = true
	case "false":
	default:
		return nil, badParam(name, name+" must be true or false")
	}
	return &b, nil
}

// jsonInput is the members of a JSON object body, in order.
type jsonInput []jsonMember

type jsonMember struct {
	key string
	raw json.RawMessage
}

// parseJSONInput parses a body that must be one JSON object.
func parseJSONInput(data []byte) (jsonInput, error) {
	if !validJSONText(data) {
		return nil, bodyInvalid("the body is not valid UTF-8, or escapes half a surrogate pair")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	bad := bodyInvalid("the body is not a JSON object")
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, bad
	}
	var in jsonInput
	for dec.More() {
		if len(in) == maxPairs {
			return nil, errTooManyPairs
		}
		tok, err := dec.Token()
		if err != nil {
			return nil, bad
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, bad
		}
		in = append(in, jsonMember{key: key, raw: raw})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, bad
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, bodyInvalid("unexpected data after the JSON object")
	}
	return in, nil
}

// get returns the raw value of name; null counts as absent.
func (in jsonInput) get(name string) (json.RawMessage, bool, error) {
	var raw json.RawMessage
	ok := false
	for _, m := range in {
		if m.key == name {
			if ok {
				return nil, false, twice(name)
			}
			raw, ok = m.raw, true
		}
	}
	if ok && string(raw) == "null" {
		return nil, false, nil
	}
	return raw, ok, nil
}

func (in jsonInput) str(name string) (string, bool, error) {
	raw, ok, err := in.get(name)
	if err != nil || !ok {
		return "", false, err
	}
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false, badParam(name, name+" must be a string")
	}
	return s, true, nil
}

func (in jsonInput) list(name string) ([]string, bool, error) {
	raw, ok, err := in.get(name)
	if err != nil || !ok {
		return nil, false, err
	}
	var vs []string
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &vs) != nil {
		return nil, false, badParam(name, name+" must be an array of strings")
	}
	if vs == nil {
		vs = []string{}
	}
	return vs, true, nil
}

// reactions accepts [{"thumbs_up": ["alice"]}, …] and {"thumbs_up": ["alice"], …}.
func (in jsonInput) reactions(name string) ([]messaging.Reaction, bool, error) {
	raw, ok, err := in.get(name)
	if err != nil || !ok {
		return nil, false, err
	}
	bad := badParam(name, name+` must be an array of objects like {"thumbs_up": ["alice"]} or one such object`)
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, false, bad
	}
	var rs reactionList
	readObject := func() error {
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return bad
			}
			rname, _ := tok.(string)
			var who []string
			if err := dec.Decode(&who); err != nil || who == nil {
				return bad
			}
			if err := rs.add(name, rname, ""); err != nil {
				return err
			}
			for _, w := range who {
				if err := rs.add(name, rname, w); err != nil {
					return err
				}
			}
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
			return bad
		}
		return nil
	}
	switch tok {
	case json.Delim('{'):
		if err := readObject(); err != nil {
			return nil, false, err
		}
	case json.Delim('['):
		for dec.More() {
			if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
				return nil, false, bad
			}
			if err := readObject(); err != nil {
				return nil, false, err
			}
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
			return nil, false, bad
		}
	default:
		return nil, false, bad
	}
	if rs.list == nil {
		rs.list = []messaging.Reaction{}
	}
	return rs.list, true, nil
}

func (in jsonInput) boolean(name string) (*bool, error) {
	raw, ok, err := in.get(name)
	if err != nil || !ok {
		return nil, err
	}
	switch string(raw) {
	case "true", "false":
		b := string(raw) == "true"
		return &b, nil
	}
	return nil, badParam(name, name+" must be true or false")
}

// validJSONText reports whether a JSON body holds only valid text: valid
// UTF-8, and no escaped surrogate (\uD800 to \uDFFF) that is not half of a
// pair, which encoding/json would read as U+FFFD where a form is a 400.
func validJSONText(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		i++ // the escaped character
		if i >= len(data) || data[i] != 'u' {
			continue
		}
		r, ok := hex4(data[i+1:])
		if !ok {
			continue // malformed: the decoder refuses it
		}
		i += 4
		switch {
		case 0xDC00 <= r && r <= 0xDFFF:
			return false // a low half first
		case 0xD800 <= r && r <= 0xDBFF:
			if i+6 >= len(data) || data[i+1] != '\\' || data[i+2] != 'u' {
				return false
			}
			lo, ok := hex4(data[i+3:])
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return false
			}
			i += 6
		}
	}
	return true
}

// hex4 reads four hex digits.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}
