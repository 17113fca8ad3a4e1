// Command uploadbench measures one large upload through Parley's HTTP API,
// as a client sees it and as the server's operating system sees it: the
// server (the examples/server binary, SQLite and a file:// bucket in a
// temporary directory) runs as a process of its own, the file streams to it
// over loopback TCP from a generator (never held in memory), and after the
// upload uploadbench reads the server's peak resident memory (VmHWM in
// /proc/PID/status, so Linux only). The same bytes are also copied straight
// into a file in the same directory (the disk's own speed) and, with -floor,
// uploaded to the bare reference server of ../shared/bench/floor, rounds
// alternating between the three, and the ratios are printed.
//
//	go build -o /tmp/parley-server ./examples/server
//	(cd ../shared/bench/floor && go build -o /tmp/floor .)
//	go run ./tools/uploadbench -server /tmp/parley-server -floor /tmp/floor -size 1GiB -rounds 3
//
// Neither side calls fsync (gocloud's fileblob does not, nor does the
// floor), so the plain copy does not either: all three write into the page
// cache at the same terms.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "uploadbench:", err)
		os.Exit(1)
	}
}

// result is one measured transfer.
type result struct {
	secs      float64
	hwmKiB    int64   // server's VmHWM after the upload; 0 for the plain copy
	idleKiB   int64   // server's VmHWM before the upload
	cpuSecs   float64 // CPU time (user and system) of the server, or of the plain copy, spent on the transfer
	bytesSent int64
}

func (r result) mbps(size int64) float64 { return float64(size) / 1e6 / r.secs }

func run() error {
	var (
		server = flag.String("server", "", "the built examples/server binary (required)")
		floor  = flag.String("floor", "", "the built floor binary of ../shared/bench/floor (optional)")
		sizeF  = flag.String("size", "1GiB", "bytes to upload: a number with an optional KiB, MiB or GiB suffix")
		dirF   = flag.String("dir", "", "directory for the servers' data and the plain copy (default: a new temporary directory, removed at the end)")
		rounds = flag.Int("rounds", 2, "rounds; each runs the plain copy, Parley and the floor, in an order that rotates")
		token  = flag.String("token", "alice-secret", "bearer token of the Parley server (its default table has alice-secret)")
		query  = flag.String("bucket-query", "", `query of Parley's file:// bucket URL, such as "metadata=skip" (no attributes sidecar, so no MD5 of the bytes)`)
	)
	flag.Parse()
	if *server == "" {
		return errors.New("-server is required: go build -o /tmp/parley-server ./examples/server")
	}
	size, err := parseSize(*sizeF)
	if err != nil {
		return err
	}
	dir := *dirF
	if dir == "" {
		if dir, err = os.MkdirTemp("", "uploadbench-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	block := make([]byte, 1<<20)
	_, _ = rand.Read(block)

	type contender struct {
		name string
		run  func(round int) (result, error)
	}
	contenders := []contender{
		{"plain copy", func(round int) (result, error) { return plainCopy(dir, block, size) }},
		{"parley", func(round int) (result, error) {
			data := filepath.Join(dir, "parley-"+strconv.Itoa(round))
			args := []string{"-data", data, "-max-upload-bytes", strconv.FormatInt(size+1<<20, 10)}
			if *query != "" {
				bucket := url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(data, "files")), RawQuery: *query}
				args = append(args, "-bucket", bucket.String())
				if err := os.MkdirAll(filepath.Join(data, "files"), 0o755); err != nil {
					return result{}, err
				}
			}
			return serverUpload(*server, data, args, *token, block, size)
		}},
	}
	if *floor != "" {
		contenders = append(contenders, contender{"floor", func(round int) (result, error) {
			data := filepath.Join(dir, "floor-"+strconv.Itoa(round))
			if err := os.MkdirAll(data, 0o755); err != nil {
				return result{}, err
			}
			return serverUpload(*floor, data, []string{"-db", "sqlite", "-dsn", filepath.Join(data, "floor.db"), "-files", filepath.Join(data, "files")},
				"", block, size)
		}})
	}

	fmt.Printf("upload of %d bytes (%.0f MiB), %d rounds, in %s\n", size, float64(size)/(1<<20), *rounds, dir)
	results := map[string][]result{}
	for round := range *rounds {
		for i := range contenders {
			c := contenders[(i+round)%len(contenders)]
			r, err := c.run(round)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", c.name, round+1, err)
			}
			results[c.name] = append(results[c.name], r)
			mem := ""
			if r.hwmKiB > 0 {
				mem = fmt.Sprintf("  server peak RSS (VmHWM) %6.1f MiB, %5.1f MiB before the upload", float64(r.hwmKiB)/1024, float64(r.idleKiB)/1024)
			}
			fmt.Printf("round %d  %-10s %7.1f MB/s  %6.2f s  CPU %5.2f s%s\n", round+1, c.name, r.mbps(size), r.secs, r.cpuSecs, mem)
		}
	}

	// medianCPU is the median CPU time per GB (1e9 bytes) of name's rounds.
	medianCPU := func(name string) float64 {
		var cs []float64
		for _, r := range results[name] {
			cs = append(cs, r.cpuSecs/float64(size)*1e9)
		}
		slices.Sort(cs)
		if n := len(cs); n%2 == 1 {
			return cs[n/2]
		} else {
			return (cs[n/2-1] + cs[n/2]) / 2
		}
	}
	median := func(name string) (mbps float64, hwm int64) {
		var ts []float64
		for _, r := range results[name] {
			ts = append(ts, r.mbps(size))
			hwm = max(hwm, r.hwmKiB)
		}
		slices.Sort(ts)
		n := len(ts)
		if n%2 == 1 {
			return ts[n/2], hwm
		}
		return (ts[n/2-1] + ts[n/2]) / 2, hwm
	}
	fmt.Println("\nmedian throughput, highest peak RSS:")
	plain, _ := median("plain copy")
	p, phwm := median("parley")
	fmt.Printf("  plain copy %7.1f MB/s\n", plain)
	fmt.Printf("  parley     %7.1f MB/s  %.2fx the plain copy  peak RSS %.1f MiB\n", p, p/plain, float64(phwm)/1024)
	// CPU per byte does not depend on what else the machine runs, as the
	// times do: with shared cores, compare these too.
	fmt.Printf("  CPU s/GB: plain copy %.3f, parley server %.3f (plain copy / parley: %.2fx)\n",
		medianCPU("plain copy"), medianCPU("parley"), medianCPU("plain copy")/medianCPU("parley"))
	if *floor != "" {
		f, fhwm := median("floor")
		fmt.Printf("  floor      %7.1f MB/s  %.2fx the plain copy  peak RSS %.1f MiB\n", f, f/plain, float64(fhwm)/1024)
		fmt.Printf("  parley / floor: %.2fx throughput; CPU s/GB of the floor %.3f\n", p/f, medianCPU("floor"))
	}
	return nil
}

// parseSize reads "1073741824", "512MiB" or "1GiB".
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad -size %q", s)
	}
	return n * mult, nil
}

// generator yields n bytes, cycling through block, without holding them.
type generator struct {
	block []byte
	n     int64
	off   int
}

func (g *generator) Read(p []byte) (int, error) {
	if g.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > g.n {
		p = p[:g.n]
	}
	k := 0
	for k < len(p) {
		c := copy(p[k:], g.block[g.off:])
		k += c
		g.off = (g.off + c) % len(g.block)
	}
	g.n -= int64(k)
	return k, nil
}

// plainCopy copies the generator's bytes into a new file of dir, as a
// server that streams to disk would, and removes it.
func plainCopy(dir string, block []byte, size int64) (result, error) {
	name := filepath.Join(dir, "plain-copy.bin")
	defer os.Remove(name)
	cpu0 := selfCPU()
	start := time.Now()
	f, err := os.Create(name)
	if err != nil {
		return result{}, err
	}
	n, err := io.Copy(f, &generator{block: block, n: size})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return result{}, err
	}
	return result{secs: time.Since(start).Seconds(), cpuSecs: selfCPU() - cpu0, bytesSent: n}, nil
}

// serverUpload starts bin with args and -addr on a free loopback port,
// uploads size bytes to its POST /v1/attachments as a multipart file part,
// reads its VmHWM, stops it and removes data.
func serverUpload(bin, data string, args []string, token string, block []byte, size int64) (result, error) {
	defer os.RemoveAll(data)
	addr, err := freeAddr()
	if err != nil {
		return result{}, err
	}
	if err := os.MkdirAll(data, 0o755); err != nil {
		return result{}, err
	}
	logf, err := os.Create(data + ".log")
	if err != nil {
		return result{}, err
	}
	defer os.Remove(data + ".log")
	defer logf.Close()
	cmd := exec.Command(bin, append(args, "-addr", addr)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	if err := waitListening(addr, 30*time.Second); err != nil {
		return result{}, fmt.Errorf("%s did not start (log: %s): %w", bin, data+".log", err)
	}
	idle, err := vmHWM(cmd.Process.Pid)
	if err != nil {
		return result{}, err
	}

	// The multipart framing around the generated bytes.
	var frame bytes.Buffer
	mw := multipart.NewWriter(&frame)
	if _, err := mw.CreateFormFile("file", "big.bin"); err != nil {
		return result{}, err
	}
	head := slices.Clone(frame.Bytes())
	frame.Reset()
	if err := mw.Close(); err != nil {
		return result{}, err
	}
	tail := slices.Clone(frame.Bytes())
	body := io.MultiReader(bytes.NewReader(head), &generator{block: block, n: size}, bytes.NewReader(tail))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/attachments", body)
	if err != nil {
		return result{}, err
	}
	req.ContentLength = int64(len(head)) + size + int64(len(tail))
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Transport: &http.Transport{WriteBufferSize: 64 << 10, DisableCompression: true}}
	cpu0, err := procCPU(cmd.Process.Pid)
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return result{}, err
	}
	answer, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	res.Body.Close()
	secs := time.Since(start).Seconds()
	if res.StatusCode != http.StatusCreated {
		return result{}, fmt.Errorf("status %d: %s", res.StatusCode, answer)
	}
	if !bytes.Contains(answer, []byte(strconv.FormatInt(size, 10))) {
		return result{}, fmt.Errorf("the answer does not give the size %d: %s", size, answer)
	}
	cpu1, err := procCPU(cmd.Process.Pid)
	if err != nil {
		return result{}, err
	}
	hwm, err := vmHWM(cmd.Process.Pid)
	if err != nil {
		return result{}, err
	}
	return result{secs: secs, hwmKiB: hwm, idleKiB: idle, cpuSecs: cpu1 - cpu0, bytesSent: req.ContentLength}, nil
}

// freeAddr returns a loopback address with a port free at the moment.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func waitListening(addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// vmHWM returns the peak resident set size of the process, in KiB.
func vmHWM(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("peak memory needs Linux's /proc: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, errors.New("no VmHWM in /proc/" + strconv.Itoa(pid) + "/status")
}

// procCPU returns the CPU time (user and system) that process pid has used,
// from /proc/PID/stat.
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields count from
	// after its closing parenthesis (utime and stime are fields 14 and 15).
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc/" + strconv.Itoa(pid) + "/stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	const ticks = 100 // USER_HZ on Linux
	return float64(ut+st) / ticks, nil
}

// selfCPU returns the CPU time (user and system) this process has used.
func selfCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
