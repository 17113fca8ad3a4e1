package storecopy_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storecopy"
)

// Copy a store and its bucket to another (here both in memory; in a
// program, sqlstore.Stores and blobstore buckets), then verify it again.
func ExampleCopy() {
	ctx := context.Background()
	src, srcFiles := memstore.New(), memstore.NewBlobStore()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	_ = src.Driver().PutContact(ctx, messaging.Contact{ID: "ctc_1", Username: "alice", CreatedAt: at})
	_ = src.Driver().CreateMessage(ctx, messaging.Message{ID: "msg_1", ConversationID: "general", Contact: messaging.Contact{ID: "ctc_1"}, Text: "hello", CreatedAt: at}, nil, nil)
	_ = srcFiles.Put(ctx, attachments.KeyPrefix+"att_1", "text/plain", strings.NewReader("notes"))
	_ = src.Driver().CreateAttachment(ctx, messaging.Attachment{ID: "att_1", ConversationID: "general", UploaderID: "ctc_1", Filename: "notes.txt",
		FileType: "text/plain", FileSize: 5, SHA256: "ab5aa97074c454a0632057e704220d9a6678fbf773a0a5806fc09b8173b07309", Key: attachments.KeyPrefix + "att_1", CreatedAt: at}, nil)

	dst, dstFiles := memstore.New(), memstore.NewBlobStore()
	rep, err := storecopy.Copy(ctx, dst, dstFiles, src, srcFiles, nil)
	fmt.Println(rep.Rows[storecopy.Messages], "message,", rep.Files, "file; verified:", rep.Verified, err)

	// Later, a file of the copy is changed: a verification names it.
	_ = dstFiles.Put(ctx, attachments.KeyPrefix+"att_1", "text/plain", strings.NewReader("other"))
	_, err = storecopy.Verify(ctx, dst, dstFiles, src, srcFiles, nil)
	fmt.Println(errors.Is(err, storecopy.ErrMismatch))
	fmt.Println(err)
	// Output:
	// 1 message, 1 file; verified: true <nil>
	// true
	// the destination differs from its source:
	//   files: the destination's file of attachment "att_1" (attachments/att_1) has SHA-256 d9298a10d1b0735837dc4bd85dac641b0f3cef27a47e5d53a54f2f3f5b2fcffa and 5 bytes, its row says ab5aa97074c454a0632057e704220d9a6678fbf773a0a5806fc09b8173b07309 and 5
}
