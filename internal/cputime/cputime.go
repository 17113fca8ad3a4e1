// Package cputime reads CPU time for benchmarks, which report it beside
// wall time: on a shared machine the CPU a process used varies less than
// the time it took.
package cputime
