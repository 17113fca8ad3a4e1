package httpadapter_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/attachments"
	"github.com/parleychat/parley/httpadapter"
	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/internal/svctest"
	"github.com/parleychat/parley/messaging"
)

// TestDirectUploadSkipsTheServer counts the bytes on the API server's
// sockets, both ways, while a client reserves an upload, PUTs its bytes to
// the signed URL of MinIO (PARLEY_TEST_S3) and completes it: at most 1 MiB,
// whatever the file's size (issue 33). PARLEY_TEST_UPLOAD_BYTES sets the
// size (default 64 MiB; BENCHMARKS.md §9 gives the 1 GiB run):
//
//	eval "$(bash .ci/minio.sh)"
//	PARLEY_TEST_UPLOAD_BYTES=1073741824 go test ./httpadapter -run DirectUploadSkipsTheServer -v
func TestDirectUploadSkipsTheServer(t *testing.T) {
	u := os.Getenv("PARLEY_TEST_S3")
	if u == "" {
		t.Skip("PARLEY_TEST_S3 is not set: no bucket that signs URLs (.ci/minio.sh sets it)")
	}
	size := int64(64 << 20)
	if n, err := strconv.ParseInt(os.Getenv("PARLEY_TEST_UPLOAD_BYTES"), 10, 64); err == nil && n > 0 {
		size = n
	}
	ctx := t.Context()
	msgs := svctest.New(t, backendtest.SQL(t)[0].Open(t), s3Blobs(t, u), &messaging.Options{Files: &attachments.Options{MaxUploadBytes: size}})
	alice, err := msgs.SaveContact(ctx, messaging.Contact{Username: "alice"})
	require.NoError(t, err)
	h, err := httpadapter.New(msgs, &httpadapter.Options{
		Authenticator: httpadapter.StaticTokens(map[string]messaging.Contact{"tok": alice}),
	})
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(h)
	var counted atomic.Int64
	srv.Listener = countingListener{srv.Listener, &counted}
	srv.Start()
	defer srv.Close()

	// The file: pseudo-random bytes, hashed as they are made, sent from
	// a reader that makes them again, so that no copy is held in memory.
	file := func() io.Reader { return io.LimitReader(newPattern(), size) }
	sum := sha256.New()
	_, err = io.Copy(sum, file())
	require.NoError(t, err)

	call := func(method, path string, body any) map[string]any {
		var r io.Reader // no body for nil: complete takes none
		if body != nil {
			b, _ := json.Marshal(body)
			r = bytes.NewReader(b)
		}
		req, err := http.NewRequest(method, srv.URL+path, r)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer tok")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := srv.Client().Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		var v map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&v))
		require.Less(t, res.StatusCode, 300, "%s %s: %v", method, path, v)
		return v
	}
	up := call("POST", "/v1/uploads", map[string]any{"filename": "big.bin", "file_size": size,
		"sha256": hex.EncodeToString(sum.Sum(nil)), "conversation_id": "general"})
	req, err := http.NewRequest(up["upload_method"].(string), up["upload_url"].(string), file())
	require.NoError(t, err)
	req.ContentLength = size
	for k, v := range up["upload_headers"].(map[string]any) {
		req.Header.Set(k, v.(string))
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "the bucket takes the bytes")
	a := call("POST", "/v1/uploads/"+up["id"].(string)+"/complete", nil)
	assert.EqualValues(t, size, a["file_size"])

	t.Logf("a direct upload of %d bytes moved %d bytes through the API server's sockets", size, counted.Load())
	assert.LessOrEqual(t, counted.Load(), int64(1<<20), "at most 1 MiB through the API server")
}

// countingListener counts the bytes read from and written to its
// connections.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// pattern is an endless reader of pseudo-random bytes, the same for every
// new one (xorshift), which no store compresses.
type pattern struct{ x uint64 }

func newPattern() *pattern { return &pattern{x: 0x9e3779b97f4a7c15} }

func (p *pattern) Read(b []byte) (int, error) {
	for i := range b {
		p.x ^= p.x << 13
		p.x ^= p.x >> 7
		p.x ^= p.x << 17
		b[i] = byte(p.x)
	}
	return len(b), nil
}
