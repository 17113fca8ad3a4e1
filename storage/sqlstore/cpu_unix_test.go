//go:build linux || darwin

package sqlstore_test

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the user and system CPU time of the process.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
