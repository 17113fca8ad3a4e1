//go:build linux || darwin

package cputime

import (
	"syscall"
	"testing"
	"time"
)

// Process returns the user and system CPU time of the process.
func Process(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
