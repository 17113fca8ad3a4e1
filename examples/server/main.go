// Command server runs Parley's /v1 API as a standalone HTTP server.
//
// With no flags it keeps everything under ./data (a SQLite database and a
// folder of files), listens on 127.0.0.1:8080 and prints how to call it:
//
//	go run ./examples/server
//
// Flags choose the database (-db: a SQLite path, postgres://… or mysql://…),
// the bucket (-bucket: a gocloud.dev bucket URL; s3://, gs:// and azblob://
// need the build tag cloud: go run -tags cloud ./examples/server), the
// tokens, the upload limit, the public base URL or the host names it
// answers to (-hosts), a rate limit per caller (-rate), and how events
// reach the other instances (-pubsub: a gocloud.dev topic URL, such as
// nats://subject with NATS_SERVER_URL set). Run with -h for all.
//
// The subcommand copy moves the Parley that the same -data, -db and
// -bucket name to another database and bucket, resumably, and verifies
// the copy (see storage/storecopy):
//
//	go run -tags cloud ./examples/server copy -to-db 'postgres://…' -to-bucket 's3://…'
//
// The program is written to be read: each step is one of the few lines a
// host application needs to embed Parley.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"gocloud.dev/pubsub"

	// The drivers this server can use, each registering its DSN, bucket or
	// topic URL scheme: a host imports only those it needs (SQLite and a
	// folder need neither the PostgreSQL and MySQL drivers nor the AWS SDK;
	// Parley's packages link none). The cloud buckets' (s3://, gs://,
	// azblob://) come with the build tag cloud: see cloud.go.
	_ "gocloud.dev/blob/fileblob"     // file:// buckets
	_ "gocloud.dev/blob/memblob"      // mem:// buckets
	_ "gocloud.dev/pubsub/mempubsub"  // mem:// topics (-pubsub, one process)
	_ "gocloud.dev/pubsub/natspubsub" // nats:// topics (-pubsub, with NATS_SERVER_URL)

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/events"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/internal/eventstest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/blobstore"
	"github.com/parleychat/parley/storage/sqlstore"
	_ "github.com/parleychat/parley/storage/sqlstore/mysql"    // mysql://… databases
	_ "github.com/parleychat/parley/storage/sqlstore/postgres" // postgres://… databases
	_ "github.com/parleychat/parley/storage/sqlstore/sqlite"   // SQLite files
)

// defaultTokens are the demo callers of a server started with no -tokens.
const defaultTokens = "alice=alice-secret,bob=bob-secret"

func main() {
	// Stop on SIGINT or SIGTERM: the server finishes the requests under way.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == "copy" {
		// server copy: move this Parley to another database and bucket.
		if err := runCopy(ctx, os.Args[2:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "server copy:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// run is the server: it parses args, serves until ctx is done, and writes
// the greeting to stdout and the log to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("server", flag.ExitOnError)
	flags.SetOutput(stderr)
	flags.Usage = func() { usage(stderr, flags) } // lists the subcommands too
	var (
		addr      = flags.String("addr", "127.0.0.1:8080", "address to listen on")
		dataDir   = flags.String("data", "data", "folder for the default SQLite file and files folder")
		dsn       = flags.String("db", "", "database: a SQLite file path, postgres://… or mysql://… (default: DATA/parley.db)")
		bucketURL = flags.String("bucket", "", "gocloud.dev bucket URL for files, such as file:///srv/files or s3://bucket?region=… (s3://, gs://, azblob:// need a build with -tags cloud; default: DATA/files)")
		tokens    = flags.String("tokens", os.Getenv("PARLEY_TOKENS"), `bearer tokens as "user=token,user2=token2" (also PARLEY_TOKENS; default `+defaultTokens+`)`)
		maxUpload = flags.Int64("max-upload-bytes", 25<<20, "largest accepted upload, in bytes")
		quota     = flags.Int64("upload-quota", 0, "most bytes the files each caller uploaded may hold at once (0: no quota)")
		grace     = flags.Duration("orphan-grace", time.Hour, "how old a file of this server's with no row must be before reconcile (at start, then every 5 minutes) moves it aside")
		baseURL   = flags.String("base-url", "", "public URL of this server, used in file_url and Location (default: from each request)")
		hosts     = flags.String("hosts", "", `without -base-url, the host names this server answers to, as "chat.example.com,alt.example.com" (with the port if not the scheme's): a request for another Host gets file_url and Location of the first (default: every Host as it comes)`)
		perSecond = flags.Float64("rate", 0, "requests a second each caller may make, and each client address with refused credentials (0: no limit)")
		burst     = flags.Int("burst", 20, "with -rate, the requests a caller may make at once beyond the rate")
		signed    = flags.Duration("signed-urls", 0, "when > 0 and the bucket can sign URLs (S3, GCS, Azure), file_url is a signed bucket URL valid this long")
		redirect  = flags.Duration("redirect-downloads", 0, "when > 0 and the bucket can sign URLs, a download from the API's file route answers 302 to a signed bucket URL valid this long")
		pubsubURL = flags.String("pubsub", "", "gocloud.dev pub/sub topic URL that wakes the other instances on the same database after each write, such as nats://parley-events (with NATS_SERVER_URL); default: none, one instance delivers its events in process")
		retention = flags.Duration("event-retention", 24*time.Hour, "how long events are kept for clients that resume")
		poll      = flags.Duration("event-poll", time.Second, "how often the outbox is read when nothing woke this instance")
		eventLog  = flags.String("event-log", "", "append every event to this file as a JSON line (a host-side handler, run after commit)")
		hold      = flags.Bool("hold-events", false, "record events but deliver none (for tests of recovery after a crash)")
	)
	_ = flags.Parse(args) // on an error, ExitOnError has printed it and exited
	log := slog.New(slog.NewTextHandler(stderr, nil))

	// 1. Listen first: an address in use fails before storage is touched.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on -addr %s: %w (is another server using it? stop it or choose another -addr)", *addr, err)
	}
	defer ln.Close()

	// 2. Storage: rows in SQL, bytes in a bucket. The defaults live in -data.
	if err := checkDSN(*dsn); err != nil {
		return err
	}
	if err := checkBucket("-bucket", *bucketURL); err != nil {
		return err // s3://, gs://, azblob:// without -tags cloud
	}
	defaultFiles := *bucketURL == ""
	if *dsn == "" || defaultFiles {
		if err := os.MkdirAll(filepath.Join(*dataDir, "files"), 0o755); err != nil {
			return fmt.Errorf("make the -data folder: %w", err)
		}
	}
	if *dsn == "" {
		*dsn = filepath.Join(*dataDir, "parley.db")
	}
	if defaultFiles {
		abs, err := filepath.Abs(filepath.Join(*dataDir, "files"))
		if err != nil {
			return err
		}
		// metadata=skip: the rows keep each file's type, size and hash, so
		// the sidecar files (and the MD5 fileblob computes for them) are
		// waste. no_tmp_dir: write temporary files beside the final ones, so
		// the rename that completes a write never crosses file systems; one
		// a crash leaves behind is removed by Reconcile.
		*bucketURL = (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: "metadata=skip&no_tmp_dir=true"}).String()
		// A new SQLite file beside a folder of files is a mistyped -db, or
		// a -data that holds another database's files: refuse.
		if err := refuseNewSQLiteOverFiles(*dsn, abs); err != nil {
			return err
		}
	}
	newSQLite := isNewSQLite(*dsn)
	store, err := sqlstore.Open(ctx, *dsn, &sqlstore.Options{Logger: log})
	if err != nil {
		return openDatabaseError(*dsn, err)
	}
	defer store.Close()
	// The schema is created or upgraded at start; concurrent starts are safe.
	if err := store.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate the database %s: %w", redact(*dsn), err)
	}
	blobs, err := blobstore.Open(ctx, *bucketURL)
	if err != nil {
		return fmt.Errorf("open the bucket -bucket %s: %w", redact(*bucketURL), err)
	}
	defer blobs.Close()

	// 3. The services: every rule of the API lives here, whatever the backend.
	// They keep the answers of writes sent with an Idempotency-Key in the
	// same database as the data (so a retry after a restart replays), and
	// prune them after 24 hours on their own. Every change is recorded
	// with its events in its transaction, and the events Feed delivers
	// them after the commit, to /v1/events and to the handlers. With
	// -pubsub, a write here wakes the Feeds of the other instances (and
	// theirs wake this one); without it, this instance delivers what is
	// written through it at once and reads the outbox every -event-poll
	// for the rest.
	feedOpts := &events.Options{Retention: *retention, PollInterval: *poll, Logger: log}
	if *pubsubURL != "" {
		topic, err := pubsub.OpenTopic(ctx, *pubsubURL)
		if err != nil {
			return fmt.Errorf("open pub/sub topic: %w", err)
		}
		defer topic.Shutdown(context.Background())
		sub, err := pubsub.OpenSubscription(ctx, *pubsubURL)
		if err != nil {
			return fmt.Errorf("open pub/sub subscription: %w", err)
		}
		defer sub.Shutdown(context.Background())
		feedOpts.Topic, feedOpts.Subscription = topic, sub
	}
	start := ctx
	if *hold {
		start = eventstest.WithGate(ctx, eventstest.Hold)
	}
	msgs, err := messaging.New(start, store, blobs, &messaging.Options{Logger: log,
		Files:  &attachments.Options{MaxUploadBytes: *maxUpload, UploadQuota: *quota, OrphanGrace: *grace, Logger: log},
		Events: feedOpts,
	})
	if err != nil {
		return fmt.Errorf("start the services: %w", err)
	}
	defer msgs.Close() // first of the deferred closes: before the store's
	files, feed := msgs.Files(), msgs.Events()
	// 4. The bucket must be this database's: a new database, or another
	// one, over the same files refuses to start rather than touch them.
	if err := files.Claim(ctx); err != nil {
		if newSQLite {
			_ = msgs.Close()
			removeSQLite(store, *dsn) // leave no empty database behind
		}
		return fmt.Errorf("the files at %s: %w", redact(*bucketURL), err)
	}
	if *eventLog != "" {
		// A host-side handler: after the commit, at least once, in order,
		// resumed after a restart from its stored position.
		f, err := os.OpenFile(*eventLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("open event log: %w", err)
		}
		defer f.Close()
		if err := feed.Handle(ctx, "event-log", logEvents(f)); err != nil {
			return err
		}
	}

	// 5. Callers: a static token table. A host plugs in its own Authenticator,
	// which sees the whole request (a session cookie, an API key, a token).
	if *tokens == "" {
		*tokens = defaultTokens
	}
	table, err := contacts(ctx, msgs, *tokens)
	if err != nil {
		return err
	}

	// 6. The HTTP adapter, mounted at the root of this server's mux. URLs in
	// answers (file_url, Location) are built from -base-url, or from the
	// request's Host when it is one of -hosts. -rate throttles callers, and
	// token guessing by client address.
	auth := httpadapter.StaticTokens(table)
	opts := &httpadapter.Options{
		Authenticator:          auth,
		BaseURL:                *baseURL,
		Hosts:                  splitList(*hosts),
		SignedURLExpiry:        *signed,
		DownloadRedirectExpiry: *redirect,
		Events:                 true,
		Logger:                 log,
	}
	var limit func(*http.Request, messaging.Contact) (time.Duration, bool)
	if lim := newLimiter(*perSecond, *burst); lim != nil {
		limit = lim.Limit
		opts.Limit = limit
	}
	api, err := httpadapter.New(msgs, opts)
	if err != nil {
		return fmt.Errorf("-base-url or -hosts: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", api)
	// The chat page at /, for people; it may send files to the bucket.
	var origins []string
	if o := uploadOrigin(ctx, blobs); o != "" {
		origins = append(origins, o)
	}
	mountChat(mux, auth, limit, origins...)
	// A path with . or .. segments or // goes to the API, which answers
	// 404 as for any unknown path, rather than to the mux, which would
	// redirect to the cleaned path before anyone is authenticated.
	srv := newHTTPServer(uncleanToAPI(mux, api), log, defaultLimits)

	// 7. Reconcile files left behind by failures, now and every five minutes.
	// However run returns, the loop is stopped and waited for first, so it
	// never works on the database and bucket the deferred Closes above close.
	reconcileCtx, stopReconcile := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { reconcile(reconcileCtx, files, log) })
	defer func() {
		stopReconcile()
		wg.Wait()
	}()

	greet(stdout, ln.Addr().String(), *baseURL, redact(*dsn), redact(*bucketURL), table, *tokens == defaultTokens)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	// Shutdown waits for the requests under way; the event streams end
	// by themselves as it begins (the handler registered with srv), and
	// the Feed closes after, with the deferred closes.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// splitList splits a comma-separated flag value, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// uncleanToAPI serves with api the requests whose path is not in
// canonical form (. or .. segments, //), and the others with mux.
func uncleanToAPI(mux *http.ServeMux, api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p != "" && !isClean(p) {
			api.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// isClean reports whether p is in canonical form, as path.Clean makes it
// (keeping a trailing slash).
func isClean(p string) bool {
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}

// contacts makes (or finds) a contact for each "user=token" pair and returns
// the token table.
func contacts(ctx context.Context, msgs *messaging.Service, spec string) (map[string]messaging.Contact, error) {
	table := map[string]messaging.Contact{}
	for pair := range strings.SplitSeq(spec, ",") {
		user, token, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || user == "" || token == "" {
			return nil, fmt.Errorf(`bad token pair %q: want "user=token"`, pair)
		}
		c, err := msgs.SaveContact(ctx, messaging.Contact{Username: user})
		if err != nil {
			return nil, fmt.Errorf("contact %q: %w", user, err)
		}
		table[token] = c
	}
	return table, nil
}

func reconcile(ctx context.Context, files *attachments.Service, log *slog.Logger) {
	t := time.NewTicker(5 * time.Minute)
	defer t.Stop()
	for {
		rep, err := files.Reconcile(ctx)
		attrs := []any{"deleted", rep.Deleted, "orphans_moved_aside", rep.Orphans, "purged", rep.Purged,
			"unowned", rep.Unowned, "missing", rep.Missing, "failed", rep.Failed}
		switch {
		case err != nil && ctx.Err() != nil:
		case messaging.KindOf(err) == messaging.ErrConflict:
			log.Error("reconcile: objects without a row were left alone", append(attrs, "err", err)...)
		case err != nil:
			log.Warn("reconcile", append(attrs, "err", err)...)
		default:
			log.Info("reconcile", attrs...)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// hidden replaces a secret in what redact prints.
const hidden = "xxxxx"

// redact hides the secrets of a database DSN or bucket URL before it is
// printed: the password of a URL ("postgres://user:pw@host/db") or of a
// MySQL driver-form DSN ("user:pw@tcp(host:3306)/db"), and the value of
// every query parameter whose name says it is a secret ("?password=…",
// "sslpassword", "secret_key", "token", …). A URL that does not parse is
// shown as its scheme only.
func redact(dsn string) string {
	if scheme, _, ok := strings.Cut(dsn, "://"); ok && !strings.ContainsAny(scheme, "/@?") {
		u, err := url.Parse(dsn)
		if err != nil {
			return scheme + "://(hidden: does not parse)"
		}
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), hidden)
		}
		u.RawQuery = redactQuery(u.RawQuery)
		return u.String()
	}
	if strings.HasPrefix(dsn, "file:") {
		path, query, ok := strings.Cut(dsn, "?")
		if !ok {
			return dsn
		}
		return path + "?" + redactQuery(query)
	}
	// The MySQL driver's form, [user[:password]@][net[(addr)]]/db[?params]:
	// as the driver reads it, the database name follows the last "/", and
	// the user and password come before the last "@" ahead of it; the
	// password runs from the first ":" of those to that "@".
	head, tail := dsn, ""
	if i := strings.LastIndexByte(dsn, '/'); i >= 0 {
		head, tail = dsn[:i], dsn[i:]
	}
	if at := strings.LastIndexByte(head, '@'); at >= 0 {
		if colon := strings.IndexByte(head[:at], ':'); colon >= 0 {
			head = head[:colon+1] + hidden + head[at:]
		}
	}
	if db, query, ok := strings.Cut(tail, "?"); ok {
		tail = db + "?" + redactQuery(query)
	}
	return head + tail
}

// redactQuery hides the values of the secret parameters of a raw query,
// leaving the rest as it is.
func redactQuery(raw string) string {
	if raw == "" {
		return raw
	}
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		k, _, _ := strings.Cut(p, "=")
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		if secretParam(name) {
			parts[i] = k + "=" + hidden
		}
	}
	return strings.Join(parts, "&")
}

// secretParam reports whether a query parameter of this name carries a
// secret (password, passwd, pwd, sslpassword, secret_key, token, …).
func secretParam(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"pass", "pwd", "secret", "token", "credential", "apikey", "api_key", "access_key"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// greet prints where the server listens and how to call it. The tokens
// are printed only when they are the demo ones (showTokens): those a host
// passed in are its secrets.
func greet(w io.Writer, addr, baseURL, dsn, bucket string, table map[string]messaging.Contact, showTokens bool) {
	base := baseURL
	if base == "" {
		base = "http://" + addr
	}
	var pairs []string
	var first string
	for token, c := range table {
		shown := token
		if !showTokens {
			shown = "<the token of " + c.Username + ">"
		}
		pairs = append(pairs, fmt.Sprintf("  %-10s Authorization: Bearer %s", c.Username, shown))
	}
	sort.Strings(pairs)
	for token, c := range table {
		if first == "" || c.Username < table[first].Username {
			first = token
		}
	}
	if !showTokens {
		first = "<the token of " + table[first].Username + ">"
	}
	fmt.Fprintf(w, "Parley is listening on %s\n  database: %s\n  files:    %s\ncallers:\n%s\ntry:\n  curl -s -H 'Authorization: Bearer %s' -d conversation_id=general -d message=hello %s/v1/messages\n  curl -s -H 'Authorization: Bearer %s' '%s/v1/messages?conversation_id=general'\n  curl -N -H 'Authorization: Bearer %s' -H 'Accept: text/event-stream' %s/v1/events\n",
		base, dsn, bucket, strings.Join(pairs, "\n"), first, base, first, base, first, base)
	fmt.Fprintf(w, "or chat in a browser: open %s/ and sign in with a token\n", base)
}

// logEvents returns the handler of -event-log: each event as a JSON line
// (id, type, conversation, time, and the id of its object).
func logEvents(w io.Writer) events.Handler {
	return func(_ context.Context, e messaging.Event) error {
		line := struct {
			ID             string `json:"id"`
			Type           string `json:"type"`
			ConversationID string `json:"conversation_id,omitempty"`
			Created        int64  `json:"created"`
			Object         string `json:"object_id,omitempty"`
		}{ID: e.ID, Type: string(e.Type), ConversationID: e.ConversationID, Created: e.Created.Unix(), Object: e.DeletedID}
		switch {
		case e.Message != nil:
			line.Object = e.Message.ID
		case e.Attachment != nil:
			line.Object = e.Attachment.ID
		case e.Conversation != nil:
			line.Object = e.Conversation.ID
		}
		b, err := json.Marshal(line)
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
}
