//go:build !(linux || darwin)

package sqlstore_test

import (
	"testing"
	"time"
)

// processCPU is 0 where the benchmarks do not read the process's CPU time:
// cpu-ns/op is then 0.
func processCPU(*testing.B) time.Duration { return 0 }
