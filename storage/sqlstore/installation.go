package sqlstore

import (
	"context"
	"errors"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging/driver"
)

var (
	_ driver.Installation = (*Store)(nil)
	_ driver.KeyLister    = (*Store)(nil)
)

// installationVersion gives the database its identity: one row (one = 1)
// holding a random installation id, made when the version is applied, and
// the reconcile epoch (see driver.Installation). A repeated run on
// MySQL (which cannot roll DDL back) keeps the row that exists.
var installationVersion = version{
	Name:    "20261123000004",
	Comment: "installation",
	SQL: map[flavor][]string{
		flavorSQLite: {
			`CREATE TABLE IF NOT EXISTS parley_installation (
				one INTEGER PRIMARY KEY NOT NULL CHECK (one = 1),
				id TEXT NOT NULL,
				epoch INTEGER NOT NULL DEFAULT 0,
				created_at TIMESTAMP NOT NULL)`,
			`INSERT INTO parley_installation (one, id, epoch, created_at)
				VALUES (1, 'ins_' || lower(hex(randomblob(16))), 0, strftime('%Y-%m-%d %H:%M:%f', 'now'))
				ON CONFLICT (one) DO NOTHING`,
		},
		flavorPostgres: {
			`CREATE TABLE IF NOT EXISTS parley_installation (
				one integer PRIMARY KEY CHECK (one = 1),
				id text COLLATE "C" NOT NULL,
				epoch bigint NOT NULL DEFAULT 0,
				created_at timestamptz NOT NULL)`,
			`INSERT INTO parley_installation (one, id, epoch, created_at)
				VALUES (1, 'ins_' || replace(gen_random_uuid()::text, '-', ''), 0, now())
				ON CONFLICT (one) DO NOTHING`,
		},
		flavorMySQL: {
			`CREATE TABLE IF NOT EXISTS parley_installation (
				one INT NOT NULL PRIMARY KEY,
				id VARCHAR(64) NOT NULL,
				epoch BIGINT NOT NULL DEFAULT 0,
				created_at DATETIME(6) NOT NULL
			) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
			`INSERT IGNORE INTO parley_installation (one, id, epoch, created_at)
				VALUES (1, CONCAT('ins_', LEFT(SHA2(CONCAT(UUID(), RAND(), SYSDATE(6)), 256), 32)), 0, UTC_TIMESTAMP(6))`,
		},
	},
}

// errNoInstallation: the schema is older than the installation version.
var errNoInstallation = errors.New("the database has no installation row: run Migrate")

// InstallationID returns the database's installation id, made by Migrate.
func (s *Store) InstallationID(ctx context.Context) (string, error) {
	var ids []string
	if err := s.w.NewRaw("SELECT id FROM parley_installation WHERE one = 1").Scan(ctx, &ids); err != nil {
		return "", wrapErr("sqlstore.InstallationID", err)
	}
	if len(ids) == 0 {
		return "", wrapErr("sqlstore.InstallationID", errNoInstallation)
	}
	return ids[0], nil
}

// Epoch returns the database's reconcile epoch.
func (s *Store) Epoch(ctx context.Context) (int64, error) {
	e, err := s.epoch(ctx, s.w)
	return e, wrapErr("sqlstore.Epoch", err)
}

func (s *Store) epoch(ctx context.Context, db bun.IDB) (int64, error) {
	var es []int64
	if err := db.NewRaw("SELECT epoch FROM parley_installation WHERE one = 1").Scan(ctx, &es); err != nil {
		return 0, err
	}
	if len(es) == 0 {
		return 0, errNoInstallation
	}
	return es[0], nil
}

// AdvanceEpoch adds one to the reconcile epoch and returns it.
func (s *Store) AdvanceEpoch(ctx context.Context) (int64, error) {
	var e int64
	err := s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE parley_installation SET epoch = epoch + 1 WHERE one = 1")
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return errNoInstallation
		}
		e, err = s.epoch(ctx, tx)
		return err
	})
	return e, wrapErr("sqlstore.AdvanceEpoch", err)
}

// AttachmentKeys returns up to limit keys of attachment rows after after,
// in ascending byte order (the blob_key index).
func (s *Store) AttachmentKeys(ctx context.Context, after string, limit int) ([]string, error) {
	keys := []string{}
	if limit < 1 {
		return keys, nil
	}
	err := s.read(ctx, &keys, "SELECT blob_key FROM attachments WHERE blob_key > ? ORDER BY blob_key LIMIT ?", after, limit)
	return keys, wrapErr("sqlstore.AttachmentKeys", err)
}
