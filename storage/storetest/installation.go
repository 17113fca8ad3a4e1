package storetest

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/messaging/driver"
)

// The optional interfaces driver.Installation and
// driver.KeyLister; a store without one skips its tests.
var installationTests = []test{
	{"installation_id_is_stable", testInstallationID},
	{"epoch_advances", testEpoch},
	{"attachment_keys_in_order", testAttachmentKeys},
}

func testInstallationID(t *testing.T, h *harness) {
	inst, ok := h.s.(driver.Installation)
	if !ok {
		t.Skip("not an driver.Installation")
	}
	id, err := inst.InstallationID(h.ctx)
	require.NoError(t, err)
	assert.Regexp(t, `^[A-Za-z0-9_-]{1,64}$`, id, "the id can be part of a key")
	again, err := inst.InstallationID(h.ctx)
	require.NoError(t, err)
	assert.Equal(t, id, again, "the same on every call")
}

func testEpoch(t *testing.T, h *harness) {
	inst, ok := h.s.(driver.Installation)
	if !ok {
		t.Skip("not an driver.Installation")
	}
	e, err := inst.Epoch(h.ctx)
	require.NoError(t, err)
	assert.Zero(t, e, "a new store's epoch")
	for want := int64(1); want <= 3; want++ {
		got, err := inst.AdvanceEpoch(h.ctx)
		require.NoError(t, err)
		assert.Equal(t, want, got)
		e, err := inst.Epoch(h.ctx)
		require.NoError(t, err)
		assert.Equal(t, want, e)
	}
	errs := parallel(10, func(int) error { _, err := inst.AdvanceEpoch(h.ctx); return err })
	for _, err := range errs {
		require.NoError(t, err)
	}
	e, err = inst.Epoch(h.ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(13), e, "concurrent advances lose none")
}

func testAttachmentKeys(t *testing.T, h *harness) {
	kl, ok := h.s.(driver.KeyLister)
	if !ok {
		t.Skip("not an driver.KeyLister")
	}
	keys, err := kl.AttachmentKeys(h.ctx, "", 10)
	require.NoError(t, err)
	assert.Empty(t, keys)
	u := h.contact("alice")
	var want []string
	for i := range 7 {
		a := newAttachment("c", u.ID, at(i))
		// Keys in another order than the ids, and under two prefixes.
		a.Key = attachments.KeyPrefix + []string{"ins_b/", "ins_a/", ""}[i%3] + a.ID
		require.NoError(t, h.s.CreateAttachment(h.ctx, a, nil))
		want = append(want, a.Key)
	}
	gone := h.attachment("c", u, at(20))
	_, err = h.s.DeleteAttachment(h.ctx, gone.ID, nil)
	require.NoError(t, err)
	slices.Sort(want)
	var got []string
	after := ""
	for {
		page, err := kl.AttachmentKeys(h.ctx, after, 3)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), 3)
		got = append(got, page...)
		if len(page) < 3 {
			break
		}
		after = page[len(page)-1]
	}
	assert.Equal(t, want, got, "every row's key once, ascending, without deleted rows")
}
