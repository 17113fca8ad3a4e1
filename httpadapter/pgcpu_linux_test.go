package httpadapter_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"
)

// postgresCPU is the CPU time (user and system) of the machine's
// PostgreSQL processes, from /proc: each one's own, and the postmaster's
// of its children that have exited. It counts every client's work, not
// only the benchmark's; false when no PostgreSQL process is visible.
func postgresCPU() (time.Duration, bool) {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	found := false
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid … utime stime cutime cstime (fields 14–17)
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || end < open || string(b[open+1:end]) != "postgres" {
			continue
		}
		f := bytes.Fields(b[end+1:]) // f[0] is field 3 (state)
		if len(f) < 15 {
			continue
		}
		found = true
		for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime
			n, _ := strconv.ParseInt(string(f[i]), 10, 64)
			ticks += n
		}
	}
	// USER_HZ is 100 on Linux.
	return time.Duration(ticks) * 10 * time.Millisecond, found
}

// backendsCPU is the CPU time (user and system) of the PostgreSQL backends
// that serve this process's connections, keyed by pid: the backends whose
// client_port (pg_stat_activity) is the local port of one of this
// process's TCP sockets. Unlike postgresCPU it counts no other client's
// work. db is any pool of the server (its own query is counted too, once).
func backendsCPU(tb testing.TB, db *bun.DB) map[int]time.Duration {
	tb.Helper()
	ports := ownTCPPorts()
	if len(ports) == 0 {
		return nil
	}
	var pids []int
	list := make([]string, 0, len(ports))
	for p := range ports {
		list = append(list, strconv.Itoa(p))
	}
	err := db.NewRaw("SELECT pid FROM pg_stat_activity WHERE client_port IN ("+strings.Join(list, ",")+")").
		Scan(context.Background(), &pids)
	if err != nil {
		tb.Fatalf("backendsCPU: %v", err)
	}
	out := make(map[int]time.Duration, len(pids))
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue // a server on another machine, or ended
		}
		end := bytes.LastIndexByte(b, ')')
		f := bytes.Fields(b[end+1:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(string(f[11]), 10, 64)
		s, _ := strconv.ParseInt(string(f[12]), 10, 64)
		out[pid] = time.Duration(u+s) * 10 * time.Millisecond // USER_HZ is 100
	}
	return out
}

// backendsSpent is what the backends of after spent since before
// (backendsCPU): a backend started between them counts whole.
func backendsSpent(before, after map[int]time.Duration) time.Duration {
	var d time.Duration
	for pid, t := range after {
		d += t - before[pid]
	}
	return d
}

// ownTCPPorts returns the local ports of this process's TCP sockets: the
// sockets of /proc/net/tcp{,6} whose inodes are among /proc/self/fd.
func ownTCPPorts() map[int]bool {
	inodes := map[string]bool{}
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		l, err := os.Readlink("/proc/self/fd/" + fd.Name())
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	ports := map[int]bool{}
	for _, name := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		for i, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			if i == 0 || len(f) < 10 || !inodes[f[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil {
				ports[int(p)] = true
			}
		}
	}
	return ports
}
