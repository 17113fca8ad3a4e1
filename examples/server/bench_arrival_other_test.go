//go:build !linux

package main

import (
	"testing"
	"time"
)

// arrivals reads an event stream; without the kernel's receive times
// (Linux's SO_TIMESTAMPNS), a line's time is when it was read.
type arrivals struct{ s *idleStream }

func newArrivals(_ *testing.B, s *idleStream) *arrivals { return &arrivals{s} }

// lines calls f with each line read and when it was read, until the
// connection fails.
func (a *arrivals) lines(f func(line []byte, at time.Time)) {
	for {
		line, err := a.s.r.ReadBytes('\n')
		if err != nil {
			return
		}
		f(line, time.Now())
	}
}

// ownCPU is not measured here: zero.
func ownCPU(*testing.B) time.Duration { return 0 }
