package main

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests hold defect 4 of issue 10 (and the timeouts test of defect 8,
// which restated constants): they drive slow and greedy clients against
// the server's limits, made small.

var testLimits = limits{
	header:         500 * time.Millisecond,
	idle:           5 * time.Second,
	maxHeaderBytes: 4 << 10,
	grace:          500 * time.Millisecond,
	chunk:          1 << 10,
}

// limitServer serves a test handler with testLimits: /upload reads the
// body and answers its size; /download answers 64 MiB and reports on
// downloadErr how its writes ended.
func limitServer(t *testing.T) (addr string, downloadErr chan error) {
	t.Helper()
	downloadErr = make(chan error, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/upload", func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, n)
	})
	mux.HandleFunc("/download", func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 1<<20)
		var err error
		for range 64 {
			if _, err = w.Write(buf); err != nil {
				break
			}
		}
		downloadErr <- err
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := newHTTPServer(mux, slog.New(slog.DiscardHandler), testLimits)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String(), downloadErr
}

// answerWithin reads the status line of an answer on c, or the closing of
// c, and how long it took; it gives up after limit.
func answerWithin(t *testing.T, c net.Conn, limit time.Duration) (status int, took time.Duration) {
	t.Helper()
	start := time.Now()
	require.NoError(t, c.SetReadDeadline(start.Add(limit)))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	took = time.Since(start)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("no answer and no close within %v", limit)
	}
	if err != nil {
		return 0, took // closed
	}
	res.Body.Close()
	return res.StatusCode, took
}

func TestSlowBodyIsCutOff(t *testing.T) {
	addr, _ := limitServer(t)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
	require.NoError(t, err)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // one byte every 200 ms: 20 s for the body
		for range 100 {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := c.Write([]byte("x")); err != nil {
				return
			}
		}
	}()
	status, took := answerWithin(t, c, 10*time.Second)
	assert.Contains(t, []int{0, http.StatusBadRequest}, status)
	assert.Less(t, took, 3*time.Second, "the trickle was served for %v", took)
}

func TestSteadyUploadOutlastsGrace(t *testing.T) {
	addr, _ := limitServer(t)
	pr, pw := io.Pipe()
	go func() {
		chunk := strings.Repeat("x", 1<<10)
		for range 150 { // 150 KiB in 1.5 s: three times the grace
			time.Sleep(10 * time.Millisecond)
			if _, err := io.WriteString(pw, chunk); err != nil {
				return
			}
		}
		pw.Close()
	}()
	start := time.Now()
	res, err := http.Post("http://"+addr+"/upload", "application/octet-stream", pr)
	require.NoError(t, err)
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	assert.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	assert.Equal(t, strconv.Itoa(150<<10), string(body))
	assert.Greater(t, time.Since(start), testLimits.grace)
}

func TestStalledDownloadIsCutOff(t *testing.T) {
	addr, downloadErr := limitServer(t)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "GET /download HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	// Read nothing: the server's writes fill the socket's buffers, then
	// wait on a client that takes nothing.
	select {
	case err := <-downloadErr:
		require.Error(t, err, "64 MiB cannot fit in the socket buffers")
		var ne net.Error
		assert.ErrorAs(t, err, &ne)
	case <-time.After(10 * time.Second):
		t.Fatal("a download to a client that reads nothing is still being written after 10 s")
	}
}

func TestSlowHeadersAreCutOff(t *testing.T) {
	addr, _ := limitServer(t)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "GET /upload HTTP/1.1\r\nHost: x\r\n")
	require.NoError(t, err)
	status, took := answerWithin(t, c, 10*time.Second)
	assert.Contains(t, []int{0, http.StatusRequestTimeout}, status)
	assert.Less(t, took, 3*time.Second)
}

func TestLargeHeadersAreRefused(t *testing.T) {
	addr, _ := limitServer(t)
	req, _ := http.NewRequest("GET", "http://"+addr+"/upload", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 8<<10))
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, res.StatusCode)
}

// TestDeadlinesEndWithTheRequest: a keep-alive connection that waits
// longer than the grace between two requests still serves the second.
func TestDeadlinesEndWithTheRequest(t *testing.T) {
	addr, _ := limitServer(t)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	br := bufio.NewReader(c)
	for i := range 2 {
		_, err = io.WriteString(c, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
		require.NoError(t, err)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
		res, err := http.ReadResponse(br, nil)
		require.NoError(t, err, "request %d", i)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		assert.Equal(t, "3", string(body))
		time.Sleep(2 * testLimits.grace)
	}
}
