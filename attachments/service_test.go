package attachments_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
	"github.com/parleychat/parley/storage/memstore"
)

func TestDeclaredTypeIsKeptOnlyWhenSpecificAndShort(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	files := svctest.New(t, store, memstore.NewBlobStore(), nil).Files()
	for _, tc := range []struct{ declared, want string }{
		{"image/png", "image/png"},
		{"text/plain; charset=latin1; x=1", "text/plain; charset=latin1"},
		{"application/octet-stream", "text/plain; charset=utf-8"},         // sniffed
		{"not a type", "text/plain; charset=utf-8"},                       // sniffed
		{"text/" + strings.Repeat("x", 200), "text/plain; charset=utf-8"}, // too long: sniffed
	} {
		a, err := files.Upload(ctx, messaging.Contact{ID: "ctc_a"}, attachments.Upload{Filename: "f", ContentType: tc.declared, Body: strings.NewReader("plain words")})
		require.NoError(t, err)
		assert.Equal(t, tc.want, a.FileType, "declared %q", tc.declared)
	}
}
