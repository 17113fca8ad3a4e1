package messaging_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/memstore"
	"github.com/parleychat/parley/storage/storetest"
)

var kinds = []messaging.ErrorKind{
	messaging.ErrNotFound, messaging.ErrInvalid, messaging.ErrConflict, messaging.ErrPermission,
	messaging.ErrTooLarge, messaging.ErrUnimplemented, messaging.ErrUnauthenticated, messaging.ErrUnavailable,
}

func TestKindOfBareAndWrappedKinds(t *testing.T) {
	for _, k := range kinds {
		assert.Equal(t, k, messaging.KindOf(k))
		wrapped := fmt.Errorf("sqlstore: no such row: %w", k)
		assert.Equal(t, k, messaging.KindOf(wrapped), "%v", k)
		assert.ErrorIs(t, wrapped, k)
		for _, other := range kinds {
			if other != k {
				assert.NotErrorIs(t, wrapped, other)
			}
		}
	}
	assert.Zero(t, messaging.KindOf(nil))
}

func TestNoArbitraryErrorPosesAsAKind(t *testing.T) {
	for _, err := range []error{
		errors.New("not found"),
		errors.New(messaging.ErrNotFound.Error()),
		fs.ErrNotExist,
		context.Canceled,
		&messaging.Error{Message: "internal"},
	} {
		assert.Zero(t, messaging.KindOf(err), "%v", err)
		for _, k := range kinds {
			assert.NotErrorIs(t, err, k)
		}
	}
}

func TestTheErrorsOwnKindWins(t *testing.T) {
	// An attachment deleted between the check and the link: the repository
	// says not found, the Service says the request is invalid.
	cause := fmt.Errorf("sqlstore: no such attachment: %w", messaging.ErrNotFound)
	err := fmt.Errorf("messaging.Create: %w", &messaging.Error{Kind: messaging.ErrInvalid, Param: "attachments", Message: "an attachment no longer exists", Err: cause})

	assert.Equal(t, messaging.ErrInvalid, messaging.KindOf(err))
	assert.ErrorIs(t, err, messaging.ErrInvalid)
	assert.NotErrorIs(t, err, messaging.ErrNotFound, "the cause's kind is hidden by the error's own")
	var e *messaging.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "attachments", e.Param)
}

func TestTheCauseStaysReachable(t *testing.T) {
	type driverError struct{ error }
	cause := driverError{errors.New("connection reset")}
	err := &messaging.Error{Kind: messaging.ErrUnavailable, Message: "unavailable", Err: fmt.Errorf("dial: %w: %w", context.DeadlineExceeded, cause)}
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	var d driverError
	require.ErrorAs(t, err, &d)
	assert.Equal(t, cause, d)
	assert.Contains(t, err.Error(), "connection reset", "the cause is in the text for logs")
}

func TestAnErrorWithoutAKindTakesItsCauses(t *testing.T) {
	err := &messaging.Error{Op: "messaging.Get", Message: "internal error", Err: messaging.ErrUnavailable}
	assert.Equal(t, messaging.ErrUnavailable, messaging.KindOf(err))
	assert.ErrorIs(t, err, messaging.ErrUnavailable)
}

func TestKindNames(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range kinds {
		name := k.String()
		assert.NotEmpty(t, name)
		assert.False(t, seen[name], "two kinds named %q", name)
		seen[name] = true
	}
	assert.Equal(t, "internal error", messaging.ErrorKind(0).Error())
	assert.Equal(t, "unknown error kind", messaging.ErrorKind(99).Error())
}

// vanishingAttachments is a store whose attachments disappear between the
// Service's check and the repository's link.
type vanishingAttachments struct{ driver.Store }

func (v vanishingAttachments) CreateMessage(ctx context.Context, m messaging.Message, attIDs []string, rec driver.Recorder) error {
	if len(attIDs) > 0 {
		return fmt.Errorf("memstore: no attachment %q: %w", attIDs[0], messaging.ErrNotFound)
	}
	return v.Store.CreateMessage(ctx, m, attIDs, rec)
}

func TestAttachmentGoneBeforeTheLinkIsInvalidNotNotFound(t *testing.T) {
	ctx := t.Context()
	store := memstore.New()
	msgs := svctest.New(t, storetest.Storage(vanishingAttachments{store.Driver()}), nil, nil)
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	att := messaging.Attachment{ID: "att_01jz8k3x4y5z6a7b8c9d0e1f2g", UploaderID: alice.ID, Filename: "a.txt", Key: "attachments/x"}
	require.NoError(t, store.Driver().CreateAttachment(ctx, att, nil))

	_, err = msgs.Create(ctx, alice, messaging.NewMessage{ConversationID: "general", Text: "see attached", Attachments: []string{att.ID}})
	require.Error(t, err)
	assert.Equal(t, messaging.ErrInvalid, messaging.KindOf(err), "%v", err)
	assert.NotErrorIs(t, err, messaging.ErrNotFound)
	var e *messaging.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "attachments", e.Param)
}
