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
	"github.com/parleychat/parley/internal/ids"
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

// A tampered source (an attachment key outside the source's prefix, a
// text of 5,000 characters, an id with a control character) is refused
// row by row, naming the row, and writes nothing outside attachments/ in
// the destination bucket. Deleting, through the files Service, an
// attachment whose key the Service did not make (a row loaded as it is)
// deletes its row, and no object.
func testCopyRefusesTamperedRows(t *testing.T, bs []backend) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, want string
		batch      func(f fixture) *storecopy.Batch
	}{
		{"key outside attachments", `"att_evil"`, func(f fixture) *storecopy.Batch {
			return &storecopy.Batch{Kind: storecopy.Attachments, Attachments: []messaging.Attachment{{ID: "att_evil", ConversationID: "general",
				UploaderID: f.contacts[0], Filename: "x.txt", FileType: "text/plain", FileSize: 1, Key: "outside/evil", CreatedAt: copyAt(5)}}}
		}},
		{"key of another installation", `"att_other"`, func(f fixture) *storecopy.Batch {
			return &storecopy.Batch{Kind: storecopy.Attachments, Attachments: []messaging.Attachment{{ID: "att_other", ConversationID: "general",
				UploaderID: f.contacts[0], Filename: "x.txt", FileType: "text/plain", FileSize: 1, Key: attachments.KeyPrefix + "ins_other/att_other", CreatedAt: copyAt(5)}}}
		}},
		{"text too long", `"msg_long"`, func(f fixture) *storecopy.Batch {
			return &storecopy.Batch{Kind: storecopy.Messages, Messages: []storecopy.Message{{ID: "msg_long", ConversationID: "general",
				ContactID: f.contacts[0], Text: strings.Repeat("é", 5000), CreatedAt: copyAt(8000)}}}
		}},
		{"idempotency record keeping a body", `"ctc_big key-big"`, func(f fixture) *storecopy.Batch {
			return &storecopy.Batch{Kind: storecopy.IdempotencyKeys, IdempotencyKeys: []driver.IdempotencyRecord{{Scope: "ctc_big", Key: "key-big",
				Fingerprint: "fp", Result: []byte(strings.Repeat("x", 30_000)), CreatedAt: copyAt(5), ExpiresAt: time.Now().Add(time.Hour)}}}
		}},
		{"bad id", "ctc_\\x00bad", func(f fixture) *storecopy.Batch {
			return &storecopy.Batch{Kind: storecopy.Contacts, Contacts: []messaging.Contact{{ID: "ctc_\x00bad", Username: "bad", CreatedAt: copyBase}}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := bs[0].new(t), bs[len(bs)-1].new(t)
			f := fill(t, src.store, src.files, 8)
			require.NoError(t, src.files.Put(ctx, "outside/evil", "text/plain", strings.NewReader("x")))
			require.NoError(t, src.files.Put(ctx, attachments.KeyPrefix+"ins_other/att_other", "text/plain", strings.NewReader("x")))
			require.NoError(t, src.store.Load(ctx, tc.batch(f)))
			_, err := storecopy.Copy(ctx, storage{dst.store}, dst.files, storage{src.store}, src.files, nil)
			require.Error(t, err)
			assert.ErrorIs(t, err, messaging.ErrInvalid)
			assert.Contains(t, err.Error(), tc.want, "the error names the row")
			for _, k := range objects(t, dst.files) {
				assert.False(t, k == "outside/evil" || strings.HasPrefix(k, attachments.KeyPrefix+"ins_other/"), "nothing written at %s", k)
			}
		})
	}
	t.Run("delete keeps an object the Service did not make", func(t *testing.T) {
		s := bs[0].new(t)
		f := fill(t, s.store, s.files, 8)
		for _, key := range []string{"outside/evil", attachments.KeyPrefix + "ins_other/att_a"} {
			require.NoError(t, s.files.Put(ctx, key, "text/plain", strings.NewReader("not the Service's")))
		}
		var log syncBuffer
		files := liveFiles(t, s.store, s.files, &log)
		require.NoError(t, files.Claim(ctx))
		c, err := s.store.GetContact(ctx, f.contacts[0])
		require.NoError(t, err)
		for _, key := range []string{"outside/evil", claimKey, attachments.KeyPrefix + "ins_other/att_a"} {
			id := ids.New(ids.Attachment)
			require.NoError(t, s.store.Load(ctx, &storecopy.Batch{Kind: storecopy.Attachments, Attachments: []messaging.Attachment{{ID: id, ConversationID: "general",
				UploaderID: f.contacts[0], Filename: "x.txt", FileType: "text/plain", FileSize: 1, Key: key, CreatedAt: copyAt(5)}}}))
			require.NoError(t, files.Delete(ctx, c, id))
			_, err := s.store.GetAttachment(ctx, id)
			assert.ErrorIs(t, err, messaging.ErrNotFound, "the row is gone")
			assert.Contains(t, objects(t, s.files), key, "the object %s stays", key)
		}
		rep, err := files.Reconcile(ctx)
		require.NoError(t, err)
		assert.Zero(t, rep.Orphans+rep.Purged, "%+v", rep)
		for _, key := range []string{"outside/evil", claimKey, attachments.KeyPrefix + "ins_other/att_a"} {
			assert.Contains(t, objects(t, s.files), key, "the object %s stays after Reconcile", key)
		}
		assert.Contains(t, log.String(), "its key is not one this database made or was handed")
	})
}

// claimKey is the key of the claim object, which no attachment
// row may delete.
const claimKey = attachments.ClaimKey
