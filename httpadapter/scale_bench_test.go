package httpadapter_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/parleychat/parley/internal/cputime"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/storetest"
)

// envBenchScale sets the large size of BenchmarkScale: "CONVERSATIONS,CONTACTS",
// for instance "10000,100000". Unset, the large size is 100 conversations
// and 1,000 contacts, so that a run of every benchmark once stays short.
const envBenchScale = "PARLEY_BENCH_SCALE"

// scaleSize is the number of conversations and contacts in the tables.
type scaleSize struct{ convs, contacts int }

func (s scaleSize) String() string { return fmt.Sprintf("convs=%d,contacts=%d", s.convs, s.contacts) }

// scaleSizes are the small size (10 conversations, 100 contacts) and the
// large one (envBenchScale).
func scaleSizes(b *testing.B) []scaleSize {
	large := scaleSize{100, 1000}
	if v := os.Getenv(envBenchScale); v != "" {
		c, k, ok := strings.Cut(v, ",")
		convs, err1 := strconv.Atoi(c)
		contacts, err2 := strconv.Atoi(k)
		if !ok || err1 != nil || err2 != nil || convs < 10 || contacts < 100 {
			b.Fatalf("%s=%q: want CONVERSATIONS,CONTACTS, at least 10,100", envBenchScale, v)
		}
		large = scaleSize{convs, contacts}
	}
	return []scaleSize{{10, 100}, large}
}

// fillScale adds contacts and conversations to the store of e until it
// holds size.convs conversations and size.contacts contacts: each new
// conversation has one message, from one of the new contacts (or alice
// when there are none).
func fillScale(b *testing.B, e *benchEnv, store storetest.Store, size scaleSize) {
	b.Helper()
	ctx := context.Background()
	// newBenchEnv made alice and two conversations (the listed one, and
	// the one CreateMessage writes to).
	nContacts, nConvs := size.contacts-1, size.convs-2
	contacts := make([]messaging.Contact, nContacts)
	now := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Millisecond)
	for i := range contacts {
		contacts[i] = messaging.Contact{ID: ids.New(ids.Contact), Username: fmt.Sprintf("scale_%d", i),
			PhoneNumber: fmt.Sprintf("+1555%07d", i), CreatedAt: now, LastActiveAt: now}
	}
	// PutContact in a few goroutines: 100,000 one by one take minutes on
	// PostgreSQL.
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(contacts); i += 4 {
				if err := store.PutContact(ctx, contacts[i]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	require.NoError(b, <-errs)

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
	for i := range nConvs {
		from := e.alice
		if nContacts > 0 {
			from = contacts[i%nContacts]
		}
		at := now.Add(time.Duration(i) * time.Millisecond)
		msgs = append(msgs, messaging.Message{ID: ids.NewAt(ids.Message, at), ConversationID: fmt.Sprintf("scale-conv-%d", i),
			Contact: from, Text: "a message of another conversation", CreatedAt: at})
		if len(msgs) == cap(msgs) {
			flush()
		}
	}
	if len(msgs) > 0 {
		flush()
	}
}

// BenchmarkScale measures a create and a first page (the requests of
// BenchmarkAdapter) with 10 conversations and 100 contacts in the tables,
// and with more (envBenchScale), on every SQL engine of backendtest: the
// goal is the same cost (within 1.2x, in CPU and allocations) at both
// sizes. Run with, for instance,
//
//	PARLEY_BENCH_SCALE=10000,100000 go test -run '^$' -bench Scale -benchtime 2000x ./httpadapter/
func BenchmarkScale(b *testing.B) {
	for _, be := range benchBackends(b) {
		if be.name == "memstore" {
			continue // its list is a scan of every message: not what is measured
		}
		for _, size := range scaleSizes(b) {
			b.Run(be.name+"/"+size.String(), func(b *testing.B) {
				store, blobs := be.new(b)
				e := newBenchEnv(b, store, blobs)
				form := "application/x-www-form-urlencoded"
				create := newBenchRequest("POST", "/v1/messages", form,
					[]byte("conversation_id=bench-create&message=hello+world"), http.StatusCreated)
				create.serve(b, e.h, &benchWriter{h: http.Header{}}) // makes the conversation
				fillScale(b, e, store, size)
				if be.name == "postgres" {
					// Statistics for the planner, as autovacuum would have
					// gathered on tables of this size: without them the plans
					// of the small tables differ from run to run.
					db := store.(interface{ DB() *bun.DB }).DB()
					_, err := db.ExecContext(context.Background(), "ANALYZE")
					require.NoError(b, err)
				}

				b.Run("CreateMessage", func(b *testing.B) { runCPU(b, e, create, be.name == "postgres") })
				b.Run("ListFirstPage", func(b *testing.B) {
					runCPU(b, e, newBenchRequest("GET", "/v1/messages?conversation_id="+e.conv, "", nil, http.StatusOK), be.name == "postgres")
				})
			})
		}
	}
}

// runCPU is benchRequest.run, reporting also the CPU time of the process
// per request (user and system, cpu-ns/op): on a shared machine it varies
// less than the wall time. On SQLite it includes the database's work. On
// PostgreSQL (pg) it reports as well the CPU time of the machine's
// PostgreSQL processes per request (pg-cpu-ns/op, Linux only), which
// counts other clients of the server too.
func runCPU(b *testing.B, e *benchEnv, br *benchRequest, pg bool) {
	before := cputime.Process(b)
	pgBefore, pgOK := postgresCPU()
	br.run(b, e.h)
	b.ReportMetric(float64(cputime.Process(b)-before)/float64(b.N), "cpu-ns/op")
	if pgAfter, ok := postgresCPU(); pg && pgOK && ok {
		b.ReportMetric(float64(pgAfter-pgBefore)/float64(b.N), "pg-cpu-ns/op")
	}
}
