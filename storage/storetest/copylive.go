package storetest

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/storecopy"
)

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// liveFiles builds the files Service of a live server over s and files,
// its clock two hours ahead so that every object is past the orphan grace
// period (the reconciler would sweep any object it took for an orphan).
func liveFiles(t *testing.T, s copyStore, files attachments.BlobStore, log io.Writer) *attachments.Service {
	t.Helper()
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	svc, err := messaging.New(context.Background(), storage{s}, files, &messaging.Options{Files: &attachments.Options{
		Now: later, OrphanGrace: time.Minute, OrphanRetention: time.Minute,
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}})
	require.NoError(t, err)
	return svc.Files()
}

// upload stores a file through files as the contact id and returns it.
func upload(t *testing.T, files *attachments.Service, s copyStore, id, text string) driver.Attachment {
	t.Helper()
	c, err := s.GetContact(context.Background(), id)
	require.NoError(t, err)
	a, err := files.Upload(context.Background(), c, attachments.Upload{Filename: "f.txt", ConversationID: "general", Body: strings.NewReader(text)})
	require.NoError(t, err)
	return a
}

// readBack reads the attachment id through files as the contact cid.
func readBack(t *testing.T, files *attachments.Service, s copyStore, cid, id string) (string, error) {
	t.Helper()
	c, err := s.GetContact(context.Background(), cid)
	require.NoError(t, err)
	_, r, err := files.Open(context.Background(), c, id)
	if err != nil {
		return "", err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	return string(data), err
}

// A Parley moved with a copy, database only (into the source's own bucket)
// and database plus bucket, with both servers live after the copy:
// uploading to both and reconciling on both, again and again, loses no
// file on either, and neither serves, moves aside or deletes the other's
// new files, nor deletes a file both databases name. The copy's log says
// that the bucket is shared by a handover, never that the database was
// restored from a backup.
func testCopyBothLive(t *testing.T, bs []backend) {
	for _, b := range bs {
		for _, databaseOnly := range []bool{true, false} {
			name := b.name + "/database_and_bucket"
			if databaseOnly {
				name = b.name + "/database_only"
			}
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				src, dst := bs[0].new(t), b.new(t)
				f := fill(t, src.store, src.files, 6)
				alice := f.contacts[0]
				var srcLog, dstLog syncBuffer
				srcFiles := liveFiles(t, src.store, src.files, &srcLog)
				require.NoError(t, srcFiles.Claim(ctx))
				before := upload(t, srcFiles, src.store, alice, "before the copy")

				bucket := dst.files
				if databaseOnly {
					bucket = src.files
				}
				_, err := storecopy.Copy(ctx, storage{dst.store}, bucket, storage{src.store}, src.files, nil)
				require.NoError(t, err)
				dstFiles := liveFiles(t, dst.store, bucket, &dstLog)
				require.NoError(t, dstFiles.Claim(ctx), "the copy claims its bucket")
				require.NoError(t, srcFiles.Claim(ctx), "the source still may use its own")

				own := map[string][]driver.Attachment{}
				for i := range 3 {
					own["src"] = append(own["src"], upload(t, srcFiles, src.store, alice, "source "+string(rune('a'+i))))
					own["dst"] = append(own["dst"], upload(t, dstFiles, dst.store, alice, "copy "+string(rune('a'+i))))
					for _, svc := range []*attachments.Service{srcFiles, dstFiles, srcFiles} {
						rep, err := svc.Reconcile(ctx)
						require.NoError(t, err)
						assert.Zero(t, rep.Orphans, "nothing moved aside: %+v", rep)
						assert.Zero(t, rep.Missing, "no file missing: %+v", rep)
					}
				}
				assert.NotEqual(t, own["src"][0].Key[:strings.LastIndex(own["src"][0].Key, "/")], own["dst"][0].Key[:strings.LastIndex(own["dst"][0].Key, "/")],
					"each database makes its new files under a prefix of its own")
				for side, as := range own {
					svc, other, s, os := srcFiles, dstFiles, src.store, dst.store
					if side == "dst" {
						svc, other, s, os = dstFiles, srcFiles, dst.store, src.store
					}
					for _, a := range as {
						got, err := readBack(t, svc, s, alice, a.ID)
						require.NoError(t, err, "%s's new file %s is served", side, a.Key)
						assert.Contains(t, got, map[string]string{"src": "source", "dst": "copy"}[side])
						_, err = readBack(t, other, os, alice, a.ID)
						assert.ErrorIs(t, err, messaging.ErrNotFound, "the other database does not serve %s's new file", side)
					}
				}
				for _, svc := range []struct {
					files *attachments.Service
					s     copyStore
				}{{srcFiles, src.store}, {dstFiles, dst.store}} {
					got, err := readBack(t, svc.files, svc.s, alice, before.ID)
					require.NoError(t, err, "the file from before the copy is served by both")
					assert.Equal(t, "before the copy", got)
				}
				assert.Empty(t, objectsUnder(t, src.files, attachments.OrphanPrefix), "nothing moved aside in the source's bucket")
				assert.Empty(t, objectsUnder(t, bucket, attachments.OrphanPrefix), "nothing moved aside in the copy's bucket")

				// Deleting the file from before the copy on either side
				// deletes the row; the object stays while the other may
				// name it (a database-only move), and goes with the row
				// otherwise.
				c, err := dst.store.GetContact(ctx, alice)
				require.NoError(t, err)
				require.NoError(t, dstFiles.Delete(ctx, c, before.ID))
				_, err = readBack(t, srcFiles, src.store, alice, before.ID)
				assert.NoError(t, err, "the source still serves the file the copy deleted its row of")
				require.NoError(t, srcFiles.Delete(ctx, c, before.ID))
				if databaseOnly {
					assert.Contains(t, objects(t, src.files), before.Key, "a file both databases named is kept")
				} else {
					assert.NotContains(t, objects(t, src.files), before.Key, "the source's own bucket: its file goes")
					assert.NotContains(t, objects(t, dst.files), before.Key, "the copy's own bucket: its file goes")
				}
				// A new file of one's own goes with its row.
				require.NoError(t, dstFiles.Delete(ctx, c, own["dst"][0].ID))
				assert.NotContains(t, objects(t, bucket), own["dst"][0].Key)
				for _, svc := range []*attachments.Service{srcFiles, dstFiles} {
					rep, err := svc.Reconcile(ctx)
					require.NoError(t, err)
					assert.Zero(t, rep.Orphans+rep.Missing, "%+v", rep)
				}
				for _, a := range append(own["src"], own["dst"][1:]...) {
					assert.Contains(t, append(objects(t, src.files), objects(t, bucket)...), a.Key)
				}
				for _, l := range []string{srcLog.String(), dstLog.String()} {
					assert.NotContains(t, l, "restored from a backup")
				}
				if databaseOnly {
					assert.Contains(t, dstLog.String(), "shares the blob store with another by a copy's handover")
				}
			})
		}
	}
}

// objectsUnder returns the keys of the objects of files under prefix.
func objectsUnder(t testing.TB, files attachments.BlobStore, prefix string) []string {
	t.Helper()
	var keys []string
	for _, k := range objects(t, files) {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	return keys
}
