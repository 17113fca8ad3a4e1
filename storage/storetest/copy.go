package storetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	bucketclaim "github.com/parleychat/parley/internal/claim"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/storecopy"
)

// copyStore is the contract of a backend that storage/storecopy can copy
// into and out of.
type copyStore interface {
	Store
	storecopy.Source
	storecopy.Sink
}

// CopyBackend makes the ends of copies of one backend.
type CopyBackend struct {
	// Name names the backend in the tests' names.
	Name string
	// New returns a fresh, empty store, whose Driver implements
	// storecopy.Source and storecopy.Sink, and a fresh, empty blob store
	// for its files (a driver.Lister), removed when tb ends.
	New func(tb testing.TB) (messaging.Storage, attachments.BlobStore)
}

// RunCopyTests runs the tests of copies (storage/storecopy) between the
// backends: every pair both ways, read back through the Repository as
// identical; the chain through every backend and back to the first, which
// ends where it began; a second copy that changes nothing; refused
// destinations; verifications that name differences; copies cancelled at
// random points and resumed; a source written to while it is copied; both
// ends live over one bucket after a database-only move, and over two. The
// first backend is the other end of the tests of one backend (memstore is
// a good first).
func RunCopyTests(t *testing.T, backends []CopyBackend) {
	t.Helper()
	var bs []backend
	for _, b := range backends {
		bs = append(bs, backend{b.Name, func(tb testing.TB) end {
			s, files := b.New(tb)
			cs, ok := s.Driver().(copyStore)
			if !ok {
				tb.Fatalf("the Driver of backend %s (%T) implements no storecopy.Source and storecopy.Sink", b.Name, s.Driver())
			}
			return end{b.Name, cs, files}
		}})
	}
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, []backend)
	}{
		{"Chain", testCopyChain},
		{"Pairs", testCopyPairs},
		{"AgainChangesNothing", testCopyAgainChangesNothing},
		{"RefusesNonEmptyDestination", testCopyRefusesNonEmptyDestination},
		{"NeverTakesSourceID", testCopyNeverTakesSourceID},
		{"RefusesBucketWithFiles", testCopyRefusesBucketWithFiles},
		{"DatabaseOnly", testCopyDatabaseOnly},
		{"DatabaseOnlyTwice", testCopyDatabaseOnlyTwice},
		{"RowsOnlyOfCopy", testCopyRowsOnlyOfCopy},
		{"BothLive", testCopyBothLive},
		{"RefusesTamperedRows", testCopyRefusesTamperedRows},
		{"VerifyNamesDifferences", testCopyVerifyNamesDifferences},
		{"InterruptedAndResumed", testCopyInterruptedAndResumed},
		{"SourceWrittenMeanwhile", testCopyOfSourceWrittenMeanwhile},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, bs) })
	}
}

// end is one side of a copy: a store and its bucket.
type end struct {
	name  string
	store copyStore
	files attachments.BlobStore
}

// backend makes fresh ends of one backend.
type backend struct {
	name string
	new  func(t testing.TB) end
}

func copyAll(t testing.TB, dst, src end) storecopy.Report {
	t.Helper()
	rep, err := storecopy.Copy(context.Background(), storage{dst.store}, dst.files, storage{src.store}, src.files, nil)
	require.NoError(t, err, "copy %s to %s", src.name, dst.name)
	require.True(t, rep.Verified)
	from, to := installationOf(t, src.store), installationOf(t, dst.store)
	require.NotEqual(t, from, to, "a copy never takes its source's installation id")
	require.True(t, storecopy.IsCopyOf(to, from), "%s names its source %s", to, from)
	return rep
}

// The copy test of the conformance suite: a Parley copied along the chain
// memstore → SQLite → PostgreSQL → MySQL → memstore (the engines whose
// environment variables are set) reads back the same at every step, and
// ends identical to where it began.
func testCopyChain(t *testing.T, bs []backend) {
	chain := append(bs, bs[0])
	first := chain[0].new(t)
	f := fill(t, first.store, first.files, 30)
	want := view(t, first.store, first.files, f)
	prev := first
	for _, b := range chain[1:] {
		next := b.new(t)
		rep := copyAll(t, next, prev)
		assert.Equal(t, int64(4), rep.Files)
		assert.Equal(t, int64(31), rep.Rows[storecopy.Messages])
		assert.Equal(t, int64(2), rep.Rows[storecopy.IdempotencyKeys], "the records in force only")
		require.Equal(t, want, view(t, next.store, next.files, f), "%s → %s", prev.name, next.name)
		expiredGone(t, next.store, f)
		prev = next
	}
}

// takesWrites checks that a copy serves writes: new reactions after the
// copied ones (sequences continue), a new message counted.
func takesWrites(t *testing.T, s copyStore, f fixture) {
	t.Helper()
	ctx := context.Background()
	m, err := s.UpdateMessage(ctx, f.messages[1], driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: f.contacts[0], Add: []string{"new"}}})
	require.NoError(t, err)
	assert.Equal(t, "new", m.Reactions[len(m.Reactions)-1].Name)
	m, err = s.UpdateMessage(ctx, f.messages[6], driver.MessageChange{Reactions: &driver.ReactionChange{ContactID: f.contacts[1], Add: []string{"x"}}})
	require.NoError(t, err)
	assert.Len(t, m.Reactions, 1)
	require.NoError(t, s.CreateMessage(ctx, messaging.Message{ID: "msg_zzz", ConversationID: "general", Contact: messaging.Contact{ID: f.contacts[2]},
		Text: "after the copy", CreatedAt: copyAt(9000)}, nil, nil))
	c, err := s.GetConversation(ctx, "general", f.contacts[1])
	require.NoError(t, err)
	assert.Equal(t, "msg_zzz", c.LastMessage.ID)
}

// Every pair of backends, both ways.
func testCopyPairs(t *testing.T, bs []backend) {
	for _, from := range bs {
		for _, to := range bs {
			t.Run(from.name+"_to_"+to.name, func(t *testing.T) {
				src, dst := from.new(t), to.new(t)
				f := fill(t, src.store, src.files, 12)
				copyAll(t, dst, src)
				require.Equal(t, view(t, src.store, src.files, f), view(t, dst.store, dst.files, f))
				takesWrites(t, dst.store, f)
			})
		}
	}
}

// A copy run again on a finished copy changes nothing and copies no file;
// Verify alone says the two are the same.
func testCopyAgainChangesNothing(t *testing.T, bs []backend) {
	for _, b := range bs {
		t.Run(b.name, func(t *testing.T) {
			src, dst := bs[0].new(t), b.new(t)
			f := fill(t, src.store, src.files, 10)
			copyAll(t, dst, src)
			before := view(t, dst.store, dst.files, f)
			keys := objects(t, dst.files)
			rep := copyAll(t, dst, src)
			assert.Zero(t, rep.Copied, "no file copied again")
			assert.Equal(t, int64(4), rep.Files)
			assert.Equal(t, before, view(t, dst.store, dst.files, f))
			assert.Equal(t, keys, objects(t, dst.files))
			rep, err := storecopy.Verify(context.Background(), storage{dst.store}, dst.files, storage{src.store}, src.files, nil)
			require.NoError(t, err)
			assert.True(t, rep.Verified)
		})
	}
}

// A destination holding any state of another store is refused, naming
// what it holds, and left as it was: rows of the kinds a copy carries, and
// those it does not (an event feed, its handlers' positions, uploads under
// way, deletions of objects in its bucket), which would be the copy's once
// it is copied into.
func testCopyRefusesNonEmptyDestination(t *testing.T, bs []backend) {
	ctx := context.Background()
	att := func(id string) messaging.Attachment {
		return messaging.Attachment{ID: id, UploaderID: "ctc_other", Filename: "o.txt", FileType: "text/plain", FileSize: 1,
			Key: attachments.KeyPrefix + "ins_other/" + id, CreatedAt: copyBase}
	}
	for _, tc := range []struct {
		name, want string
		hold       func(t *testing.T, s copyStore)
	}{
		{"contact", "1 contacts", func(t *testing.T, s copyStore) {
			require.NoError(t, s.PutContact(ctx, messaging.Contact{ID: "ctc_other", Username: "other", CreatedAt: copyBase}))
		}},
		{"events", "2 events", func(t *testing.T, s copyStore) {
			a := att("att_other")
			require.NoError(t, s.CreateAttachment(ctx, a, newRecorder(messaging.EventAttachmentCreated, copyBase).record))
			_, err := s.DeleteAttachment(ctx, a.ID, newRecorder(messaging.EventAttachmentDeleted, copyBase).record)
			require.NoError(t, err)
			require.NoError(t, s.ForgetDeletion(ctx, a.Key))
		}},
		{"handler position", "1 handler positions", func(t *testing.T, s copyStore) {
			_, ok, err := s.ClaimCursor(ctx, "webhooks", "other", 0, time.Now(), time.Now().Add(time.Minute))
			require.NoError(t, err)
			require.True(t, ok)
		}},
		{"upload reservation", "1 upload reservations", func(t *testing.T, s copyStore) {
			rs, ok := s.(driver.ReservationStore)
			if !ok {
				t.Fatalf("%T keeps no upload reservations", s)
			}
			a := att("att_other")
			require.NoError(t, rs.CreateReservation(ctx, driver.Reservation{ID: "upl_other", AttachmentID: a.ID, UploaderID: a.UploaderID,
				Filename: a.Filename, FileType: a.FileType, FileSize: a.FileSize, SHA256: strings.Repeat("0", 64), Key: a.Key,
				CreatedAt: copyBase, ExpiresAt: time.Now().Add(time.Hour)}))
		}},
		{"pending deletion", "1 pending deletions", func(t *testing.T, s copyStore) {
			a := att("att_other")
			require.NoError(t, s.CreateAttachment(ctx, a, nil))
			_, err := s.DeleteAttachment(ctx, a.ID, nil)
			require.NoError(t, err)
		}},
	} {
		for _, b := range bs {
			t.Run(tc.name+"/"+b.name, func(t *testing.T) {
				src, dst := bs[0].new(t), b.new(t)
				fill(t, src.store, src.files, 8)
				tc.hold(t, dst.store)
				before := installationOf(t, dst.store)
				_, err := storecopy.Copy(ctx, storage{dst.store}, dst.files, storage{src.store}, src.files, nil)
				require.Error(t, err)
				assert.True(t, errors.Is(err, messaging.ErrConflict), "%v", err)
				assert.Contains(t, err.Error(), tc.want)
				_, err = dst.store.GetContact(ctx, "ctc_00")
				assert.True(t, errors.Is(err, messaging.ErrNotFound), "nothing copied: %v", err)
				assert.Equal(t, before, installationOf(t, dst.store), "the destination keeps its installation id")
				assert.Empty(t, objects(t, dst.files))
			})
		}
	}
}

// A bucket holding files of another copyStore is refused.
func testCopyRefusesBucketWithFiles(t *testing.T, bs []backend) {
	src, dst := bs[0].new(t), bs[0].new(t)
	fill(t, src.store, src.files, 8)
	require.NoError(t, dst.files.Put(context.Background(), attachments.KeyPrefix+"ins_x/att_9", "text/plain", strings.NewReader("x")))
	_, err := storecopy.Copy(context.Background(), storage{dst.store}, dst.files, storage{src.store}, src.files, nil)
	require.Error(t, err)
	assert.True(t, errors.Is(err, messaging.ErrConflict), "%v", err)
	assert.Contains(t, err.Error(), "ins_x/att_9")
}

// A destination that names itself by the source's own installation id
// (the source itself, under another address, or a restore of its backup)
// is refused when it holds rows, never written to; and one that holds no
// rows gets an id of its own, never keeping the source's: two databases
// of one id over one bucket take each other's new files for orphans.
func testCopyNeverTakesSourceID(t *testing.T, bs []backend) {
	for _, b := range bs {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			src := b.new(t)
			f := fill(t, src.store, src.files, 10)
			want := view(t, src.store, src.files, f)
			id := installationOf(t, src.store)
			_, err := storecopy.Copy(ctx, storage{src.store}, src.files, storage{src.store}, src.files, nil)
			require.ErrorIs(t, err, messaging.ErrConflict, "a copy into the source itself")
			assert.Contains(t, err.Error(), id)
			assert.Equal(t, id, installationOf(t, src.store))
			assert.Equal(t, want, view(t, src.store, src.files, f))

			dst := bs[0].new(t)
			require.NoError(t, dst.store.SetInstallation(ctx, storecopy.Installation{ID: id}))
			copyAll(t, dst, src)
		})
	}
}

// A copy of the database only, into the source's own bucket, finds every
// file in place and copies none.
func testCopyDatabaseOnly(t *testing.T, bs []backend) {
	for _, b := range bs {
		t.Run(b.name, func(t *testing.T) {
			src, dst := bs[0].new(t), b.new(t)
			f := fill(t, src.store, src.files, 10)
			keys := objects(t, src.files)
			rep, err := storecopy.Copy(context.Background(), storage{dst.store}, src.files, storage{src.store}, src.files, nil)
			require.NoError(t, err)
			assert.True(t, rep.Verified)
			assert.Equal(t, int64(4), rep.Files)
			assert.Zero(t, rep.Copied)
			to := installationOf(t, dst.store)
			assert.True(t, storecopy.IsCopyOf(to, installationOf(t, src.store)))
			keys = append(keys, bucketclaim.HandoverKey(installationOf(t, src.store), to))
			slices.Sort(keys)
			assert.Equal(t, keys, objects(t, src.files), "the bucket is left as it was, and holds the handover")
			assert.Equal(t, view(t, src.store, src.files, f), view(t, dst.store, src.files, f))
		})
	}
}

// A copy of a database-only copy, into the bucket it shares with its
// source by the first copy's handover (its own bucket, which it serves),
// finds every file in place too: the bucket's claim names the first
// database, which shares it with the source of the second copy.
func testCopyDatabaseOnlyTwice(t *testing.T, bs []backend) {
	for _, b := range bs {
		t.Run(b.name, func(t *testing.T) {
			first, mid, last := bs[0].new(t), b.new(t), bs[0].new(t)
			f := fill(t, first.store, first.files, 10)
			require.NoError(t, liveFiles(t, first.store, first.files, io.Discard).Claim(context.Background()))
			_, err := storecopy.Copy(context.Background(), storage{mid.store}, first.files, storage{first.store}, first.files, nil)
			require.NoError(t, err)
			require.NoError(t, liveFiles(t, mid.store, first.files, io.Discard).Claim(context.Background()), "the copy serves the bucket")
			rep, err := storecopy.Copy(context.Background(), storage{last.store}, first.files, storage{mid.store}, first.files, nil)
			require.NoError(t, err, "the bucket that the source serves is its own")
			assert.True(t, rep.Verified)
			assert.Equal(t, int64(4), rep.Files)
			assert.Zero(t, rep.Copied)
			assert.Equal(t, view(t, first.store, first.files, f), view(t, last.store, first.files, f))
			assert.NoError(t, liveFiles(t, last.store, first.files, io.Discard).Claim(context.Background()),
				"the copy of the copy serves the bucket too")
		})
	}
}

// A copy of the rows only (no blob stores) of a copy, whose attachment
// rows name the keys its source made and handed it, copies them.
func testCopyRowsOnlyOfCopy(t *testing.T, bs []backend) {
	for _, b := range bs {
		t.Run(b.name, func(t *testing.T) {
			first, mid, last := bs[0].new(t), b.new(t), bs[0].new(t)
			fill(t, first.store, first.files, 10)
			copyAll(t, mid, first)
			rep, err := storecopy.Copy(context.Background(), storage{last.store}, nil, storage{mid.store}, nil, nil)
			require.NoError(t, err)
			assert.True(t, rep.Verified)

			// A key of no installation's shape is still refused.
			for _, key := range []string{"outside/att_bad", attachments.KeyPrefix + "ins_x/../att_bad", attachments.KeyPrefix + "../att_bad"} {
				bad := bs[0].new(t)
				copyAll(t, bad, mid)
				require.NoError(t, bad.store.Load(context.Background(), &storecopy.Batch{Kind: storecopy.Attachments, Attachments: []messaging.Attachment{{
					ID: "att_bad", ConversationID: "general", UploaderID: "ctc_00", Filename: "x.txt", FileType: "text/plain", FileSize: 1, Key: key, CreatedAt: copyAt(5)}}}))
				_, err = storecopy.Copy(context.Background(), storage{bs[0].new(t).store}, nil, storage{bad.store}, nil, nil)
				require.ErrorIs(t, err, messaging.ErrInvalid, key)
			}
		})
	}
}

// Verify names what differs.
func testCopyVerifyNamesDifferences(t *testing.T, bs []backend) {
	ctx := context.Background()
	src, dst := bs[0].new(t), bs[0].new(t)
	f := fill(t, src.store, src.files, 10)
	copyAll(t, dst, src)
	text := "changed in the copy"
	_, err := dst.store.UpdateMessage(ctx, f.messages[4], driver.MessageChange{Text: &text})
	require.NoError(t, err)
	a, err := dst.store.GetAttachment(ctx, "att_02")
	require.NoError(t, err)
	require.NoError(t, dst.files.Put(ctx, a.Key, a.FileType, strings.NewReader("tampered")))
	require.NoError(t, dst.store.PutContact(ctx, messaging.Contact{ID: "ctc_zz", Username: "extra", CreatedAt: copyBase}))

	_, err = storecopy.Verify(ctx, storage{dst.store}, dst.files, storage{src.store}, src.files, nil)
	require.Error(t, err)
	assert.True(t, errors.Is(err, storecopy.ErrMismatch))
	var mm *storecopy.MismatchError
	require.True(t, errors.As(err, &mm))
	msg := err.Error()
	assert.Contains(t, msg, `messages: "msg_0004" differs in its text`)
	assert.Contains(t, msg, `contacts: "ctc_zz" is in the destination only`)
	assert.Contains(t, msg, "contacts: 124 in the source, 125 in the destination")
	assert.Contains(t, msg, `the destination's file of attachment "att_02"`)
}

// cancelling is a Sink and a bucket that cancel the copy's context at the
// n-th Load or Put (counted together), so that it stops there.
type cancelling struct {
	copyStore
	files  attachments.BlobStore
	n      atomic.Int64 // calls left; Puts come from several goroutines
	cancel context.CancelFunc
}

func (c *cancelling) tick() {
	if c.n.Add(-1) == 0 {
		c.cancel()
	}
}

func (c *cancelling) Load(ctx context.Context, b *storecopy.Batch) error {
	c.tick()
	return c.copyStore.Load(ctx, b)
}

func (c *cancelling) Put(ctx context.Context, key, contentType string, r io.Reader) error {
	c.tick()
	return c.files.Put(ctx, key, contentType, r)
}

func (c *cancelling) Open(ctx context.Context, key string) (io.ReadSeekCloser, error) {
	return c.files.Open(ctx, key)
}

func (c *cancelling) Delete(ctx context.Context, key string) error { return c.files.Delete(ctx, key) }

// A copy cancelled at random points, each run stopped at another, ends
// complete when run once more: nothing missing, nothing twice.
func testCopyInterruptedAndResumed(t *testing.T, bs []backend) {
	for _, b := range bs {
		t.Run(b.name, func(t *testing.T) {
			src, dst := bs[0].new(t), b.new(t)
			f := fill(t, src.store, src.files, 40)
			opts := &storecopy.Options{BatchSize: 3, FileWorkers: 2}
			stopped := 0
			for range 8 {
				ctx, cancel := context.WithCancel(context.Background())
				c := &cancelling{copyStore: dst.store, files: dst.files, cancel: cancel}
				c.n.Store(1 + rand.Int64N(40))
				_, err := storecopy.Copy(ctx, storage{c}, c, storage{src.store}, src.files, opts)
				cancel()
				if err != nil {
					require.ErrorIs(t, err, context.Canceled)
					stopped++
				}
			}
			require.NotZero(t, stopped, "some runs were cut")
			rep, err := storecopy.Copy(context.Background(), storage{dst.store}, dst.files, storage{src.store}, src.files, opts)
			require.NoError(t, err)
			require.True(t, rep.Verified)
			require.Equal(t, view(t, src.store, src.files, f), view(t, dst.store, dst.files, f))
		})
	}
}

// slow is a Sink whose loads take a while, so that a copy lasts long
// enough for writes to the source to interleave with it.
type slow struct{ copyStore }

func (s slow) Load(ctx context.Context, b *storecopy.Batch) error {
	time.Sleep(2 * time.Millisecond)
	return s.copyStore.Load(ctx, b)
}

// A source written to while it is copied gives a coherent copy: the
// rows of one moment (the copy verifies against its snapshot), whose
// counters agree with its messages, none of the later writes.
func testCopyOfSourceWrittenMeanwhile(t *testing.T, bs []backend) {
	for _, b := range bs {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			src, dst := b.new(t), bs[0].new(t)
			f := fill(t, src.store, src.files, 60)
			stop := make(chan struct{})
			var wrote atomic.Int64
			var wg sync.WaitGroup
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					conv := []string{"general", "random", "new-" + strconv.Itoa(i%3)}[i%3]
					m := messaging.Message{ID: fmt.Sprintf("msg_w%05d", i), ConversationID: conv, Contact: messaging.Contact{ID: f.contacts[i%4]},
						Text: "written during the copy", CreatedAt: copyAt(10000 + i)}
					if err := src.store.CreateMessage(ctx, m, nil, nil); err != nil {
						t.Errorf("write: %v", err)
						return
					}
					_, err := src.store.UpdateMessage(ctx, f.messages[i%len(f.messages)], driver.MessageChange{
						Reactions: &driver.ReactionChange{ContactID: f.contacts[i%4], Add: []string{"w" + strconv.Itoa(i%5)}}})
					if err == nil {
						err = src.store.MarkRead(ctx, conv, f.contacts[(i+1)%4], m.ID, nil)
					}
					if err == nil && i%4 == 3 {
						_, err = src.store.DeleteMessage(ctx, fmt.Sprintf("msg_w%05d", i-2), nil)
					}
					if err != nil {
						t.Errorf("write: %v", err)
						return
					}
					wrote.Add(1)
				}
			})
			for wrote.Load() < 5 {
				time.Sleep(time.Millisecond)
			}
			rep, err := storecopy.Copy(ctx, storage{slow{dst.store}}, dst.files, storage{src.store}, src.files, &storecopy.Options{BatchSize: 2})
			close(stop)
			wg.Wait()
			require.NoError(t, err, "the copy equals the snapshot it read")
			require.True(t, rep.Verified)
			t.Logf("%d writes during the copy; %d messages copied", wrote.Load(), rep.Rows[storecopy.Messages])

			// Coherent: each conversation's counters and last message are
			// those of the messages the copy holds, for every viewer.
			convs, _, err := dst.store.ListConversations(ctx, driver.ConversationQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 100}})
			require.NoError(t, err)
			total := int64(0)
			for _, c := range convs {
				var msgs []messaging.Message
				var after *driver.Cursor
				for {
					page, more, err := dst.store.ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{ConversationIDs: []string{c.ID}}, Window: driver.Window{Limit: 50, After: after}})
					require.NoError(t, err)
					msgs = append(msgs, page...)
					if !more {
						break
					}
					after = &driver.Cursor{Time: page[len(page)-1].CreatedAt, ID: page[len(page)-1].ID}
				}
				require.Equal(t, int64(len(msgs)), c.MessageCount, "conversation %s", c.ID)
				total += c.MessageCount
				if len(msgs) > 0 {
					require.Equal(t, msgs[0].ID, c.LastMessage.ID, "conversation %s", c.ID)
				}
				for _, viewer := range f.contacts {
					v, err := dst.store.GetConversation(ctx, c.ID, viewer)
					require.NoError(t, err)
					unread := int64(0)
					for _, m := range msgs { // newest first
						if v.LastReadMessageID != "" && m.ID == v.LastReadMessageID {
							break
						}
						if m.Contact.ID != viewer {
							unread++
						}
					}
					if v.LastReadMessageID == "" || slices.ContainsFunc(msgs, func(m messaging.Message) bool { return m.ID == v.LastReadMessageID }) {
						require.Equal(t, unread, v.UnreadCount, "conversation %s, viewer %s", c.ID, viewer)
					}
				}
			}
			require.Equal(t, rep.Rows[storecopy.Messages], total)
			all, _, err := src.store.ListMessages(ctx, driver.MessageQuery{Scope: driver.Scope{All: true}, Window: driver.Window{Limit: 10000}})
			require.NoError(t, err)
			require.Greater(t, int64(len(all)), total, "the writes after the snapshot are not in the copy")
		})
	}
}
