package httpadapter_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/parleychat/parley/httpadapter"
)

// This file checks the traffic of every test env against openapi.json:
// newEnv puts checkAPI around the handler under test, so that every request
// a test sends and every response it receives is checked, whichever test
// sends it.
//
// The rules, for each exchange:
//   - the response must match the document: a declared status, its headers,
//     and its body against the schema (an error object for every failure;
//     each data line of an event stream against the Event schema);
//   - a request the document rejects (a path it does not have, a missing or
//     malformed parameter or body, no bearer token) must be refused (4xx or
//     5xx): a server that accepts what its document forbids has drifted. A
//     request the document accepts may still be refused, for what a schema
//     cannot say (an id that does not exist, another caller's message).
//
// After a run of the whole package, TestMain also checks that every
// operation of the document answered a success in some test.

// checkedBodyLimit bounds the bytes of a request or response body that are
// kept for checking; a larger request body is not checked (its response is),
// which keeps the tests that send large bodies to time the handler fast.
const checkedBodyLimit = 64 << 10

// openAPI is the document and its router, loaded once for all tests.
var openAPI = sync.OnceValues(func() (*openAPISpec, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(httpadapter.OpenAPI())
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(httpadapter.OpenAPI()))
	if err != nil {
		return nil, err
	}
	compiler := jsonschema.NewCompiler()
	compiler.DefaultDraft(jsonschema.Draft2020)
	if err := compiler.AddResource(openAPIURL, raw); err != nil {
		return nil, err
	}
	return &openAPISpec{doc: doc, router: router, compiler: compiler, schemas: map[string]*jsonschema.Schema{}}, nil
})

// openAPIURL names the document for the JSON Schema compiler.
const openAPIURL = "urn:parley:openapi.json"

type openAPISpec struct {
	doc    *openapi3.T
	router routers.Router

	// Bodies are checked against schemas compiled once (kin-openapi's
	// VisitJSON compiles the schema at every call, which made the suite
	// several times slower).
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	schemas  map[string]*jsonschema.Schema // by $ref, "#/components/schemas/…"
}

// schema returns the compiled schema at ref, a reference within the
// document.
func (s *openAPISpec) schema(ref string) (*jsonschema.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch, ok := s.schemas[ref]; ok {
		return sch, nil
	}
	sch, err := s.compiler.Compile(openAPIURL + ref)
	if err != nil {
		return nil, err
	}
	s.schemas[ref] = sch
	return sch, nil
}

// exercised holds the operations ("GET /v1/messages/{id}") that answered
// a success in a checked exchange.
var exercised sync.Map

// TestMain runs the tests and, after a run of them all, checks that each
// operation of the document answered a success at least once.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && flag.Lookup("test.skip").Value.String() == "" && !testing.Short() {
		spec, err := openAPI()
		if err != nil {
			fmt.Fprintln(os.Stderr, "openapi.json:", err)
			os.Exit(1)
		}
		var missed []string
		for path, item := range spec.doc.Paths.Map() {
			for method := range item.Operations() {
				op := method + " " + path
				if _, ok := exercised.Load(op); !ok && !slices.Contains(pendingOperations, op) {
					missed = append(missed, op)
				}
			}
		}
		if len(missed) > 0 {
			slices.Sort(missed)
			fmt.Fprintf(os.Stderr, "FAIL: no test had a success from these operations of openapi.json: %s\n", strings.Join(missed, ", "))
			code = 1
		}
	}
	os.Exit(code)
}

// apiChecker reports to t every exchange that breaks the rules above.
type apiChecker struct {
	t    testing.TB
	spec *openAPISpec
	// otherAuth: the env also authenticates by other means than a bearer
	// token (a cookie, a host's own authenticator), which the document
	// leaves to the host.
	otherAuth bool

	mu       sync.Mutex
	reported map[string]bool

	checks sync.WaitGroup // checks under way
	tally  *sync.Map      // where the operations exercised go: &exercised
	http.Handler
}

// checkAPI wraps h so that its traffic is checked against openapi.json.
// Each exchange is checked once the handler has returned, beside the
// tests (so that the checks do not count in what tests time); t's cleanup
// waits for them, and so does wait.
func checkAPI(t testing.TB, h http.Handler, otherAuth bool) *apiChecker {
	t.Helper()
	spec, err := openAPI()
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	c := &apiChecker{t: t, spec: spec, otherAuth: otherAuth, reported: map[string]bool{}, tally: &exercised}
	t.Cleanup(c.wait)
	c.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var tee *teeBody
		if r.Body != nil && r.Body != http.NoBody {
			tee = &teeBody{rc: r.Body}
			r.Body = tee
		}
		rec := &recorder{ResponseWriter: w}
		// The handler may change r (its Body, its URL when mounted): keep
		// what the client sent.
		sent := r.Clone(r.Context())
		h.ServeHTTP(rec, r)
		if r.Context().Err() != nil && rec.status >= 500 {
			// The client hung up, and the handler cut its answer short
			// (no Request-Id is logged): nobody reads it.
			return
		}
		var body []byte
		complete := true
		if tee != nil {
			complete = tee.drain(rec)
			body = tee.buf.Bytes()
		}
		c.checks.Go(func() { c.check(sent, body, complete, rec) })
	})
	return c
}

// wait waits for the checks of the exchanges so far.
func (c *apiChecker) wait() { c.checks.Wait() }

func (c *apiChecker) errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	// kin-openapi's errors show the whole schema: the start says enough.
	if i := strings.Index(msg, "\nSchema:\n"); i >= 0 {
		if j := strings.Index(msg, "\nbody: "); j > i {
			msg = msg[:i] + msg[j:]
		} else {
			msg = msg[:i]
		}
	}
	c.mu.Lock()
	seen := c.reported[msg]
	c.reported[msg] = true
	c.mu.Unlock()
	if !seen {
		c.t.Errorf("openapi.json: %s", msg)
	}
}

// check checks one exchange: r as sent, with body (complete: all of it).
func (c *apiChecker) check(r *http.Request, body []byte, complete bool, rec *recorder) {
	status := rec.status
	if status == 0 {
		status = http.StatusOK // the handler wrote nothing
		rec.header = rec.ResponseWriter.Header().Clone()
	}
	what := r.Method + " " + r.URL.RequestURI()
	head := r.Method == http.MethodHead
	if got := rec.header.Get("X-Content-Type-Options"); got != "nosniff" {
		// Issue 30: JSON answers came without it.
		c.errorf("%s: %d with X-Content-Type-Options %q, not nosniff", what, status, got)
	}
	vr := r.Clone(r.Context())
	if head {
		vr.Method = http.MethodGet
	}
	if p := vr.URL.Path; !strings.HasPrefix(p, "/") {
		// Mounted with http.StripPrefix("/prefix/", …), which the
		// adapter serves as "/" + p.
		u := *vr.URL
		u.Path = "/" + p
		if u.RawPath != "" {
			u.RawPath = "/" + u.RawPath
		}
		vr.URL = &u
	}
	vr.Body = io.NopCloser(bytes.NewReader(body))
	vr.ContentLength = int64(len(body))

	route, params, err := c.spec.router.FindRoute(vr)
	if err != nil {
		// A path or method the document does not have: an error object.
		if status < 400 {
			c.errorf("%s: not in the document (%v), but answered %d", what, err, status)
			return
		}
		c.checkError(what, status, rec, head)
		if errors.Is(err, routers.ErrMethodNotAllowed) && status == http.StatusMethodNotAllowed && rec.header.Get("Allow") == "" {
			c.errorf("%s: 405 without Allow", what)
		}
		return
	}

	opts := &openapi3filter.Options{
		ExcludeRequestBody: !complete,
		MultiError:         false,
		AuthenticationFunc: c.authenticate,
	}
	if status < 300 {
		c.tally.Store(route.Method+" "+route.Path, true)
	}
	in := &openapi3filter.RequestValidationInput{Request: vr, PathParams: params, Route: route, Options: opts}
	reqErr := openapi3filter.ValidateRequest(context.Background(), in)
	if reqErr != nil && status < 400 {
		c.errorf("%s: the document rejects the request (%v), but the server answered %d", what, reqErr, status)
	}

	ctype := rec.header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ctype)
	stream := mt == "text/event-stream"
	resIn := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: vr, PathParams: params, Route: route},
		Status:                 status,
		Header:                 rec.header,
		Options:                &openapi3filter.Options{ExcludeResponseBody: true, IncludeResponseStatus: true},
	}
	resIn.SetBodyBytes(rec.body.Bytes())
	if err := openapi3filter.ValidateResponse(context.Background(), resIn); err != nil {
		c.errorf("%s: response %d does not match the document: %v\nbody: %.2000s", what, status, err, rec.body.Bytes())
		return
	}
	if !stream && !head && !rec.overflow && mt == "application/json" {
		res := route.Operation.Responses.Status(status)
		if res == nil {
			res = route.Operation.Responses.Default()
		}
		if mtype := res.Value.Content.Get(ctype); mtype != nil && mtype.Schema != nil && mtype.Schema.Ref != "" {
			c.visit(what, mtype.Schema.Ref, rec.body.Bytes())
		}
	}
	if stream {
		c.checkStream(what, rec.body.Bytes())
	}
}

// checkError checks that a failure answers the error object.
func (c *apiChecker) checkError(what string, status int, rec *recorder, head bool) {
	if status < 400 {
		c.errorf("%s: answered %d where a failure was due", what, status)
		return
	}
	if head {
		return
	}
	if mt, _, _ := mime.ParseMediaType(rec.header.Get("Content-Type")); mt != "application/json" {
		c.errorf("%s: failure %d with Content-Type %q", what, status, rec.header.Get("Content-Type"))
		return
	}
	c.visit(what, "#/components/schemas/Error", rec.body.Bytes())
}

// sseField is one line of an event stream.
var sseField = regexp.MustCompile(`^(id|event|data): (.*)$`)

// checkStream checks each event of a Server-Sent Events stream: its data
// against the Event schema, its id and event fields against the data.
func (c *apiChecker) checkStream(what string, b []byte) {
	for frame := range strings.SplitSeq(string(b), "\n\n") {
		var id, typ, data string
		hasID := false
		for line := range strings.SplitSeq(frame, "\n") {
			if line == "" || strings.HasPrefix(line, ":") {
				continue
			}
			m := sseField.FindStringSubmatch(line)
			if m == nil {
				c.errorf("%s: stream line %q is not id:, event:, data: or a comment", what, line)
				continue
			}
			switch m[1] {
			case "id":
				id, hasID = m[2], true
			case "event":
				typ = m[2]
			case "data":
				data = m[2]
			}
		}
		if data == "" {
			continue // a comment, or the cut end of the stream
		}
		if !json.Valid([]byte(data)) {
			continue // the stream was cut mid-frame when the test ended it
		}
		c.visit(what, "#/components/schemas/Event", []byte(data))
		var ev struct {
			ID   *string `json:"id"`
			Type string  `json:"type"`
		}
		_ = json.Unmarshal([]byte(data), &ev)
		if ev.Type != typ {
			c.errorf("%s: event: %q but data.type %q", what, typ, ev.Type)
		}
		if (ev.ID != nil) != hasID || ev.ID != nil && *ev.ID != id {
			c.errorf("%s: id: %q but data.id %v", what, id, ev.ID)
		}
	}
}

// visit checks a JSON body against the schema at ref in the document.
func (c *apiChecker) visit(what, ref string, b []byte) {
	sch, err := c.spec.schema(ref)
	if err != nil {
		c.errorf("%s: cannot compile %s: %v", what, ref, err)
		return
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		c.errorf("%s: body is not JSON: %v\nbody: %.2000s", what, err, b)
		return
	}
	if err := sch.Validate(v); err != nil {
		c.errorf("%s: body does not match %s: %v\nbody: %.2000s", what, strings.TrimPrefix(ref, "#/components/schemas/"), err, b)
	}
}

// authenticate is the document's bearer scheme: an Authorization header
// "Bearer <token>" (the scheme in any case).
func (c *apiChecker) authenticate(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if c.otherAuth {
		return nil
	}
	scheme, token, ok := strings.Cut(in.RequestValidationInput.Request.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return errors.New("no bearer token")
	}
	return nil
}

// teeBody keeps what the handler reads of a request body.
type teeBody struct {
	rc       io.ReadCloser
	buf      bytes.Buffer
	eof      bool
	failed   bool
	overflow bool
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if b.buf.Len()+n <= checkedBodyLimit {
		b.buf.Write(p[:n])
	} else {
		b.overflow = true
	}
	switch {
	case err == io.EOF:
		b.eof = true
	case err != nil:
		b.failed = true
	}
	return n, err
}

func (b *teeBody) Close() error { return b.rc.Close() }

// drain reads what the handler left of the body, after sending the
// response (a client may wait for it before it sends the rest), for at
// most a second; it reports whether the whole body is kept.
func (b *teeBody) drain(w http.ResponseWriter) bool {
	if !b.eof && !b.failed && !b.overflow {
		rc := http.NewResponseController(w)
		_ = rc.Flush()
		_ = rc.SetReadDeadline(time.Now().Add(time.Second))
		_, _ = io.Copy(io.Discard, io.LimitReader(bufio.NewReader(b), checkedBodyLimit+1))
		_ = rc.SetReadDeadline(time.Time{})
	}
	return b.eof && !b.failed && !b.overflow
}

// recorder passes a response on and keeps its status, header and body.
type recorder struct {
	http.ResponseWriter
	status   int
	header   http.Header
	body     bytes.Buffer
	overflow bool
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
		r.header = r.ResponseWriter.Header().Clone()
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	if r.body.Len()+len(p) <= checkedBodyLimit {
		r.body.Write(p)
	} else {
		r.overflow = true
	}
	return r.ResponseWriter.Write(p)
}

// Flush lets event streams through as they are written.
func (r *recorder) Flush() { _ = http.NewResponseController(r.ResponseWriter).Flush() }

// Unwrap gives http.ResponseController the server's writer (deadlines).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
