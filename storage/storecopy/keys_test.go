package storecopy_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/messaging/driver"
	"github.com/parleychat/parley/storage/storecopy"
)

// TestCopyKeepsKeysApart: idempotency keys that differ only by trailing
// spaces are two keys (check.IdempotencyKey), on every engine a copy
// goes to: MySQL's utf8mb4_bin took them for one, and skipped the second.
func TestCopyKeepsKeysApart(t *testing.T) {
	ctx := context.Background()
	engines := backendtest.SQL(t)
	src := engines[0].Open(t)
	d := src.Driver()
	require.NoError(t, d.PutContact(ctx, messaging.Contact{ID: "ctc_a", Username: "a", CreatedAt: time.Unix(1, 0).UTC()}))
	now := time.Now().UTC()
	for i, k := range []string{"k", "k "} {
		m := messaging.Message{ID: []string{"msg_01", "msg_02"}[i], ConversationID: "c", Contact: messaging.Contact{ID: "ctc_a"}, Text: "x", CreatedAt: now}
		require.NoError(t, d.CreateMessageKeyed(ctx, m, nil, nil, driver.IdempotencyRecord{Scope: "ctc_a", Key: k, Fingerprint: "f", Result: []byte(m.ID), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}))
	}
	for _, e := range engines {
		t.Run(e.Name, func(t *testing.T) {
			_, err := storecopy.Copy(ctx, e.Open(t), nil, src, nil, nil)
			require.NoError(t, err)
		})
	}
}
