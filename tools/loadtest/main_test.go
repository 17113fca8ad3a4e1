package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/sqlstore"
)

func TestHistogramPercentilesExact(t *testing.T) {
	var h histogram
	for _, v := range []time.Duration{4, 1, 3, 2} {
		h.record(v)
	}
	assert.Equal(t, int64(4), h.count())
	assert.Equal(t, time.Duration(1), h.percentile(1))
	assert.Equal(t, time.Duration(1), h.percentile(25))
	assert.Equal(t, time.Duration(2), h.percentile(50))
	assert.Equal(t, time.Duration(3), h.percentile(75))
	assert.Equal(t, time.Duration(4), h.percentile(99))
	assert.Equal(t, time.Duration(4), h.percentile(100))
	assert.Equal(t, time.Duration(2), h.mean()) // 10/4, truncated
}

func TestHistogramPercentilesKnownData(t *testing.T) {
	// 1 to 10,000 µs, in random order: the p-th percentile is p×100 µs.
	vals := make([]time.Duration, 10000)
	for i := range vals {
		vals[i] = time.Duration(i+1) * time.Microsecond
	}
	rand.New(rand.NewPCG(7, 7)).Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
	// Recorded into two histograms, merged, as the connections' are.
	var a, b histogram
	for i, v := range vals {
		if i%3 == 0 {
			a.record(v)
		} else {
			b.record(v)
		}
	}
	var h histogram
	h.merge(&a)
	h.merge(&b)
	require.Equal(t, int64(10000), h.count())
	for _, p := range []float64{1, 10, 50, 90, 99, 99.9} {
		want := time.Duration(p*100) * time.Microsecond
		got := h.percentile(p)
		assert.InEpsilon(t, float64(want), float64(got), 0.005, "p%v = %v, want %v", p, got, want)
	}
	assert.Equal(t, 10*time.Millisecond, h.percentile(100), "p100 is the exact maximum")
	assert.Equal(t, time.Duration(5000500)*time.Nanosecond, h.mean())

	// A skewed set: 90 fast, 10 slow.
	var s histogram
	for range 90 {
		s.record(time.Millisecond)
	}
	for range 10 {
		s.record(100 * time.Millisecond)
	}
	assert.InEpsilon(t, float64(time.Millisecond), float64(s.percentile(50)), 0.005)
	assert.InEpsilon(t, float64(time.Millisecond), float64(s.percentile(90)), 0.005)
	assert.InEpsilon(t, float64(100*time.Millisecond), float64(s.percentile(91)), 0.005)
	assert.InEpsilon(t, float64(100*time.Millisecond), float64(s.percentile(99)), 0.005)

	var empty histogram
	assert.Zero(t, empty.percentile(50))
	assert.Zero(t, empty.mean())
}

func TestHistogramBuckets(t *testing.T) {
	prev := -1
	assert.Equal(t, bucket(256), bucket(257), "two values a bucket from 256")
	assert.NotEqual(t, bucket(257), bucket(258))
	for _, v := range []int64{0, 1, 255, 256, 257, 511, 512, 1000, 65535, 65536, 1e6, 123456789, 1e12, histMax} {
		i := bucket(v)
		require.Less(t, i, histBuckets, "bucket of %d", v)
		assert.GreaterOrEqual(t, i, prev, "buckets grow with values (%d)", v)
		prev = i
		assert.LessOrEqual(t, abs(bucketValue(i)-v), v/256+1, "value of %d's bucket", v)
	}
	assert.Equal(t, histBuckets-1, bucket(histMax))
	var h histogram
	h.record(time.Hour) // beyond histMax: clamped, not a panic
	assert.Equal(t, time.Duration(histMax), h.percentile(50))
}

func abs(v int64) int64 { return max(v, -v) }

// parley starts the real /v1 handler on memstore and returns its URL, the
// services and a count of the requests it served, by "METHOD path".
type parley struct {
	url      string
	msgs     *messaging.Service
	alice    messaging.Contact
	mu       sync.Mutex
	requests map[string]int
}

func (p *parley) count(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests[key]
}

func newParley(tb testing.TB) *parley {
	tb.Helper()
	store := memstore.New()
	msgs := svctest.New(tb, store, memstore.NewBlobStore(), nil)
	alice, err := msgs.SaveContact(context.Background(), messaging.Contact{Username: "alice"})
	require.NoError(tb, err)
	api, err := httpadapter.New(msgs, &httpadapter.Options{
		Authenticator: httpadapter.StaticTokens(map[string]messaging.Contact{"tok-alice": alice}),
	})
	require.NoError(tb, err)
	p := &parley{msgs: msgs, alice: alice, requests: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Method + " " + r.URL.Path
		switch q := r.URL.Query(); {
		case r.Method == http.MethodGet && r.URL.Path == "/v1/messages" && q.Get("limit") == "10" && q.Has("starting_after"):
			key = "deep"
		case r.Method == http.MethodGet && r.URL.Path == "/v1/messages" && q.Get("limit") == "10":
			key = "list"
		case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			v, _ := url.ParseQuery(string(body))
			key += " " + v.Get("conversation_id")
		}
		p.mu.Lock()
		p.requests[key]++
		p.mu.Unlock()
		api.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// post stores n messages in conv and returns their ids, oldest first.
func (p *parley) post(tb testing.TB, conv string, n int) []string {
	tb.Helper()
	out := make([]string, n)
	for i := range out {
		m, err := p.msgs.Create(context.Background(), p.alice, messaging.NewMessage{ConversationID: conv, Text: "hello"})
		require.NoError(tb, err)
		out[i] = m.ID
	}
	return out
}

func testConfig(out io.Writer, ops ...string) loadConfig {
	return loadConfig{
		Ops: ops, Mix: mustMix(defaultMix), Conns: 2, Duration: 500 * time.Millisecond, Rounds: 1,
		Depth: 20, UploadSize: 100 << 10, Timeout: 10 * time.Second, Out: out,
	}
}

func mustMix(s string) mix {
	m, err := parseMix(s)
	if err != nil {
		panic(err)
	}
	return m
}

func alice(base string) targetConfig {
	return targetConfig{Name: "A", URL: base, Token: "tok-alice", User: "alice", Conv: "conv_read", CreateConv: "conv_write"}
}

func TestRunCountsEveryRequest(t *testing.T) {
	p := newParley(t)
	p.post(t, "conv_read", 30)
	var out bytes.Buffer
	cfg := testConfig(&out, "list", "create")
	cfg.Targets = []targetConfig{alice(p.url)}
	rep, err := runLoad(context.Background(), cfg)
	require.NoError(t, err, out.String())
	require.Len(t, rep.Runs, 2)

	// Without warm-up, the report counts exactly the requests the server saw.
	list, create := rep.Runs[0], rep.Runs[1]
	assert.Equal(t, "list", list.Op)
	assert.Zero(t, list.Errors, out.String())
	assert.Positive(t, list.OK)
	// One request more on the server for each: the probe before the runs.
	assert.Equal(t, int64(p.count("list")), list.OK+1, "list requests")
	assert.Equal(t, list.OK, list.Hist.count(), "one latency per success")
	assert.Zero(t, create.Errors, out.String())
	assert.Equal(t, int64(p.count("POST /v1/messages conv_write")), create.OK+1, "create requests")

	// The rate is the count over the window, which lasts the duration
	// plus at most the last request's time.
	assert.GreaterOrEqual(t, list.Elapsed, cfg.Duration)
	assert.Less(t, list.Elapsed, cfg.Duration+time.Second)
	assert.InEpsilon(t, float64(list.OK)/list.Elapsed.Seconds(), list.rps(), 1e-9)
	assert.LessOrEqual(t, list.Hist.percentile(50), list.Hist.percentile(90))
	assert.LessOrEqual(t, list.Hist.percentile(90), list.Hist.percentile(99))
	assert.Positive(t, list.Hist.percentile(50))
	assert.Contains(t, out.String(), "list   A round 1/1:")
	assert.Contains(t, out.String(), "req/s")

	// The warm-up is not counted.
	before := p.count("POST /v1/messages conv_write")
	cfg.Ops, cfg.Warmup, cfg.Duration = []string{"create"}, 300*time.Millisecond, 300*time.Millisecond
	rep, err = runLoad(context.Background(), cfg)
	require.NoError(t, err)
	served := int64(p.count("POST /v1/messages conv_write") - before - 1)
	assert.Positive(t, rep.Runs[0].OK)
	assert.Less(t, rep.Runs[0].OK, served, "warm-up requests are not in the report")
}

func TestEveryOpAgainstParley(t *testing.T) {
	p := newParley(t)
	ids := p.post(t, "conv_read", 40)
	var out bytes.Buffer
	cfg := testConfig(&out, opNames...)
	cfg.Duration = 200 * time.Millisecond
	cfg.Targets = []targetConfig{alice(p.url)}
	rep, err := runLoad(context.Background(), cfg)
	require.NoError(t, err, out.String())
	require.Len(t, rep.Runs, len(opNames))
	for _, r := range rep.Runs {
		assert.Empty(t, r.Unsupported, r.Op)
		assert.Zero(t, r.Errors, "%s: %v %v", r.Op, r.ErrorsBy, r.FirstErr)
		assert.Positive(t, r.OK, r.Op)
	}
	upload := rep.Runs[5]
	require.Equal(t, "upload", upload.Op)
	assert.Equal(t, upload.OK*cfg.UploadSize, upload.Bytes)
	assert.Positive(t, p.count("deep"))

	// deep reads after the message 20 deep (ids are oldest first).
	assert.Equal(t, ids[len(ids)-20], lookupCursor(t, cfg))
	// react added reactions in alice's name to the newest message, and took
	// them back.
	newest := ids[len(ids)-1]
	assert.Positive(t, p.count("PUT /v1/messages/"+newest))
	deletes := 0
	for _, name := range reactionNames {
		deletes += p.count("DELETE /v1/messages/" + newest + "/reactions/" + name)
	}
	assert.Positive(t, deletes)
	for _, id := range ids[:len(ids)-1] {
		assert.Zero(t, p.count("PUT /v1/messages/"+id), "only the newest message gets reactions")
	}
	m, err := p.msgs.Get(context.Background(), p.alice, newest)
	require.NoError(t, err)
	for _, r := range m.Reactions {
		assert.Equal(t, []string{"alice"}, r.Reactors)
		assert.Contains(t, reactionNames, r.Name)
	}
}

// lookupCursor returns the cursor a fresh target finds with cfg's depth.
func lookupCursor(tb testing.TB, cfg loadConfig) string {
	tb.Helper()
	tg, err := newTarget(context.Background(), cfg.Targets[0], 1, time.Second, false, 0)
	require.NoError(tb, err)
	cur, found, err := tg.findCursor(context.Background(), cfg.Depth)
	require.NoError(tb, err)
	require.Equal(tb, cfg.Depth, found)
	return cur
}

func TestFindCursorShortConversation(t *testing.T) {
	p := newParley(t)
	ids := p.post(t, "conv_read", 35)
	tg, err := newTarget(context.Background(), alice(p.url), 1, time.Second, false, 0)
	require.NoError(t, err)
	cur, found, err := tg.findCursor(context.Background(), 250)
	require.NoError(t, err)
	// 11th from the oldest: a page after it is a full page of 10.
	assert.Equal(t, ids[10], cur)
	assert.Equal(t, 25, found)

	cur, found, err = tg.findCursor(context.Background(), 7)
	require.NoError(t, err)
	assert.Equal(t, ids[35-7], cur)
	assert.Equal(t, 7, found)

	tg.Conv = "conv_empty"
	cur, found, err = tg.findCursor(context.Background(), 10)
	require.NoError(t, err)
	assert.Empty(t, cur)
	assert.Zero(t, found)
}

// fakeFloor serves what the floor serves (POST and GET /v1/messages, POST
// /v1/attachments), after delay, and records in seq the name of each
// list request it answers.
func fakeFloor(tb testing.TB, name string, delay time.Duration, seq *[]string, mu *sync.Mutex) string {
	tb.Helper()
	var n atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/messages", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"id":"msg_x"}`)
			return
		}
		if r.URL.Query().Get("limit") == "10" {
			mu.Lock()
			*seq = append(*seq, name)
			mu.Unlock()
		}
		k := n.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{"has_more": true, "data": []map[string]string{{"id": "msg_" + name + string(rune('a'+k%26))}}})
	})
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	return srv.URL
}

func TestCompareAlternatesAndComputesRatios(t *testing.T) {
	var mu sync.Mutex
	var seq []string
	a := fakeFloor(t, "A", time.Millisecond, &seq, &mu)
	b := fakeFloor(t, "B", 5*time.Millisecond, &seq, &mu)
	var out bytes.Buffer
	cfg := testConfig(&out, "list", "get")
	cfg.Rounds, cfg.Duration, cfg.Warmup = 3, 150*time.Millisecond, 20*time.Millisecond
	ta, tb := alice(a), alice(b)
	tb.Name = "B"
	cfg.Targets = []targetConfig{ta, tb}
	rep, err := runLoad(context.Background(), cfg)
	require.NoError(t, err, out.String())

	// The list requests came in rounds: A, B, A, B, A, B.
	mu.Lock()
	var runs []string
	for _, s := range seq {
		if len(runs) == 0 || runs[len(runs)-1] != s {
			runs = append(runs, s)
		}
	}
	mu.Unlock()
	assert.Equal(t, []string{"A", "B", "A", "B", "A", "B"}, runs)

	require.Len(t, rep.Runs, 12)
	for i, r := range rep.Runs[:6] {
		assert.Equal(t, "list", r.Op)
		assert.Equal(t, []string{"A", "B"}[i%2], r.Target)
		assert.Equal(t, i/2+1, r.Round)
		assert.Zero(t, r.Errors)
	}
	// get is not served by the floor: reported as not run, not as errors.
	for _, r := range rep.Runs[6:] {
		assert.Equal(t, "get", r.Op)
		assert.Contains(t, r.Unsupported, "404")
	}

	la, lb := rep.merged("list", "A"), rep.merged("list", "B")
	assert.Len(t, la.rpsRounds, 3)
	assert.GreaterOrEqual(t, la.Hist.percentile(50), time.Millisecond)
	assert.GreaterOrEqual(t, lb.Hist.percentile(50), 5*time.Millisecond)
	assert.Less(t, la.Hist.percentile(50), lb.Hist.percentile(50))
	assert.Greater(t, la.rps(), lb.rps())
	assert.Regexp(t, `list\s+A/B\s+\d+\.\d\d×`, out.String())
	assert.Contains(t, out.String(), "get on B: not run: GET /v1/messages/{id} answers 404")
}

func TestMixRefusedWhereAPartIsUnsupported(t *testing.T) {
	var mu sync.Mutex
	var seq []string
	floor := fakeFloor(t, "A", 0, &seq, &mu)
	var out bytes.Buffer
	cfg := testConfig(&out, "mix")
	cfg.Duration = 100 * time.Millisecond
	cfg.Targets = []targetConfig{alice(floor)}
	rep, err := runLoad(context.Background(), cfg)
	require.NoError(t, err)
	assert.Contains(t, rep.Runs[0].Unsupported, "get, react")

	cfg.Mix = mustMix("list=3,create=1")
	rep, err = runLoad(context.Background(), cfg)
	require.NoError(t, err)
	assert.Empty(t, rep.Runs[0].Unsupported)
	assert.Positive(t, rep.Runs[0].OK)
	assert.Zero(t, rep.Runs[0].Errors)
}

func TestErrorsAreCounted(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("limit") == "10" && calls.Add(1)%2 == 0 {
			http.Error(w, `{"error":{}}`, http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, `{"has_more":false,"data":[]}`)
	}))
	t.Cleanup(srv.Close)
	var out bytes.Buffer
	cfg := testConfig(&out, "list")
	cfg.Conns, cfg.Duration = 1, 200*time.Millisecond
	cfg.Targets = []targetConfig{alice(srv.URL)}
	rep, err := runLoad(context.Background(), cfg)
	require.NoError(t, err)
	r := rep.Runs[0]
	// The probe took the first call; then every other one failed.
	assert.InDelta(t, r.OK, r.Errors, 1)
	assert.Equal(t, r.Errors, r.ErrorsBy["list 503"])
	assert.Equal(t, calls.Load()-1, r.OK+r.Errors)
	assert.Contains(t, out.String(), "list on A: errors: list 503 ×")
}

func TestLoopbackOnly(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{"http://127.0.0.1:8080", "http://[::1]:8080", "http://localhost:8080", "http://127.0.0.2"} {
		assert.NoError(t, checkLoopback(ctx, u), u)
	}
	for _, u := range []string{"http://192.0.2.1:8080", "http://[2001:db8::1]", "ftp://127.0.0.1", "127.0.0.1:8080"} {
		assert.Error(t, checkLoopback(ctx, u), u)
	}
	_, err := newTarget(ctx, targetConfig{Name: "A", URL: "http://192.0.2.1:8080"}, 1, time.Second, false, 0)
	assert.ErrorContains(t, err, "-allow-remote")
	_, err = newTarget(ctx, targetConfig{Name: "A", URL: "http://192.0.2.1:8080"}, 1, time.Second, true, 0)
	assert.NoError(t, err)
	assert.Error(t, dialLoopbackOnly("tcp", "192.0.2.1:80", nil))
	assert.NoError(t, dialLoopbackOnly("tcp", "127.0.0.1:80", nil))

	err = run(ctx, []string{"-url", "http://192.0.2.1:8080", "-d", "1s"}, io.Discard)
	assert.ErrorContains(t, err, "-allow-remote")
}

func TestFlagBounds(t *testing.T) {
	for _, args := range [][]string{
		{"-c", "0"}, {"-c", "5000"}, {"-d", "1h"}, {"-rounds", "50"}, {"-ops", "list,bogus"},
		{"-mix", "list=0"}, {"-mix", "list=1,list=2"}, {"-mix", "nope=1"}, {"-seed", "10"}, {"extra"},
		{"-d", "5m", "-rounds", "20"}, // more than an hour in all
	} {
		assert.Error(t, run(context.Background(), args, io.Discard), "%q", args)
	}
}

func TestMixPick(t *testing.T) {
	m := mustMix("list=60,create=20,get=10,react=10")
	rng := rand.New(rand.NewPCG(1, 1))
	got := map[string]int{}
	const n = 100000
	for range n {
		got[m.pick(rng)]++
	}
	for _, p := range m {
		assert.InDelta(t, float64(p.weight)/100, float64(got[p.op])/n, 0.01, p.op)
	}
	assert.Equal(t, "list=60,create=20,get=10,react=10", m.String())
}

func TestUploadBodyStreams(t *testing.T) {
	const size = 300_001
	u := newUploadBody("conv_files", size)
	assert.Less(t, len(u.prefix)+len(u.suffix), 1024, "only the framing is in memory")
	body, err := io.ReadAll(u.reader())
	require.NoError(t, err)
	assert.Equal(t, u.length(), int64(len(body)))

	_, params, _ := strings.Cut(u.ctype, "boundary=")
	mr := multipart.NewReader(bytes.NewReader(body), params)
	part, err := mr.NextPart()
	require.NoError(t, err)
	assert.Equal(t, "conversation_id", part.FormName())
	v, _ := io.ReadAll(part)
	assert.Equal(t, "conv_files", string(v))
	part, err = mr.NextPart()
	require.NoError(t, err)
	assert.Equal(t, "file", part.FormName())
	data, err := io.ReadAll(part)
	require.NoError(t, err)
	assert.Len(t, data, size)
	assert.Equal(t, pattern[:1000], data[:1000])
	assert.Equal(t, pattern[size%len(pattern)-10:size%len(pattern)], data[size-10:], "the pattern repeats")
	_, err = mr.NextPart()
	assert.Equal(t, io.EOF, err)

	// WriteTo yields the same bytes.
	var w bytes.Buffer
	n, err := (&patternReader{left: size}).WriteTo(&w)
	require.NoError(t, err)
	assert.Equal(t, int64(size), n)
	assert.Equal(t, data, w.Bytes())
}

func TestSeed(t *testing.T) {
	ctx := context.Background()
	dsn := filepath.Join(t.TempDir(), "seed.db")
	_, err := seed(ctx, dsn, "conv_seed", "alice", 2500, io.Discard)
	require.NoError(t, err)
	var out bytes.Buffer
	_, err = seed(ctx, dsn, "conv_seed", "alice", 1500, &out) // the contact exists now
	require.NoError(t, err)
	assert.Contains(t, out.String(), "seed: 1500 messages from alice")

	s, err := sqlstore.Open(ctx, dsn, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	c, err := s.Driver().ContactByUsername(ctx, "alice")
	require.NoError(t, err)
	var all []messaging.Message
	q := driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{"conv_seed"}}, Window: driver.Window{Limit: 100}}
	for {
		page, more, err := s.Driver().ListMessages(ctx, q)
		require.NoError(t, err)
		all = append(all, page...)
		if !more {
			break
		}
		q.After = &driver.Cursor{Time: page[len(page)-1].CreatedAt, ID: page[len(page)-1].ID}
	}
	require.Len(t, all, 4000)
	// The second seed is newer; within each, the last message is the newest.
	assert.Equal(t, "seed message 1499", all[0].Text)
	assert.Equal(t, "seed message 0", all[1499].Text)
	assert.Equal(t, "seed message 2499", all[1500].Text)
	assert.Equal(t, "seed message 0", all[3999].Text)
	for i, m := range all {
		assert.Equal(t, c.ID, m.Contact.ID)
		if i > 0 && !assert.True(t, m.CreatedAt.Before(all[i-1].CreatedAt), "distinct, decreasing created_at at %d", i) {
			break
		}
	}
}

// TestPrepareTakesBackItsReaction: preparing react tries it once, and
// takes the reaction back, so that the first page list reads carries none.
func TestPrepareTakesBackItsReaction(t *testing.T) {
	p := newParley(t)
	ids := p.post(t, "conv_read", 5)
	tg, err := newTarget(context.Background(), alice(p.url), 1, time.Second, false, 0)
	require.NoError(t, err)
	require.NoError(t, tg.prepare(context.Background(), []string{"list", "react"}, nil, 10, io.Discard))
	newest := ids[len(ids)-1]
	assert.Equal(t, 1, p.count("PUT /v1/messages/"+newest), "react was tried")
	m, err := p.msgs.Get(context.Background(), p.alice, newest)
	require.NoError(t, err)
	assert.Empty(t, m.Reactions, "and its reaction taken back")
}
