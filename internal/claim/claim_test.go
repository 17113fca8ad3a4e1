package claim_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/claim"
	"github.com/parleychat/parley/internal/ids"
	"github.com/parleychat/parley/storage/memstore"
)

// brokenOpener fails every Open with err.
type brokenOpener struct{ err error }

func (b brokenOpener) Open(context.Context, string) (io.ReadSeekCloser, error) { return nil, b.err }

func TestLoad(t *testing.T) {
	ctx := context.Background()
	b := memstore.NewBlobStore()

	_, _, found, err := claim.Load(ctx, b)
	require.NoError(t, err)
	assert.False(t, found, "no claim object")

	want := claim.Doc{Note: claim.Note, Installation: "inst_1", Epoch: 3, ClaimedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	data, err := want.Marshal()
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(data), "}\n"))
	assert.Contains(t, string(data), `"installation_id": "inst_1"`)
	require.NoError(t, b.Put(ctx, claim.Key, "application/json", strings.NewReader(string(data))))
	got, raw, found, err := claim.Load(ctx, b)
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, want, got)
	assert.Equal(t, data, raw)

	for _, bad := range []string{"", "not json", `{"note":"x"}`, `{"installation_id":""}`} {
		require.NoError(t, b.Put(ctx, claim.Key, "application/json", strings.NewReader(bad)))
		_, _, found, err := claim.Load(ctx, b)
		assert.ErrorIs(t, err, claim.ErrMalformed, "%q", bad)
		assert.False(t, found, "%q", bad)
	}

	boom := errors.New("boom")
	_, _, found, err = claim.Load(ctx, brokenOpener{boom})
	assert.ErrorIs(t, err, boom)
	assert.NotErrorIs(t, err, claim.ErrMalformed)
	assert.False(t, found)
}

func TestValidInstallationID(t *testing.T) {
	for _, id := range []string{
		ids.New("ins_"),                        // memstore
		"ins_0123456789abcdef0123456789abcdef", // the SQL engines
		"ins_0123456789abcdef_" + strings.TrimPrefix(ids.New("x"), "x"), // storecopy.CopyID
		"Parley-EU-1", strings.Repeat("a", 64),
	} {
		assert.True(t, claim.ValidInstallationID(id), id)
	}
	for _, id := range []string{"", strings.Repeat("a", 65), "ins_x/y", "..", "ins.x", "ins x", "insé"} {
		assert.False(t, claim.ValidInstallationID(id), id)
	}
}
