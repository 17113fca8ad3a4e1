package attachments_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/sqlstore"
	_ "github.com/parleychat/parley/storage/sqlstore/sqlite"
)

// These tests hold defect 1 of issue 10: a store deleted every file older
// than an hour that its database did not know, also when the files were
// another database's.

// assertReadable checks that every attachment's bytes can still be read.
func assertReadable(tb testing.TB, h *harness, atts ...messaging.Attachment) {
	tb.Helper()
	for _, a := range atts {
		_, r, err := h.svc.Open(context.Background(), h.alice, a.ID)
		if !assert.NoError(tb, err, "the file of %s (%s) is gone", a.ID, a.Key) {
			continue
		}
		b, err := io.ReadAll(r)
		r.Close()
		assert.NoError(tb, err)
		assert.Equal(tb, "bytes of "+a.Filename, string(b))
	}
}

func uploadN(tb testing.TB, h *harness, n int, name string) []messaging.Attachment {
	tb.Helper()
	var out []messaging.Attachment
	for i := range n {
		fn := name + "-" + string(rune('a'+i)) + ".txt"
		out = append(out, h.upload(tb, fn, "bytes of "+fn))
	}
	return out
}

// TestTwoDatabasesShareABucket: the README's quick start (SQLite, ./data)
// followed by its PostgreSQL command gives two databases over one files
// folder. The second one's reconciler, which runs at its start, must leave
// the first one's files alone, however old they are.
func TestTwoDatabasesShareABucket(t *testing.T) {
	for name, open := range blobBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			shared := open(t)
			first := newHarness(t, shared, nil)
			files := uploadN(t, first, 5, "first")
			second := newHarness(t, shared, nil)
			theirs := uploadN(t, second, 2, "second")

			first.clock.advance(2 * grace)
			second.clock.advance(2 * grace)
			_, _ = second.svc.Reconcile(ctx)
			_, _ = first.svc.Reconcile(ctx)
			_, _ = second.svc.Reconcile(ctx)
			assertReadable(t, first, files...)
			assertReadable(t, second, theirs...)
		})
	}
}

// TestNewDatabaseOverFiles: a new, empty database over a folder of files
// (a mistyped -db path makes one) deletes nothing, and its Claim says why
// it may not use the bucket.
func TestNewDatabaseOverFiles(t *testing.T) {
	for name, open := range blobBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			shared := open(t)
			owner := newHarness(t, shared, nil)
			files := uploadN(t, owner, 4, "owned")
			require.NoError(t, owner.svc.Claim(ctx), "the first database claims the bucket")

			stranger := newHarness(t, shared, nil)
			err := stranger.svc.Claim(ctx)
			require.Error(t, err)
			assert.ErrorIs(t, err, messaging.ErrConflict)
			assert.Contains(t, err.Error(), "belongs to another Parley database")

			stranger.clock.advance(30 * 24 * time.Hour)
			rep, err := stranger.svc.Reconcile(ctx)
			assert.ErrorIs(t, err, messaging.ErrConflict, "the refusal is reported")
			assert.Equal(t, attachments.ReconcileReport{Unowned: 4}, rep, "counted, not touched")
			assertReadable(t, owner, files...)

			// The owner's Claim and Reconcile are unaffected.
			require.NoError(t, owner.svc.Claim(ctx))
			rep, err = owner.svc.Reconcile(ctx)
			require.NoError(t, err)
			assert.Equal(t, attachments.ReconcileReport{}, rep)
		})
	}
}

// TestNewDatabaseOverUnclaimedFiles: a bucket written before claims
// existed (no claim object, keys without an installation prefix) is
// adopted by a database that knows its files, and refused to one that
// knows none of them.
func TestNewDatabaseOverUnclaimedFiles(t *testing.T) {
	for name, open := range blobBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			shared := open(t)
			// A file of an older version: its key has no installation.
			legacy := attachments.KeyPrefix + "att_01legacy"
			require.NoError(t, shared.Put(ctx, legacy, "text/plain", strings.NewReader("old")))

			stranger := newHarness(t, shared, nil)
			err := stranger.svc.Claim(ctx)
			assert.ErrorIs(t, err, messaging.ErrConflict)
			assert.Contains(t, err.Error(), "files that this database does not know")

			owner := newHarness(t, shared, nil)
			require.NoError(t, owner.repo.CreateAttachment(ctx, messaging.Attachment{
				ID: "att_01legacy", UploaderID: owner.alice.ID, Filename: "old.txt", FileType: "text/plain",
				FileSize: 3, Key: legacy, CreatedAt: time.Now(),
			}, nil))
			require.NoError(t, owner.svc.Claim(ctx), "the database that knows the files adopts the bucket")
			assert.ErrorIs(t, stranger.svc.Claim(ctx), messaging.ErrConflict, "now claimed")

			// An unknown legacy object is never touched, even by the owner.
			stray := attachments.KeyPrefix + "att_01stray"
			require.NoError(t, shared.Put(ctx, stray, "text/plain", strings.NewReader("?")))
			owner.clock.advance(2 * grace)
			rep, err := owner.svc.Reconcile(ctx)
			require.NoError(t, err)
			assert.Equal(t, attachments.ReconcileReport{Unowned: 1}, rep)
			assert.Contains(t, owner.objects(t), stray)
		})
	}
}

// TestOrphansMovedAside: an object of this database without a row is moved
// aside after OrphanGrace, not deleted, and purged after OrphanRetention.
func TestOrphansMovedAside(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		kept := h.upload(t, "kept.txt", "kept")
		var orphan string
		h.repo.createAttachment = func(ctx context.Context, a messaging.Attachment) error {
			orphan = a.Key
			return errInjected
		}
		h.blobs.setDelete(func(context.Context, string) error { return errInjected })
		_, err := h.svc.Upload(ctx, h.alice, attachments.Upload{Filename: "a.txt", ConversationID: conv, Body: strings.NewReader("lost")})
		require.ErrorIs(t, err, errInjected)
		h.repo.createAttachment = nil
		h.blobs.setDelete(nil)

		h.clock.advance(grace + time.Minute)
		rep, err := h.svc.Reconcile(ctx)
		require.NoError(t, err)
		assert.Equal(t, attachments.ReconcileReport{Orphans: 1}, rep)
		assert.Equal(t, []string{kept.Key}, h.objects(t))
		r, err := h.blobs.Open(ctx, attachments.OrphanPrefix+orphan)
		require.NoError(t, err, "the orphan is kept aside")
		b, _ := io.ReadAll(r)
		r.Close()
		assert.Equal(t, "lost", string(b))

		h.clock.advance(31 * 24 * time.Hour)
		rep, err = h.svc.Reconcile(ctx)
		require.NoError(t, err)
		assert.Equal(t, attachments.ReconcileReport{Purged: 1}, rep)
		_, err = h.blobs.Open(ctx, attachments.OrphanPrefix+orphan)
		assert.ErrorIs(t, err, messaging.ErrNotFound)
		h.assertClean(t)
	})
}

// TestReconcileReportsMissingFiles: a row whose object is gone is counted
// and logged, and left as it is.
func TestReconcileReportsMissingFiles(t *testing.T) {
	eachBackend(t, nil, func(t *testing.T, h *harness) {
		ctx := context.Background()
		a := h.upload(t, "a.txt", "a")
		h.upload(t, "b.txt", "b")
		require.NoError(t, h.blobs.next.Delete(ctx, a.Key))
		rep, err := h.svc.Reconcile(ctx)
		require.NoError(t, err)
		assert.Equal(t, attachments.ReconcileReport{Missing: 1}, rep)
		assert.Contains(t, h.logs.String(), a.Key)
	})
}

// TestRestoredDatabaseKeepsNewerFiles: a database restored from an older
// backup knows fewer files than its bucket holds. Its reconciler must not
// remove the files it no longer knows; it reports why.
func TestRestoredDatabaseKeepsNewerFiles(t *testing.T) {
	for name, open := range blobBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, "parley.db")
			shared := open(t)
			clk := &clock{}
			start := func() (*sqlstore.Store, *harness) {
				store, err := sqlstore.Open(ctx, path, &sqlstore.Options{Logger: slog.New(slog.DiscardHandler)})
				require.NoError(t, err)
				require.NoError(t, store.Migrate(ctx))
				h := &harness{blobs: &faultBlobs{next: shared}, clock: clk, logs: &syncBuffer{}}
				log := slog.New(slog.NewTextHandler(h.logs, nil))
				h.msgs = svctest.New(t, store, h.blobs, &messaging.Options{Now: clk.now, Logger: log, Files: &attachments.Options{OrphanGrace: grace, Now: clk.now, Logger: log}})
				h.svc = h.msgs.Files()
				h.alice, err = h.msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
				require.NoError(t, err)
				return store, h
			}
			store, h := start()
			before := uploadN(t, h, 3, "before")
			_, err := h.svc.Reconcile(ctx)
			require.NoError(t, err)
			_, err = store.DB().ExecContext(ctx, "VACUUM INTO ?", filepath.Join(dir, "backup.db"))
			require.NoError(t, err)

			after := uploadN(t, h, 3, "after")
			_, err = h.svc.Reconcile(ctx) // the reconciler runs between the backup and the restore
			require.NoError(t, err)
			require.NoError(t, store.Close())

			// Restore the backup.
			for _, suffix := range []string{"", "-wal", "-shm"} {
				_ = os.Remove(path + suffix)
			}
			require.NoError(t, os.Rename(filepath.Join(dir, "backup.db"), path))
			store, h = start()
			t.Cleanup(func() { store.Close() })
			assertReadable(t, h, before...)

			clk.advance(60 * 24 * time.Hour)
			rep, err := h.svc.Reconcile(ctx)
			assert.ErrorIs(t, err, messaging.ErrConflict)
			if err != nil {
				assert.Contains(t, err.Error(), "restored from a backup")
			}
			assert.Equal(t, 3, rep.Unowned, "the files the database lost are counted, not touched")
			assert.Zero(t, rep.Orphans+rep.Purged)
			for _, a := range after {
				r, err := shared.Open(ctx, a.Key)
				if assert.NoError(t, err, "the file %s uploaded after the backup is gone", a.Key) {
					r.Close()
				}
			}
			assertReadable(t, h, before...)
			// Serving is safe: Claim accepts the database (the same one).
			assert.NoError(t, h.svc.Claim(ctx))
		})
	}
}
