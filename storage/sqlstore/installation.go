package sqlstore

import (
	"context"
	"errors"

	"github.com/uptrace/bun"

	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/storecopy"
)

var (
	_ driver.Installation = (*store)(nil)
	_ driver.KeyLister    = (*store)(nil)
)

// errNoInstallation: the installation row, which Migrate makes, is missing.
var errNoInstallation = errors.New("the database has no installation row: run Migrate")

// InstallationID returns the database's installation id, made by Migrate.
func (s *store) InstallationID(ctx context.Context) (string, error) {
	in, err := installation(ctx, s.w)
	return in.ID, wrapErr("sqlstore.InstallationID", err)
}

// Epoch returns the database's reconcile epoch.
func (s *store) Epoch(ctx context.Context) (int64, error) {
	in, err := installation(ctx, s.w)
	return in.Epoch, wrapErr("sqlstore.Epoch", err)
}

// installation reads the installation row in db.
func installation(ctx context.Context, db bun.IDB) (storecopy.Installation, error) {
	var rows []storecopy.Installation // its fields are the columns' names
	if err := db.NewRaw("SELECT id, epoch FROM parley_installation WHERE one = 1").Scan(ctx, &rows); err != nil {
		return storecopy.Installation{}, err
	}
	if len(rows) == 0 {
		return storecopy.Installation{}, errNoInstallation
	}
	return rows[0], nil
}

// AdvanceEpoch adds one to the reconcile epoch and returns it.
func (s *store) AdvanceEpoch(ctx context.Context) (int64, error) {
	var e int64
	err := s.write(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, "UPDATE parley_installation SET epoch = epoch + 1 WHERE one = 1"); err != nil {
			return err
		}
		in, err := installation(ctx, tx) // errNoInstallation when there is no row to update
		e = in.Epoch
		return err
	})
	return e, wrapErr("sqlstore.AdvanceEpoch", err)
}

// AttachmentKeys returns up to limit keys of attachment rows after after,
// in ascending byte order (the blob_key index).
func (s *store) AttachmentKeys(ctx context.Context, after string, limit int) ([]string, error) {
	keys := []string{}
	if limit < 1 {
		return keys, nil
	}
	err := s.read(ctx, &keys, "SELECT blob_key FROM attachments WHERE blob_key > ? ORDER BY blob_key LIMIT ?", after, limit)
	return keys, wrapErr("sqlstore.AttachmentKeys", err)
}
