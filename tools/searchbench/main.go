// Command searchbench generates a Parley of many messages and measures
// message search on it (issue 32), through messaging.Service.Search over a
// sqlstore: the first page and a page 100 deep, for a caller who may see 50
// conversations (messaging.MembersOnly) and for one who sees all
// (messaging.Everyone), with a common word, a rare one, two words and a
// prefix; and creates with the search index against creates without it.
//
//	go run ./tools/searchbench -dsn /tmp/search.db -messages 1000000 -conversations 10000
//	go run ./tools/searchbench -dsn 'postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable' -schema searchbench
//
// The data are made once per database (a later run with the same
// -messages measures the data already there; -messages is not checked).
// Texts are 8 words: filler
// drawn from 20,000 made-up words by a Zipf law, and the words of the
// queries at set rates: "project" in 5% of messages, "status" in 10%,
// "projection" in 1%, "zanzibar" in 0.01%. Times are of the Service's
// call, in process, as a host calls it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/sqlstore"
	_ "github.com/parleychat/parley/storage/sqlstore/mysql"
	_ "github.com/parleychat/parley/storage/sqlstore/postgres"
	_ "github.com/parleychat/parley/storage/sqlstore/sqlite"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "searchbench:", err)
		os.Exit(1)
	}
}

var (
	dsn      = flag.String("dsn", "", "the database (a sqlstore DSN)")
	schema   = flag.String("schema", "", "PostgreSQL: the schema of the store (sqlstore.Options.Schema)")
	messages = flag.Int("messages", 1_000_000, "messages to generate")
	convs    = flag.Int("conversations", 10_000, "conversations to spread them over")
	samples  = flag.Int("samples", 100, "timed calls of each first page")
	creates  = flag.Int("creates", 2000, "creates timed with and without the index (0: none)")
	only     = flag.String("only", "", "search, creates, load (make the data and stop), or search and creates when empty")
	cpuprof  = flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	extra    = flag.String("extra", "", "more queries to time, comma-separated (filler words of a middling rate, say)")
	callers  = flag.String("callers", "member_of_50,all", "the callers to time, comma-separated")
	names    = flag.String("queries", "", "the queries to time by name (common, rare, two_words, prefix, extra), comma-separated; all when empty")
)

// queries are the searches measured.
var queries = []struct{ name, q string }{
	{"common", "project"},
	{"rare", "zanzibar"},
	{"two_words", "project status"},
	{"prefix", "proj"},
}

func run() error {
	flag.Parse()
	if *dsn == "" {
		return errors.New("-dsn is required")
	}
	for q := range strings.SplitSeq(*extra, ",") {
		if q = strings.TrimSpace(q); q != "" {
			queries = append(queries, struct{ name, q string }{"extra", q})
		}
	}
	ctx := context.Background()
	if *cpuprof != "" {
		f, err := os.Create(*cpuprof)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *only != "creates" {
		if err := measureSearch(ctx); err != nil {
			return err
		}
	}
	if (*only == "" || *only == "creates") && *creates > 0 {
		return measureCreates(ctx)
	}
	return nil
}

func open(ctx context.Context, schema string) (*sqlstore.Store, error) {
	st, err := sqlstore.Open(ctx, *dsn, &sqlstore.Options{Schema: schema})
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

func measureSearch(ctx context.Context) error {
	st, err := open(ctx, *schema)
	if err != nil {
		return err
	}
	defer st.Close()
	every, err := messaging.New(ctx, st, memstore.NewBlobStore(), nil)
	if err != nil {
		return err
	}
	defer every.Close()
	members, err := messaging.New(ctx, st, memstore.NewBlobStore(), &messaging.Options{Policy: messaging.MembersOnly(), MaxListLimit: 100})
	if err != nil {
		return err
	}
	defer members.Close()
	reader, err := generate(ctx, every, st)
	if err != nil {
		return err
	}
	if *only == "load" {
		return nil
	}
	fmt.Printf("# %s: %d messages in %d conversations; page of 10\n", engine(), *messages, *convs)
	fmt.Println("# cpu: this process's CPU per call, and on PostgreSQL + that of the backends of its connections")
	fmt.Println("caller\tquery\tfirst p50\tfirst p95\tfirst cpu\tpage 100 p50\tpage 100 cpu\tdeep/first p50\tdeep/first cpu\tresults (first 1000)")
	for _, c := range []struct {
		name string
		svc  *messaging.Service
	}{{"member_of_50", members}, {"all", every}} {
		if !slices.Contains(strings.Split(*callers, ","), c.name) {
			continue
		}
		for _, q := range queries {
			if *names != "" && !slices.Contains(strings.Split(*names, ","), q.name) {
				continue
			}
			first, err := timeCalls(st, *samples, func() error {
				_, err := c.svc.Search(ctx, reader, q.q, "", messaging.ListOptions{Limit: 10})
				return err
			})
			if err != nil {
				return err
			}
			// Walk to page 100, then time it.
			cursor, pages, hits := "", 0, 0
			for pages < 99 {
				p, err := c.svc.Search(ctx, reader, q.q, "", messaging.ListOptions{Limit: 10, StartingAfter: cursor})
				if err != nil {
					return err
				}
				pages++
				hits += len(p.Data)
				if !p.HasMore {
					cursor = ""
					break
				}
				cursor = p.Data[len(p.Data)-1].ID
			}
			deep, deepCPU, ratio, ratioCPU := "n/a", "n/a", "", ""
			if cursor != "" {
				d, err := timeCalls(st, *samples, func() error {
					_, err := c.svc.Search(ctx, reader, q.q, "", messaging.ListOptions{Limit: 10, StartingAfter: cursor})
					return err
				})
				if err != nil {
					return err
				}
				deep, ratio = ms(d.p50), fmt.Sprintf("%.2f", float64(d.p50)/float64(first.p50))
				deepCPU, ratioCPU = d.cpus(), fmt.Sprintf("%.2f", float64(d.cpu+d.db)/float64(first.cpu+first.db))
			} else {
				ratio = fmt.Sprintf("(%d pages only)", pages)
			}
			fmt.Printf("%s\t%s %q\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", c.name, q.name, q.q, ms(first.p50), ms(first.p95), first.cpus(),
				deep, deepCPU, ratio, ratioCPU, hits)
		}
	}
	return nil
}

func engine() string {
	switch {
	case strings.HasPrefix(*dsn, "postgres"):
		return "PostgreSQL"
	case strings.HasPrefix(*dsn, "mysql"):
		return "MySQL/MariaDB"
	}
	return "SQLite"
}

// timing is what timeCalls measured: wall time percentiles, and CPU time
// per call of this process and (PostgreSQL) of the backends of its
// connections.
type timing struct{ p50, p95, cpu, db time.Duration }

// cpus is "process + backends" CPU per call, in ms.
func (t timing) cpus() string {
	if t.db == 0 {
		return ms(t.cpu)
	}
	return fmt.Sprintf("%.2f + %.2f ms", float64(t.cpu.Microseconds())/1000, float64(t.db.Microseconds())/1000)
}

func timeCalls(st *sqlstore.Store, n int, call func() error) (timing, error) {
	for range 3 { // warm up
		if err := call(); err != nil {
			return timing{}, err
		}
	}
	ds := make([]time.Duration, n)
	db0, cpu0 := backendsCPU(st), processCPU()
	for i := range ds {
		start := time.Now()
		if err := call(); err != nil {
			return timing{}, err
		}
		ds[i] = time.Since(start)
	}
	cpu := processCPU() - cpu0
	var db time.Duration
	for pid, t := range backendsCPU(st) {
		db += t - db0[pid]
	}
	slices.Sort(ds)
	return timing{p50: ds[n/2], p95: ds[n*95/100], cpu: cpu / time.Duration(n), db: db / time.Duration(n)}, nil
}

// backendsCPU is the CPU time of the PostgreSQL backends serving this
// process's connections, by pid (nil on another engine): those whose
// client_port is the local port of one of the process's TCP sockets. The
// query that finds them counts too, once.
func backendsCPU(st *sqlstore.Store) map[int]time.Duration {
	if engine() != "PostgreSQL" {
		return nil
	}
	inodes := map[string]bool{}
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		if l, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var ports []string
	for _, name := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, _ := os.ReadFile(name)
		for i, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line) // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
			if i == 0 || len(f) < 10 || !inodes[f[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil {
				ports = append(ports, strconv.FormatInt(p, 10))
			}
		}
	}
	var pids []int
	if len(ports) == 0 || st.DB().NewRaw("SELECT pid FROM pg_stat_activity WHERE client_port IN ("+strings.Join(ports, ",")+")").Scan(context.Background(), &pids) != nil {
		return nil
	}
	out := map[int]time.Duration{}
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])) // f[0] is field 3
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		sy, _ := strconv.ParseInt(f[12], 10, 64)
		out[pid] = time.Duration(u+sy) * 10 * time.Millisecond // USER_HZ is 100
	}
	return out
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// base is the time of the first generated message; one follows each
// second.
var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// generate loads the messages unless the store has them, and returns the
// reader: a member of 50 conversations.
func generate(ctx context.Context, svc *messaging.Service, st *sqlstore.Store) (messaging.Contact, error) {
	reader, err := svc.SaveContact(ctx, messaging.Contact{Username: "reader"})
	if err != nil {
		return reader, err
	}
	if p, err := svc.Messages(ctx, reader, "", messaging.ListOptions{Limit: 1}); err != nil {
		return reader, err
	} else if len(p.Data) > 0 {
		return reader, nil // generated before
	}
	r := rand.New(rand.NewPCG(32, 32))
	var senders []messaging.Contact
	for i := range 100 {
		c, err := svc.SaveContact(ctx, messaging.Contact{Username: fmt.Sprintf("sender%03d", i)})
		if err != nil {
			return reader, err
		}
		senders = append(senders, c)
	}
	for _, c := range r.Perm(*convs)[:50] {
		if err := svc.AddMember(ctx, conv(c), reader.ID); err != nil {
			return reader, err
		}
	}
	vocab := make([]string, 20_000)
	for i := range vocab {
		n := 4 + r.IntN(5)
		b := make([]byte, n)
		for j := range b {
			b[j] = byte('a' + r.IntN(26))
		}
		vocab[i] = string(b)
	}
	zipf := rand.NewZipf(r, 1.1, 2, uint64(len(vocab)-1))
	start := time.Now()
	batch := make([]messaging.Message, 0, 5000)
	// Each batch of 5,000 messages goes to 50 conversations: a bulk
	// load's cost grows with the conversations of a batch (their
	// counters), and the messages of a conversation are still spread
	// over the whole time of the data.
	var batchConvs []int
	for i := range *messages {
		if len(batch) == 0 {
			batchConvs = batchConvs[:0]
			for range 50 {
				batchConvs = append(batchConvs, r.IntN(*convs))
			}
		}
		words := make([]string, 0, 8)
		for range 8 {
			words = append(words, vocab[zipf.Uint64()])
		}
		for _, w := range []struct {
			word string
			per  int // per 10,000 messages
		}{{"project", 500}, {"status", 1000}, {"projection", 100}, {"zanzibar", 1}} {
			if r.IntN(10_000) < w.per {
				words[r.IntN(len(words))] = w.word
			}
		}
		at := base.Add(time.Duration(i) * time.Second)
		batch = append(batch, messaging.Message{
			ID:             ids.NewAt(ids.Message, at),
			ConversationID: conv(batchConvs[r.IntN(len(batchConvs))]),
			Contact:        messaging.Contact{ID: senders[r.IntN(len(senders))].ID},
			Text:           strings.Join(words, " "),
			CreatedAt:      at,
		})
		if len(batch) == cap(batch) || i == *messages-1 {
			if err := svc.ImportMessages(ctx, batch); err != nil {
				return reader, err
			}
			batch = batch[:0]
		}
		if (i+1)%100_000 == 0 {
			fmt.Fprintf(os.Stderr, "%d messages in %s\n", i+1, time.Since(start).Round(time.Second))
		}
	}
	return reader, afterLoad(ctx, st)
}

// cleanGIN merges the pending lists of the GIN indexes of messages (the
// search indexes) into them, on PostgreSQL.
const cleanGIN = "SELECT gin_clean_pending_list(i.indexrelid) FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid " +
	"JOIN pg_am AS a ON a.oid = c.relam WHERE i.indrelid = 'messages'::regclass AND a.amname = 'gin'"

// afterLoad does what a host does after a bulk load, so that the figures
// are of the index as it serves: on PostgreSQL, ANALYZE (the planner's
// estimates of the new rows) and gin_clean_pending_list of the search
// indexes (a bulk load leaves its last inserts in GIN's pending list,
// which every search then reads in full); on MySQL/MariaDB, ANALYZE
// TABLE.
func afterLoad(ctx context.Context, st *sqlstore.Store) error {
	var qs []string
	switch engine() {
	case "PostgreSQL":
		qs = []string{"ANALYZE", cleanGIN}
	case "MySQL/MariaDB":
		qs = []string{"ANALYZE TABLE messages, conversations, conversation_members"}
	default:
		qs = []string{"ANALYZE"}
	}
	for _, q := range qs {
		start := time.Now()
		if _, err := st.DB().ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		fmt.Fprintf(os.Stderr, "%s: %s\n", q, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

func conv(i int) string { return fmt.Sprintf("conv%05d", i) }

// measureCreates times creates into two fresh stores, one with the search
// index and one without (dropped after Migrate), in alternating rounds. On
// SQLite, whose index is kept behind the sends, each round of the store
// with the index ends by indexing what its indexer has not yet.
func measureCreates(ctx context.Context) error {
	type side struct {
		name  string
		svc   *messaging.Service
		st    *sqlstore.Store
		total time.Duration
		cpu   time.Duration // the process's CPU time in its rounds
		db    time.Duration // PostgreSQL: its backends' CPU time in its rounds
		n     int
	}
	var sides []*side
	for _, withIndex := range []bool{true, false} {
		name := "with_index"
		if !withIndex {
			name = "without_index"
		}
		d := *dsn
		var sch string
		switch engine() {
		case "SQLite":
			d = strings.TrimSuffix(d, ".db") + "-" + name + ".db"
			*dsn, d = d, *dsn
			for _, suffix := range []string{"", "-wal", "-shm"} {
				os.Remove(*dsn + suffix)
			}
		case "PostgreSQL":
			sch = "searchbench_" + name
		}
		st, err := open(ctx, sch)
		*dsn = d
		if err != nil {
			return err
		}
		defer st.Close()
		if engine() == "PostgreSQL" {
			// GIN's pending list is merged into the index in the round
			// of the creates that filled it (below), not by autovacuum
			// in a process of its own, whose CPU is nobody's.
			if _, err := st.DB().ExecContext(ctx, "ALTER TABLE "+sch+".messages SET (autovacuum_enabled = off)"); err != nil {
				return err
			}
		}
		if !withIndex {
			drop := map[string][]string{
				// The index's triggers and its mark (with the trigger
				// that indexes when it moves): the indexer finds no mark.
				"SQLite": {"DROP TRIGGER messages_search_tail", "DROP TRIGGER messages_search_update",
					"DROP TRIGGER messages_search_delete", "DROP TABLE message_search_mark"},
				"PostgreSQL":    {"DROP INDEX " + sch + ".messages_search", "DROP INDEX IF EXISTS " + sch + ".messages_search_conversation"},
				"MySQL/MariaDB": {"ALTER TABLE messages DROP INDEX messages_search"},
			}[engine()]
			for _, q := range drop {
				if _, err := st.DB().ExecContext(ctx, q); err != nil {
					return fmt.Errorf("%s: %w", q, err)
				}
			}
		}
		svc, err := messaging.New(ctx, st, memstore.NewBlobStore(), nil)
		if err != nil {
			return err
		}
		defer svc.Close()
		sides = append(sides, &side{name: name, svc: svc, st: st})
	}
	r := rand.New(rand.NewPCG(1, 2))
	const rounds = 10
	for round := range rounds {
		order := sides
		if round%2 == 1 {
			order = []*side{sides[1], sides[0]}
		}
		for _, s := range order {
			who, err := s.svc.SaveContact(ctx, messaging.Contact{Username: "writer"})
			if err != nil {
				return err
			}
			start, cpu0, db0 := time.Now(), processCPU(), backendsCPU(s.st)
			for i := range *creates / rounds {
				text := fmt.Sprintf("project status %d: the projection for zanzibar, Straße café %d", i, r.IntN(1000))
				if _, err := s.svc.Create(ctx, who, messaging.NewMessage{ConversationID: conv(r.IntN(100)), Text: text}); err != nil {
					return err
				}
				s.n++
			}
			if s.name == "with_index" && engine() == "SQLite" {
				// What the indexer has not indexed yet is indexed now, in
				// the round of the creates that wrote it.
				if _, err := s.st.DB().ExecContext(ctx, "UPDATE message_search_mark SET seq = (SELECT MAX(seq) FROM messages) WHERE seq < (SELECT MAX(seq) FROM messages)"); err != nil {
					return err
				}
			}
			if s.name == "with_index" && engine() == "PostgreSQL" {
				// GIN's pending list is merged into the indexes now, in
				// the round of the creates that wrote it.
				if _, err := s.st.DB().ExecContext(ctx, cleanGIN); err != nil {
					return err
				}
			}
			s.total += time.Since(start)
			s.cpu += processCPU() - cpu0
			for pid, t := range backendsCPU(s.st) {
				s.db += t - db0[pid]
			}
		}
	}
	rate := func(s *side) float64 { return float64(s.n) / s.total.Seconds() }
	fmt.Printf("# %s creates, %d each, one at a time, %d alternating rounds\n", engine(), sides[0].n, rounds)
	for _, s := range sides {
		fmt.Printf("%s\t%.0f creates/s\t%.0f + %.0f µs CPU/create (process + backends)\n", s.name, rate(s),
			float64(s.cpu.Microseconds())/float64(s.n), float64(s.db.Microseconds())/float64(s.n))
	}
	fmt.Printf("with/without\t%.2f\t(by CPU time: %.2f)\n", rate(sides[0])/rate(sides[1]),
		float64(sides[1].cpu+sides[1].db)/float64(sides[0].cpu+sides[0].db))
	return nil
}

// processCPU returns the user and system CPU time of the process (on a
// PostgreSQL or MySQL store, the client's alone): steadier than the wall
// time on a shared machine.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
