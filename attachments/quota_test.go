package attachments_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

// quotaFiles returns an attachments Service with the quota over a fresh
// memstore, and alice and bob.
func quotaFiles(t *testing.T, quota int64) (*attachments.Service, *memstore.Store, *memstore.BlobStore, messaging.Contact, messaging.Contact) {
	t.Helper()
	store, blobs := memstore.New(), memstore.NewBlobStore()
	msgs := svctest.New(t, store, blobs, &messaging.Options{Files: &attachments.Options{UploadQuota: quota}})
	files := msgs.Files()
	alice, err := msgs.SaveContact(context.Background(), messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	bob, err := msgs.SaveContact(context.Background(), messaging.Contact{Username: "bob"})
	require.NoError(t, err)
	return files, store, blobs, alice, bob
}

// assertOverQuota checks the error of an upload beyond the quota: a 413
// with its own code, naming the file.
func assertOverQuota(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, messaging.ErrTooLarge)
	var e *messaging.Error
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, attachments.CodeQuotaExceeded, e.Code)
	assert.Equal(t, "file", e.Param)
	assert.Contains(t, e.Message, "quota")
}

func upload(files *attachments.Service, c messaging.Contact, size int, key string) (messaging.Attachment, error) {
	return files.Upload(context.Background(), c, attachments.Upload{Filename: "f.bin", Body: strings.NewReader(strings.Repeat("x", size)),
		Idempotency: messaging.Idempotency{Key: key}})
}

// TestUploadQuota: a caller's files hold at most the quota; an upload
// beyond it stores nothing; a delete makes room; each caller has its
// own.
func TestUploadQuota(t *testing.T) {
	files, store, blobs, alice, bob := quotaFiles(t, 10_000)
	first, err := upload(files, alice, 6000, "")
	require.NoError(t, err)
	_, err = upload(files, alice, 4000, "")
	require.NoError(t, err, "exactly the quota")
	_, err = upload(files, bob, 10_000, "")
	require.NoError(t, err, "bob's quota is his own")

	for _, size := range []int{1, 0} {
		_, err = upload(files, alice, size, "")
		assertOverQuota(t, err)
	}
	n, err := store.Driver().UploadedBytes(context.Background(), alice.ID)
	require.NoError(t, err)
	assert.Equal(t, int64(10_000), n)
	assert.Equal(t, 3, objectCount(t, blobs), "nothing stored by the refused uploads")

	require.NoError(t, files.Delete(context.Background(), alice, first.ID))
	_, err = upload(files, alice, 6001, "")
	assertOverQuota(t, err) // passes the quota while it streams
	assert.Equal(t, 2, objectCount(t, blobs))
	_, err = upload(files, alice, 6000, "")
	require.NoError(t, err, "the delete made room")
}

// TestUploadQuotaFullReadsNothing: a caller at its quota is refused before
// a byte of the upload is read (issue 30: a refusal after a 20 MB read).
func TestUploadQuotaFullReadsNothing(t *testing.T) {
	files, _, _, alice, _ := quotaFiles(t, 100)
	_, err := upload(files, alice, 100, "")
	require.NoError(t, err)
	body := &countingBody{r: io.LimitReader(zeros{}, 20<<20)}
	_, err = files.Upload(context.Background(), alice, attachments.Upload{Filename: "big.bin", Body: body})
	assertOverQuota(t, err)
	assert.Zero(t, body.n, "bytes read")
}

// TestUploadQuotaReplay: a retry of an upload that was stored replays its
// answer even when the caller is at its quota; a new key is refused.
func TestUploadQuotaReplay(t *testing.T) {
	files, _, _, alice, _ := quotaFiles(t, 100)
	a, err := upload(files, alice, 100, "k1")
	require.NoError(t, err)
	again, err := upload(files, alice, 100, "k1")
	require.NoError(t, err)
	assert.Equal(t, a.ID, again.ID)
	_, err = upload(files, alice, 100, "k2")
	assertOverQuota(t, err)
}

// TestUploadQuotaCountsUploadsStoredMeanwhile: an upload that began before
// another of its caller was stored counts that one's bytes, which what it
// read of the repository at its start did not hold: 6,000 stored and
// 5,000 streaming do not both pass a quota of 10,000.
func TestUploadQuotaCountsUploadsStoredMeanwhile(t *testing.T) {
	files, store, _, alice, _ := quotaFiles(t, 10_000)
	slow := &gatedBody{gate: make(chan struct{}), started: make(chan struct{}), r: strings.NewReader(strings.Repeat("s", 5000))}
	started := slow.started
	done := make(chan error, 1)
	go func() {
		_, err := files.Upload(context.Background(), alice, attachments.Upload{Filename: "slow.bin", Body: slow})
		done <- err
	}()
	<-started // begun, its quota read, reading its first bytes
	_, err := upload(files, alice, 6000, "")
	require.NoError(t, err)
	close(slow.gate)
	assertOverQuota(t, <-done)
	n, err := store.Driver().UploadedBytes(context.Background(), alice.ID)
	require.NoError(t, err)
	assert.Equal(t, int64(6000), n)
}

// trickle is a body of n bytes read in chunks of at most 700 bytes, with a
// pause now and then, so that concurrent uploads interleave.
type trickle struct{ n int }

func (b *trickle) Read(p []byte) (int, error) {
	if b.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), b.n, 1+rand.IntN(700))
	clear(p[:k])
	b.n -= k
	if rand.IntN(4) == 0 {
		time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
	}
	return k, nil
}

// TestUploadQuotaConcurrent: however a caller's concurrent uploads
// interleave on one instance, the files stored never pass its quota, and
// every refusal is the quota's.
func TestUploadQuotaConcurrent(t *testing.T) {
	const quota = 50_000
	for round := range 20 {
		files, store, _, alice, _ := quotaFiles(t, quota)
		var mu sync.Mutex
		var stored int64
		var wg sync.WaitGroup
		for range 16 {
			size := 1000 + rand.IntN(8000)
			wg.Go(func() {
				a, err := files.Upload(context.Background(), alice, attachments.Upload{Filename: "t.bin", Body: &trickle{n: size}})
				if err != nil {
					assertOverQuota(t, err)
					return
				}
				mu.Lock()
				stored += a.FileSize
				mu.Unlock()
			})
		}
		wg.Wait()
		n, err := store.Driver().UploadedBytes(context.Background(), alice.ID)
		require.NoError(t, err)
		assert.Equal(t, stored, n, "round %d", round)
		assert.LessOrEqual(t, n, int64(quota), "round %d", round)
		assert.Positive(t, n, "round %d: some fit", round)
	}
}

// TestUploadQuotaAcrossInstances documents the bound over several
// instances, which do not see each other's uploads under way: each
// instance's uploads fit in what was left when they began, so two
// instances pass the quota by at most once what was left.
func TestUploadQuotaAcrossInstances(t *testing.T) {
	const quota, used = 10_000, 4_000
	store, blobs := memstore.New(), memstore.NewBlobStore()
	msgs := svctest.New(t, store, nil, nil)
	alice, err := msgs.SaveContact(context.Background(), messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	var instances []*attachments.Service
	for range 2 {
		instances = append(instances, svctest.New(t, store, blobs, &messaging.Options{Files: &attachments.Options{UploadQuota: quota}}).Files())
	}
	_, err = upload(instances[0], alice, used, "")
	require.NoError(t, err)

	gates := make(chan struct{})
	var wg sync.WaitGroup
	for i, files := range instances {
		for j := range 3 {
			body := &gatedBody{gate: gates, started: make(chan struct{}), r: strings.NewReader(strings.Repeat("x", 2000))}
			wg.Go(func() {
				_, err := files.Upload(context.Background(), alice, attachments.Upload{Filename: fmt.Sprintf("%d-%d.bin", i, j), Body: body})
				if err != nil {
					assertOverQuota(t, err)
				}
			})
		}
	}
	time.Sleep(50 * time.Millisecond) // every upload has begun
	close(gates)
	wg.Wait()
	n, err := store.Driver().UploadedBytes(context.Background(), alice.ID)
	require.NoError(t, err)
	t.Logf("stored %d of a quota of %d (%d left when the uploads began)", n, quota, quota-used)
	assert.LessOrEqual(t, n, int64(quota+(len(instances)-1)*(quota-used)))
}
