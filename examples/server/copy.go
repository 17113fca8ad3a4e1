package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/parleychat/parley/storage/blobstore"
	"github.com/parleychat/parley/storage/sqlstore"
	"github.com/parleychat/parley/storage/storecopy"
)

// runCopy is the copy command: it copies the database and files the
// server would use with the same -data, -db and -bucket to -to-db and
// -to-bucket, then verifies the copy; with -verify it only verifies. The
// report goes to stdout, progress and errors to stderr.
//
//	go run -tags cloud ./examples/server copy -to-db 'postgres://…' -to-bucket 's3://…'
func runCopy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("server copy", flag.ExitOnError)
	flags.SetOutput(stderr)
	flags.Usage = func() {
		fmt.Fprintf(stderr, "usage: server copy [-data DIR | -db DSN -bucket URL] -to-db DSN -to-bucket URL [-verify]\n\n"+
			"Copies every row and file of a Parley (the one the server runs with the same -data, -db and -bucket)\n"+
			"to another database and bucket, then verifies the copy. Run it again to resume an interrupted copy.\n\n")
		flags.PrintDefaults()
	}
	var (
		dataDir  = flags.String("data", "data", "folder of the source's default SQLite file and files folder")
		dsn      = flags.String("db", "", "source database: a SQLite file path, postgres://… or mysql://… (default: DATA/parley.db)")
		bucket   = flags.String("bucket", "", "source gocloud.dev bucket URL (default: DATA/files)")
		toDSN    = flags.String("to-db", "", "destination database: a SQLite file path, postgres://… or mysql://… (required); made if new, and must hold no other data")
		toBucket = flags.String("to-bucket", "", "destination gocloud.dev bucket URL, such as s3://bucket?region=… or file:///srv/parley/files (required); may be the source's bucket")
		verify   = flags.Bool("verify", false, "only compare the destination with the source (rows, counts and each file's SHA-256); change nothing")
		batch    = flags.Int("batch", 1000, "rows read and written at a time")
		workers  = flags.Int("workers", 8, "files copied at once")
		quiet    = flags.Bool("quiet", false, "print no progress")
	)
	_ = flags.Parse(args)
	if *toDSN == "" || *toBucket == "" {
		flags.Usage()
		return errors.New("copy: -to-db and -to-bucket are required")
	}
	if err := checkDSN(*dsn); err != nil {
		return err
	}
	if err := checkDSN(*toDSN); err != nil {
		return errors.New(strings.Replace(err.Error(), "-db", "-to-db", 1)) // same words, right flag
	}
	if err := checkBucket("-bucket", *bucket); err != nil {
		return err
	}
	if err := checkBucket("-to-bucket", *toBucket); err != nil {
		return err
	}
	if *dsn == "" {
		*dsn = filepath.Join(*dataDir, "parley.db")
	}
	if *bucket == "" {
		abs, err := filepath.Abs(filepath.Join(*dataDir, "files"))
		if err != nil {
			return err
		}
		*bucket = (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: "metadata=skip"}).String()
	}
	if sameDatabase(*dsn, *toDSN) {
		return fmt.Errorf("copy: -to-db names the source database %s: name another database to copy to", redact(*toDSN))
	}
	// The source is read only: a SQLite file that does not exist is a
	// mistyped path, never a database to make.
	if isNewSQLite(*dsn) {
		return fmt.Errorf("copy: no source database at %s: pass the server's -data, or -db", sqlitePath(*dsn))
	}
	src, err := sqlstore.Open(ctx, readOnly(*dsn), nil)
	if err != nil {
		return openDatabaseError(*dsn, err)
	}
	defer src.Close()
	srcFiles, err := blobstore.Open(ctx, *bucket)
	if err != nil {
		return fmt.Errorf("open the source bucket -bucket %s: %w", redact(*bucket), err)
	}
	defer srcFiles.Close()

	if *verify && isNewSQLite(*toDSN) {
		return fmt.Errorf("copy -verify: no destination database at %s", sqlitePath(*toDSN))
	}
	if !*verify { // a verification writes nothing, not even a folder
		if err := makeFolder(*toBucket); err != nil {
			return err
		}
	}
	openDst := *toDSN
	if *verify {
		openDst = readOnly(*toDSN)
	}
	dst, err := sqlstore.Open(ctx, openDst, &sqlstore.Options{Logger: slog.New(slog.NewTextHandler(stderr, nil))})
	if err != nil {
		return fmt.Errorf("-to-db: %w", openDatabaseError(*toDSN, err))
	}
	defer dst.Close()
	if !*verify {
		// The destination's schema is made (or brought up to date) first.
		if err := dst.Migrate(ctx); err != nil {
			return fmt.Errorf("migrate the destination database %s: %w", redact(*toDSN), err)
		}
	}
	dstFiles, err := blobstore.Open(ctx, *toBucket)
	if err != nil {
		return fmt.Errorf("open the destination bucket -to-bucket %s: %w", redact(*toBucket), err)
	}
	defer dstFiles.Close()

	fmt.Fprintf(stderr, "copy: from %s and %s\n      to   %s and %s\n", redact(*dsn), redact(*bucket), redact(*toDSN), redact(*toBucket))
	opts := &storecopy.Options{BatchSize: *batch, FileWorkers: *workers}
	if !*quiet {
		opts.Progress = newProgressPrinter(stderr).print
	}
	var rep storecopy.Report
	if *verify {
		rep, err = storecopy.Verify(ctx, dst, dstFiles, src, srcFiles, opts)
	} else {
		rep, err = storecopy.Copy(ctx, dst, dstFiles, src, srcFiles, opts)
	}
	printReport(stdout, rep, *verify)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("copy interrupted: run the same command again to resume: %w", err)
		}
		return err
	}
	return nil
}

// readOnly returns dsn, when it names a SQLite file, as a DSN that opens
// it read-only (mode=ro): the copy never writes to its source, nor -verify
// to its destination, not even the journal mode that opening the file as
// the server does sets. Other DSNs are returned as they are: what the copy
// reads of them, it reads in a read-only transaction.
func readOnly(dsn string) string {
	if sqlitePath(dsn) == "" {
		return dsn
	}
	file, query, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	params := []string{"mode=ro"}
	for _, p := range strings.Split(query, "&") {
		if p != "" && !strings.HasPrefix(strings.ToLower(p), "mode=") {
			params = append(params, p)
		}
	}
	return "file:" + file + "?" + strings.Join(params, "&")
}

// sameDatabase reports whether two DSNs name the same database: the same
// text, or the same SQLite file.
func sameDatabase(a, b string) bool {
	if a == b {
		return true
	}
	pa, pb := sqlitePath(a), sqlitePath(b)
	if pa == "" || pb == "" {
		return false
	}
	absA, errA := filepath.Abs(pa)
	absB, errB := filepath.Abs(pb)
	return errA == nil && errB == nil && absA == absB
}

// makeFolder makes the folder of a file:// bucket URL, so that a new
// folder can be named as the destination.
func makeFolder(bucketURL string) error {
	u, err := url.Parse(bucketURL)
	if err != nil || u.Scheme != "file" {
		return nil
	}
	if err := os.MkdirAll(filepath.FromSlash(u.Path), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("make the destination folder of -to-bucket %s: %w", redact(bucketURL), err)
	}
	return nil
}

// printReport prints what the copy (or verification) found.
func printReport(w io.Writer, rep storecopy.Report, verifyOnly bool) {
	if len(rep.Rows) == 0 {
		return
	}
	var parts []string
	for _, k := range storecopy.Kinds() {
		parts = append(parts, fmt.Sprintf("%d %s", rep.Rows[k], k))
	}
	fmt.Fprintf(w, "rows:  %s\n", strings.Join(parts, ", "))
	if verifyOnly {
		fmt.Fprintf(w, "files: %d, compared by SHA-256 on both sides\n", rep.Files)
	} else {
		fmt.Fprintf(w, "files: %d (%d copied, %s; %d already in place)\n", rep.Files, rep.Copied, bytesOf(rep.Bytes), rep.Files-rep.Copied)
	}
	if rep.Verified {
		fmt.Fprintf(w, "verified: every row and file of the destination equals the source's (%s)\n", rep.Took.Round(time.Millisecond))
	}
}

// bytesOf shows n bytes in a readable unit.
func bytesOf(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// progressPrinter shows storecopy's progress: on a terminal, one line
// redrawn in place with a bar; elsewhere (a pipe, a log), plain lines.
type progressPrinter struct {
	w        io.Writer
	terminal bool
}

func newProgressPrinter(w io.Writer) *progressPrinter {
	p := &progressPrinter{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

func (p *progressPrinter) print(pr storecopy.Progress) {
	done, total, unit := pr.Rows, pr.RowsTotal, "rows"
	if pr.Stage == storecopy.StageFiles || (pr.Stage == storecopy.StageVerify && pr.FilesTotal > 0) {
		done, total, unit = pr.Files, pr.FilesTotal, "files"
	}
	if total == 0 {
		return // nothing of this kind
	}
	secs := max(pr.Elapsed.Seconds(), 0.001)
	rate := float64(done) / secs
	what := pr.Kind.String()
	if unit == "files" {
		what = "files"
	}
	line := fmt.Sprintf("%-6s %-16s %d/%d %s, %.0f %s/s", pr.Stage, what, done, total, unit, rate, unit)
	if unit == "files" {
		line += fmt.Sprintf(", %s (%s/s)", bytesOf(pr.Bytes), bytesOf(int64(float64(pr.Bytes)/secs)))
	}
	if !pr.Done && rate > 0 && total > done {
		line += fmt.Sprintf(", %s left", (time.Duration(float64(total-done)/rate) * time.Second).Round(time.Second))
	}
	if !p.terminal {
		fmt.Fprintln(p.w, "copy:", line)
		return
	}
	const width = 24
	filled := width
	if total > 0 {
		filled = int(int64(width) * min(done, total) / total)
	}
	bar := strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
	end := ""
	if pr.Done {
		end = "\n"
	}
	fmt.Fprintf(p.w, "\r\033[K%s %s%s", bar, line, end)
}
