package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/parleychat/parley/storage/sqlstore"
)

// This file holds the checks that make a mistake at start fail with a
// message that names the thing at fault and what to do, before anything is
// created or changed.

// checkDSN refuses a -db value that looks like a URL of an engine Parley
// does not speak ("postgress://…", "sqlite://…"), which would otherwise
// become the path of a new SQLite file.
func checkDSN(dsn string) error {
	scheme, _, ok := strings.Cut(dsn, "://")
	if !ok || strings.ContainsAny(scheme, "/\\@?") {
		return nil
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql", "mysql":
		return nil
	}
	return fmt.Errorf("-db %q: unknown database scheme %q: use a SQLite file path (such as data/parley.db), postgres://… or mysql://…", redact(dsn), scheme)
}

// sqlitePath returns the file of a SQLite DSN, or "" for another engine or
// an in-memory database.
func sqlitePath(dsn string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") || strings.HasPrefix(dsn, "mysql://") ||
		strings.Contains(dsn, "@tcp(") || strings.Contains(dsn, "@unix(") {
		return ""
	}
	path := strings.TrimPrefix(dsn, "file:")
	path, _, _ = strings.Cut(path, "?")
	if path == "" || path == ":memory:" || strings.Contains(dsn, "mode=memory") {
		return ""
	}
	return path
}

// isNewSQLite reports whether dsn is a SQLite file that does not exist yet.
func isNewSQLite(dsn string) bool {
	path := sqlitePath(dsn)
	if path == "" {
		return false
	}
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// refuseNewSQLiteOverFiles fails when dsn is a SQLite file that does not
// exist yet while the files folder already holds attachments: a new,
// empty database would not know them.
func refuseNewSQLiteOverFiles(dsn, filesDir string) error {
	if !isNewSQLite(dsn) {
		return nil
	}
	n := 0
	errFound := errors.New("found")
	err := filepath.WalkDir(filepath.Join(filesDir, "attachments"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			n++
			return errFound
		}
		return nil
	})
	if n == 0 || (err != nil && !errors.Is(err, errFound)) {
		return nil
	}
	return fmt.Errorf("refusing to create a new database %s: the files folder %s already holds the files of another database, "+
		"which a new one would not know. Pass the database that owns them with -db (with -data %s the default is %s), "+
		"or a new folder with -data", sqlitePath(dsn), filesDir, filepath.Dir(filesDir), filepath.Join(filepath.Dir(filesDir), "parley.db"))
}

// removeSQLite closes store and removes the SQLite file that this run
// created for it.
func removeSQLite(store *sqlstore.Store, dsn string) {
	_ = store.Close()
	path := sqlitePath(dsn)
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		_ = os.Remove(path + suffix)
	}
}

// openDatabaseError says which database could not be opened, and for a
// SQLite file, why, when its folder says so.
func openDatabaseError(dsn string, err error) error {
	path := sqlitePath(dsn)
	if path == "" {
		return fmt.Errorf("open the database -db %s: %w", redact(dsn), err)
	}
	dir := filepath.Dir(path)
	hint := ""
	switch st, serr := os.Stat(dir); {
	case errors.Is(serr, fs.ErrNotExist):
		hint = ": its folder " + dir + " does not exist"
	case serr != nil:
		hint = ": its folder " + dir + " cannot be read (" + serr.Error() + ")"
	case !st.IsDir():
		hint = ": " + dir + " is not a folder"
	default:
		if f, ferr := os.OpenFile(path, os.O_RDWR, 0); ferr == nil {
			f.Close()
		} else if !errors.Is(ferr, fs.ErrNotExist) {
			hint = ": " + ferr.Error()
		}
	}
	if hint != "" {
		// SQLite's own words for this ("unable to open database file: out
		// of memory (14)") mislead: say what is wrong instead.
		return fmt.Errorf("cannot open the SQLite database %s%s: fix the -db path or the -data folder", path, hint)
	}
	return fmt.Errorf("cannot open the SQLite database %s (check the path and that this user may read and write it): %w", path, err)
}
