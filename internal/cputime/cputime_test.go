package cputime_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/parleychat/parley/internal/cputime"
)

// TestProcessGrowsWithWork checks that busy work shows in the CPU time:
// 10 ms of it within 5 s of spinning, however loaded the machine.
func TestProcessGrowsWithWork(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("CPU time is read on Linux and macOS only")
	}
	before := cputime.Process(t)
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		if cputime.Process(t)-before >= 10*time.Millisecond {
			return
		}
	}
	t.Fatalf("CPU time grew by %v over 5 s of busy work", cputime.Process(t)-before)
}
