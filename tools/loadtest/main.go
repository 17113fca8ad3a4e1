// Command loadtest puts a /v1 server under load over HTTP and measures it:
// requests per second, p50/p90/p99 latency and errors, per operation and for
// a realistic mix. With -compare it loads a second server the same way,
// alternating between the two round by round (A, B, A, B…), and prints the
// ratios A/B: the way to measure Parley's overhead against the bare floor
// of its stack (../shared/bench/floor), in one run on one machine.
//
// The load is bounded: -c connections (at most 1024) for -d (at most 5
// minutes) per run, after a -warmup that is not measured, for -rounds
// rounds (at most 20), an hour in all at most. Only loopback servers are
// loaded unless -allow-remote is given.
//
// # Operations (-ops)
//
//	list    GET  /v1/messages?conversation_id=CONV&limit=10        the first page
//	deep    GET  /v1/messages?conversation_id=CONV&limit=10&starting_after=ID
//	        a page -depth messages deep (ID found by paging, or -cursor)
//	get     GET  /v1/messages/ID          a message of CONV's latest 100
//	react   PUT  /v1/messages/ID          reactions[NAME][]=USER (form), and next
//	        DELETE /v1/messages/ID/reactions/NAME: every connection adds a
//	        reaction to CONV's newest message and takes it back, in turn
//	create  POST /v1/messages             conversation_id=CREATECONV&message=… (form)
//	upload  POST /v1/attachments          multipart, a file of -size bytes, streamed
//	mix     each request one of -mix, by weight (default list=60,create=20,get=10,react=10)
//
// Every request carries Authorization: Bearer TOKEN. An operation the server
// has no route for (the floor serves only POST and GET /v1/messages and POST
// /v1/attachments) is reported as not run; against the floor, pass a -mix of
// list and create only. Reads go to -conv, creates to -create-conv, so that
// the pages read stay the same from round to round.
//
// # Seeding
//
// -seed N stores N messages from -user in -conv of the database -db through
// the library (sqlstore's bulk load, not HTTP), creating the contact if
// needed, and exits. A million messages take seconds; the server may be
// running meanwhile.
//
// # Comparing Parley with the floor, on SQLite
//
// From the repository root, with the floor of ../shared/bench (see its
// README):
//
//	go build -o "$TMPDIR/parley" ./examples/server
//	go build -o "$TMPDIR/loadtest" ./tools/loadtest
//	(cd ../shared/bench/floor && go build -o "$TMPDIR/floor" .)
//
//	# The same conversation of 200,000 messages in each.
//	"$TMPDIR/loadtest" -seed 200000 -conv conv_big -user alice -db "$TMPDIR/parley.db"
//	"$TMPDIR/floor" -db sqlite -dsn "$TMPDIR/floor.db" -seed 200000 -seed-conv conv_big
//
//	# Parley as A on :8080 (token alice-secret by default), the floor as B on :8091.
//	"$TMPDIR/parley" -addr 127.0.0.1:8080 -data "$TMPDIR/parley-data" -db "$TMPDIR/parley.db" &
//	"$TMPDIR/floor" -db sqlite -dsn "$TMPDIR/floor.db" -files "$TMPDIR/floor-files" -addr 127.0.0.1:8091 &
//
//	"$TMPDIR/loadtest" -url http://127.0.0.1:8080 -compare http://127.0.0.1:8091 \
//		-ops list,create,deep,upload,mix -mix list=75,create=25 -c 32 -d 10s -rounds 3
//
//	# Parley alone, every operation and the default mix.
//	"$TMPDIR/loadtest" -url http://127.0.0.1:8080 -ops list,create,get,deep,react,mix
//
// On PostgreSQL, the same with a database of each:
//
//	createdb -h 127.0.0.1 -U postgres parley_load && createdb -h 127.0.0.1 -U postgres floor
//	"$TMPDIR/loadtest" -seed 200000 -conv conv_big -db 'postgres://postgres@127.0.0.1:5432/parley_load?sslmode=disable'
//	"$TMPDIR/floor" -db pg -dsn 'postgres://postgres@127.0.0.1:5432/floor?sslmode=disable' -seed 200000 -seed-conv conv_big
//	"$TMPDIR/parley" -addr 127.0.0.1:8080 -data "$TMPDIR/parley-data" -db 'postgres://postgres@127.0.0.1:5432/parley_load?sslmode=disable' &
//	"$TMPDIR/floor" -db pg -dsn 'postgres://postgres@127.0.0.1:5432/floor?sslmode=disable' -addr 127.0.0.1:8092 &
//	"$TMPDIR/loadtest" -url http://127.0.0.1:8080 -compare http://127.0.0.1:8092 -ops list,create,deep -rounds 3
//
// Client and servers share the machine's cores: quote the ratios of one
// run, not figures from different runs. Uploads write -size bytes to disk
// per request, gigabytes per run on a fast machine.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

// Bounds of the flags.
const (
	maxConns    = 1024
	maxDuration = 5 * time.Minute
	maxWarmup   = time.Minute
	maxRounds   = 20
	maxDepth    = 10_000_000
	maxSeed     = 100_000_000
	maxSize     = 4 << 30
)

// run parses args and seeds or loads.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	var (
		urlA        = fs.String("url", "http://127.0.0.1:8080", "base URL of the server to load (A), without /v1")
		urlB        = fs.String("compare", "", "base URL of a second server (B): run the same load against both, alternating rounds, and print A/B")
		token       = fs.String("token", "alice-secret", "bearer token for A")
		tokenB      = fs.String("token-b", "", "bearer token for B (default: -token)")
		user        = fs.String("user", "alice", "username of the token's caller: the reactor of react, and the sender of seeded messages")
		userB       = fs.String("user-b", "", "username of B's caller (default: -user)")
		conv        = fs.String("conv", "conv_big", "conversation read by list, deep, get and react; seeded by -seed")
		convB       = fs.String("conv-b", "", "conversation read on B (default: -conv)")
		createConv  = fs.String("create-conv", "conv_load", "conversation create and upload post to")
		cursor      = fs.String("cursor", "", "starting_after id of deep on A (default: found by paging -depth messages into -conv)")
		cursorB     = fs.String("cursor-b", "", "starting_after id of deep on B (default: found by paging)")
		depth       = fs.Int("depth", 10000, "how deep in -conv the page of deep is")
		opsFlag     = fs.String("ops", "list,create,get,deep,react,mix", "operations to run, in order: "+strings.Join(opNames, ","))
		mixFlag     = fs.String("mix", defaultMix, "operations of mix and their weights")
		conns       = fs.Int("c", 32, "connections (one goroutine each)")
		dur         = fs.Duration("d", 5*time.Second, "measured duration of each run (one op, one server, one round)")
		warmup      = fs.Duration("warmup", time.Second, "unmeasured warm-up before each run")
		rounds      = fs.Int("rounds", 2, "rounds of each op (A, B, A, B… with -compare)")
		size        = fs.Int64("size", 1<<20, "file size of upload, in bytes")
		timeout     = fs.Duration("timeout", 30*time.Second, "timeout of one request")
		allowRemote = fs.Bool("allow-remote", false, "allow servers that are not on a loopback address")
		seedN       = fs.Int("seed", 0, "store this many messages in -conv of -db through the library, then exit")
		dsn         = fs.String("db", "", "database of -seed: a SQLite file path, postgres://… or mysql://…")
	)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: loadtest [flags]\n       loadtest -seed N -db DSN [-conv X] [-user U]\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *seedN != 0 {
		switch {
		case *seedN < 0 || *seedN > maxSeed:
			return fmt.Errorf("-seed must be 1 to %d", maxSeed)
		case *dsn == "":
			return errors.New("-seed needs -db")
		case *conv == "":
			return errors.New("-seed needs -conv")
		}
		_, err := seed(ctx, *dsn, *conv, *user, *seedN, out)
		return err
	}

	cfg := loadConfig{
		Conns: *conns, Duration: *dur, Warmup: *warmup, Rounds: *rounds, Depth: *depth,
		UploadSize: *size, Timeout: *timeout, AllowRemote: *allowRemote, Out: out,
	}
	for o := range strings.SplitSeq(*opsFlag, ",") {
		o = strings.TrimSpace(o)
		if !slices.Contains(opNames, o) {
			return fmt.Errorf("-ops: unknown op %q (known: %s)", o, strings.Join(opNames, ", "))
		}
		if !slices.Contains(cfg.Ops, o) {
			cfg.Ops = append(cfg.Ops, o)
		}
	}
	var err error
	if cfg.Mix, err = parseMix(*mixFlag); err != nil {
		return err
	}
	switch {
	case cfg.Conns < 1 || cfg.Conns > maxConns:
		return fmt.Errorf("-c must be 1 to %d", maxConns)
	case cfg.Duration < 100*time.Millisecond || cfg.Duration > maxDuration:
		return fmt.Errorf("-d must be 100ms to %s", maxDuration)
	case cfg.Warmup < 0 || cfg.Warmup > maxWarmup:
		return fmt.Errorf("-warmup must be 0 to %s", maxWarmup)
	case cfg.Rounds < 1 || cfg.Rounds > maxRounds:
		return fmt.Errorf("-rounds must be 1 to %d", maxRounds)
	case cfg.Depth < 1 || cfg.Depth > maxDepth:
		return fmt.Errorf("-depth must be 1 to %d", maxDepth)
	case cfg.UploadSize < 0 || cfg.UploadSize > maxSize:
		return fmt.Errorf("-size must be 0 to %d", int64(maxSize))
	case cfg.Timeout <= 0:
		return errors.New("-timeout must be positive")
	}

	cfg.Targets = []targetConfig{{Name: "A", URL: *urlA, Token: *token, User: *user, Conv: *conv, CreateConv: *createConv, Cursor: *cursor}}
	if *urlB != "" {
		cfg.Targets = append(cfg.Targets, targetConfig{
			Name: "B", URL: *urlB, Token: or(*tokenB, *token), User: or(*userB, *user),
			Conv: or(*convB, *conv), CreateConv: *createConv, Cursor: *cursorB,
		})
	}
	_, err = runLoad(ctx, cfg)
	if err != nil && ctx.Err() != nil {
		return errInterrupted
	}
	return err
}

// or returns a, or b when a is "".
func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
