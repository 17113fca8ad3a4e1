//go:build !linux

package httpadapter_test

import (
	"testing"
	"time"

	"github.com/uptrace/bun"
)

// postgresCPU is not read outside Linux.
func postgresCPU() (time.Duration, bool) { return 0, false }

// backendsCPU is not read outside Linux.
func backendsCPU(testing.TB, *bun.DB) map[int]time.Duration { return nil }

// backendsSpent is what the backends of after spent since before.
func backendsSpent(before, after map[int]time.Duration) time.Duration { return 0 }
