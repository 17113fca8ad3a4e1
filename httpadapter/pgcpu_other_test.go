//go:build !linux

package httpadapter_test

import "time"

// postgresCPU is not read outside Linux.
func postgresCPU() (time.Duration, bool) { return 0, false }
