package httpadapter_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"time"
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
