package httpadapter_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/internal/cputime"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/storetest"
)

// envBenchConvList sets the sizes of BenchmarkConversationList:
// "CONVERSATIONS,DEPTH", for instance "10000,5000" (issue 35's). Unset, 300
// conversations and a cursor 200 deep, so that a run of every benchmark
// once stays short.
const envBenchConvList = "PARLEY_BENCH_CONV_LIST"

// BenchmarkConversationList measures GET /v1/conversations (issue 35: a
// first page at most 2x the CPU of a first page of messages; a page whose
// cursor is DEPTH conversations deep within 1.2x of the first) on every
// SQL engine, for a caller who sees every conversation (Everyone) and for
// one who is a member of every one (MembersOnly, the store probing each
// row's membership). The yardstick, under the same conditions, is the
// first page of a conversation of 25,000 plain messages (the list of
// tools/loadtest; with it the tables hold more than the 50,000 messages
// from which PostgreSQL's pages run prepared, as a host's do at the
// issue's size). Each listed conversation has three plain messages.
// Beside wall time and allocations it reports the process's CPU per
// request (cpu-ns/op: on SQLite the database's work too) and, on
// PostgreSQL, that of the backends serving the process's connections
// (backend-cpu-ns/op, Linux only; other clients of the server not
// counted). Run with, for instance,
//
//	PARLEY_BENCH_CONV_LIST=10000,5000 go test -run '^$' -bench ConversationList -benchtime 2000x ./httpadapter/
func BenchmarkConversationList(b *testing.B) {
	n, depth := 300, 200
	if v := os.Getenv(envBenchConvList); v != "" {
		c, d, ok := strings.Cut(v, ",")
		var err1, err2 error
		n, err1 = strconv.Atoi(c)
		depth, err2 = strconv.Atoi(d)
		if !ok || err1 != nil || err2 != nil || depth < 0 || n < depth+11 {
			b.Fatalf("%s=%q: want CONVERSATIONS,DEPTH with CONVERSATIONS at least DEPTH+11", envBenchConvList, v)
		}
	}
	for _, be := range benchBackends(b) {
		if be.name == "memstore" {
			continue // its lists are scans: not what is measured
		}
		b.Run(be.name, func(b *testing.B) {
			store, _ := be.new(b)
			hs, deep := convListEnv(b, be.name, store, n, depth)
			pg := be.name == "postgres"
			var db *bun.DB
			if pg {
				db = store.(interface{ DB() *bun.DB }).DB()
			}
			for _, policy := range []string{"everyone", "members"} {
				h := hs[policy]
				b.Run(policy+"/MessagesFirstPage", func(b *testing.B) {
					runBackendCPU(b, h, db, newBenchRequest("GET", "/v1/messages?conversation_id=bench-plain", "", nil, http.StatusOK))
				})
				b.Run(policy+"/ConversationsFirstPage", func(b *testing.B) {
					runBackendCPU(b, h, db, newBenchRequest("GET", "/v1/conversations", "", nil, http.StatusOK))
				})
				b.Run(policy+"/ConversationsDeep", func(b *testing.B) {
					runBackendCPU(b, h, db, newBenchRequest("GET", "/v1/conversations?starting_after="+deep, "", nil, http.StatusOK))
				})
			}
		})
	}
}

// runBackendCPU is benchRequest.run through h, reporting the process's
// CPU per request (cpu-ns/op) and, when db is not nil, that of the
// PostgreSQL backends of the process's connections (backend-cpu-ns/op).
func runBackendCPU(b *testing.B, h http.Handler, db *bun.DB, br *benchRequest) {
	var pgBefore map[int]time.Duration
	if db != nil {
		pgBefore = backendsCPU(b, db)
	}
	before := cputime.Process(b)
	br.run(b, h)
	b.ReportMetric(float64(cputime.Process(b)-before)/float64(b.N), "cpu-ns/op")
	if db != nil {
		if pgAfter := backendsCPU(b, db); pgAfter != nil {
			b.ReportMetric(float64(backendsSpent(pgBefore, pgAfter))/float64(b.N), "backend-cpu-ns/op")
		}
	}
}

// convListEnv fills store for BenchmarkConversationList: alice; the
// conversation bench-plain of 25,000 plain messages, the oldest; n
// conversations of three messages each, one second apart; alice a member
// of every one; and returns the handlers of the policies "everyone" and
// "members", and the id of the conversation with depth newer ones.
// engine is the store's backendtest name.
func convListEnv(b *testing.B, engine string, store storetest.Store, n, depth int) (map[string]http.Handler, string) {
	b.Helper()
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	hs := map[string]http.Handler{}
	var every *messaging.Service
	var alice messaging.Contact
	for _, policy := range []string{"everyone", "members"} {
		opts := &messaging.Options{Logger: quiet}
		if policy == "members" {
			opts.Policy = messaging.MembersOnly()
		}
		svc := svctest.New(b, storetest.Storage(store), nil, opts)
		if every == nil {
			every = svc
			var err error
			alice, err = svc.SaveContact(ctx, messaging.Contact{Username: "alice", PhoneNumber: "+15550100"})
			require.NoError(b, err)
		}
		h, err := httpadapter.New(svc, &httpadapter.Options{
			Authenticator: httpadapter.StaticTokens(map[string]messaging.Contact{benchToken: alice}),
			Logger:        quiet,
		})
		require.NoError(b, err)
		hs[policy] = h
	}

	start := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Millisecond)
	msgs := make([]messaging.Message, 0, 1000)
	flush := func() {
		if imp, ok := store.(importer); ok {
			require.NoError(b, imp.ImportMessages(ctx, msgs))
		} else {
			for _, m := range msgs {
				require.NoError(b, store.CreateMessage(ctx, m, nil, nil))
			}
		}
		msgs = msgs[:0]
	}
	add := func(conv string, at time.Time, text string) {
		msgs = append(msgs, messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: conv, Contact: alice, Text: text, CreatedAt: at})
		if len(msgs) == cap(msgs) {
			flush()
		}
	}
	for i := range 25_000 {
		add("bench-plain", start.Add(time.Duration(i)*time.Millisecond), fmt.Sprintf("message number %d of the plain conversation", i))
	}
	convs := make([]string, n)
	for i := range convs {
		convs[i] = fmt.Sprintf("list-%06d", i)
		at := start.Add(time.Hour + time.Duration(i)*time.Second)
		for j := range 3 {
			add(convs[i], at.Add(time.Duration(j)*time.Millisecond), fmt.Sprintf("message %d of conversation %d", j, i))
		}
	}
	flush()
	// Memberships, in a few goroutines: one transaction each.
	require.NoError(b, every.AddMember(ctx, "bench-plain", alice.ID))
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(convs); i += 4 {
				if err := every.AddMember(ctx, convs[i], alice.ID); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	require.NoError(b, <-errs)
	if db, ok := store.(interface{ DB() *bun.DB }); ok && engine == "sqlite" {
		// The search index of what was imported, now rather than by the
		// store's indexer behind the benchmarks, whose CPU they would count.
		_, err := db.DB().ExecContext(ctx, "UPDATE message_search_mark SET seq = (SELECT MAX(seq) FROM messages) WHERE seq < (SELECT MAX(seq) FROM messages)")
		require.NoError(b, err)
	}
	if db, ok := store.(interface{ DB() *bun.DB }); ok && engine != "sqlite" {
		// Statistics for the planner, as autovacuum would have gathered
		// after such a load. Not on SQLite, where nothing gathers them
		// (the store runs no ANALYZE), and where with them (STAT4) a
		// prepared read whose bound values an index compares is prepared
		// again at each run (a quarter of a deep page's CPU in a profile).
		q := "ANALYZE"
		if engine == "mysql" {
			q = "ANALYZE TABLE conversations, conversation_members, messages"
		}
		_, err := db.DB().ExecContext(ctx, q)
		require.NoError(b, err)
	}

	// The lists are what the benchmarks claim they are.
	deep := convs[n-1-depth]
	for _, policy := range []string{"everyone", "members"} {
		for _, c := range []struct{ after, want string }{{"", convs[n-1]}, {deep, convs[n-2-depth]}} {
			w := &benchWriter{h: http.Header{}}
			target := "/v1/conversations"
			if c.after != "" {
				target += "?starting_after=" + c.after
			}
			newBenchRequest("GET", target, "", nil, http.StatusOK).serve(b, hs[policy], w)
			require.Contains(b, string(w.head), `"data":[{"id":"`+c.want+`"`, "%s %s", policy, target)
		}
	}
	return hs, deep
}
