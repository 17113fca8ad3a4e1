package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// loadConfig is a whole load: the targets and what to send them.
type loadConfig struct {
	Targets     []targetConfig // A, and B with -compare
	Ops         []string
	Mix         mix
	Conns       int
	Duration    time.Duration // measured, per run
	Warmup      time.Duration // per run, not measured
	Rounds      int
	Depth       int
	UploadSize  int64
	Timeout     time.Duration // per request
	AllowRemote bool
	Out         io.Writer
}

// result is what one run (one op, one target, one round) measured, or
// several runs merged.
type result struct {
	Op, Target  string
	Round       int    // 0 when merged
	Unsupported string // why the op did not run, if it did not
	OK, Errors  int64
	ErrorsBy    map[string]int64
	FirstErr    error
	Bytes       int64         // uploaded
	Elapsed     time.Duration // of the measured window
	Hist        *histogram
	rpsRounds   []float64 // of the merged runs
}

// rps is the rate of successful requests.
func (r *result) rps() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.OK) / r.Elapsed.Seconds()
}

func (r *result) mbps() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Bytes) / (1 << 20) / r.Elapsed.Seconds()
}

// add merges o into r.
func (r *result) add(o *result) {
	if r.Hist == nil {
		r.Hist = &histogram{}
	}
	if r.ErrorsBy == nil {
		r.ErrorsBy = map[string]int64{}
	}
	if o.Unsupported != "" {
		r.Unsupported = o.Unsupported
		return
	}
	r.OK += o.OK
	r.Errors += o.Errors
	for k, v := range o.ErrorsBy {
		r.ErrorsBy[k] += v
	}
	if r.FirstErr == nil {
		r.FirstErr = o.FirstErr
	}
	r.Bytes += o.Bytes
	r.Elapsed += o.Elapsed
	r.Hist.merge(o.Hist)
	r.rpsRounds = append(r.rpsRounds, o.rps())
}

// report is every run of a load, in the order they ran.
type report struct {
	Runs []*result
}

// merged returns the runs of op on target merged.
func (rep *report) merged(op, target string) *result {
	m := &result{Op: op, Target: target}
	for _, r := range rep.Runs {
		if r.Op == op && r.Target == target {
			m.add(r)
		}
	}
	return m
}

// runOne runs op against t with conns connections for warmup+dur, and
// measures the requests that start after the warm-up.
func runOne(ctx context.Context, t *target, op string, m mix, conns int, warmup, dur time.Duration) *result {
	workers := make([]*worker, conns)
	start := time.Now()
	measureFrom, end := start.Add(warmup), start.Add(warmup+dur)
	ends := make([]time.Time, conns)
	var wg sync.WaitGroup
	for i := range workers {
		w := t.newWorker(i)
		workers[i] = w
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(end) {
					break
				}
				name := op
				if op == "mix" {
					name = m.pick(w.rng)
				}
				status, err := opTable[name].do(ctx, w)
				t1 := time.Now()
				if t0.Before(measureFrom) {
					w.bytes = 0
					continue
				}
				ends[i] = t1
				switch {
				case err != nil:
					w.errs++
					w.errsBy[name+" error"]++
					if w.firstErr == nil {
						w.firstErr = err
					}
				case status/100 != 2:
					w.errs++
					w.errsBy[fmt.Sprintf("%s %d", name, status)]++
				default:
					w.ok++
					w.hist.record(t1.Sub(t0))
				}
			}
		})
	}
	wg.Wait()
	r := &result{Op: op, Target: t.Name, ErrorsBy: map[string]int64{}, Hist: &histogram{}}
	last := measureFrom.Add(dur)
	for i, w := range workers {
		r.OK += w.ok
		r.Errors += w.errs
		for k, v := range w.errsBy {
			r.ErrorsBy[k] += v
		}
		if r.FirstErr == nil {
			r.FirstErr = w.firstErr
		}
		r.Bytes += w.bytes
		r.Hist.merge(&w.hist)
		if ends[i].After(last) {
			last = ends[i]
		}
	}
	// The window ends when the last request started in it completes.
	r.Elapsed = last.Sub(measureFrom)
	return r
}

// runLoad runs cfg: for each op, Rounds rounds, each round running the op
// against every target in turn (A, B, A, B…), then prints the merged
// results and, with two targets, the ratios A/B.
func runLoad(ctx context.Context, cfg loadConfig) (*report, error) {
	planned := time.Duration(len(cfg.Ops)*cfg.Rounds*len(cfg.Targets)) * (cfg.Warmup + cfg.Duration)
	if planned > time.Hour {
		return nil, errTooLong
	}
	targets := make([]*target, len(cfg.Targets))
	for i, tc := range cfg.Targets {
		t, err := newTarget(ctx, tc, cfg.Conns, cfg.Timeout, cfg.AllowRemote, cfg.UploadSize)
		if err != nil {
			return nil, err
		}
		defer t.close()
		targets[i] = t
	}
	fmt.Fprintf(cfg.Out, "load: %s; %d connections, %s warm-up + %s measured per run, %d round(s); about %s in all\n",
		strings.Join(cfg.Ops, ", "), cfg.Conns, cfg.Warmup, cfg.Duration, cfg.Rounds, planned.Round(time.Second))
	for _, t := range targets {
		fmt.Fprintf(cfg.Out, "  %s = %s (conversation %s, creates in %s)\n", t.Name, t.base, t.Conv, t.CreateConv)
	}
	if slices.Contains(cfg.Ops, "mix") {
		fmt.Fprintf(cfg.Out, "  mix = %s\n", cfg.Mix)
	}

	rep := &report{}
	for _, op := range cfg.Ops {
		for round := 1; round <= cfg.Rounds; round++ {
			for _, t := range targets {
				if err := t.prepare(ctx, cfg.Ops, cfg.Mix, cfg.Depth, cfg.Out); err != nil {
					return rep, err
				}
				if err := ctx.Err(); err != nil {
					return rep, err
				}
				var r *result
				if why, ok := t.unsupported[op]; ok {
					r = &result{Op: op, Target: t.Name, Unsupported: why}
				} else {
					r = runOne(ctx, t, op, cfg.Mix, cfg.Conns, cfg.Warmup, cfg.Duration)
				}
				r.Round = round
				rep.Runs = append(rep.Runs, r)
				printRun(cfg.Out, r, cfg.Rounds)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	printSummary(cfg.Out, rep, cfg.Ops, targets)
	return rep, nil
}

func printRun(out io.Writer, r *result, rounds int) {
	if r.Unsupported != "" {
		fmt.Fprintf(out, "%-6s %s round %d/%d: not run: %s\n", r.Op, r.Target, r.Round, rounds, r.Unsupported)
		return
	}
	line := fmt.Sprintf("%-6s %s round %d/%d: %9.1f req/s  p50 %s  p90 %s  p99 %s  errors %d",
		r.Op, r.Target, r.Round, rounds, r.rps(), ms(r.Hist.percentile(50)), ms(r.Hist.percentile(90)), ms(r.Hist.percentile(99)), r.Errors)
	if r.Bytes > 0 {
		line += fmt.Sprintf("  %.0f MiB/s", r.mbps())
	}
	fmt.Fprintln(out, line)
}

// printSummary prints, per op, each target's runs merged and, with two
// targets, the ratios A/B.
func printSummary(out io.Writer, rep *report, ops []string, targets []*target) {
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\ttarget\treq/s\trounds min–max\tp50\tp90\tp99\tmean\trequests\terrors\t")
	for _, op := range ops {
		var ms2 []*result
		for _, t := range targets {
			m := rep.merged(op, t.Name)
			ms2 = append(ms2, m)
			if m.Unsupported != "" {
				fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t\n", op, t.Name)
				continue
			}
			rate := fmt.Sprintf("%.1f", m.rps())
			if m.Bytes > 0 {
				rate += fmt.Sprintf(" (%.0f MiB/s)", m.mbps())
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f–%.0f\t%s\t%s\t%s\t%s\t%d\t%d\t\n", op, t.Name, rate,
				slices.Min(m.rpsRounds), slices.Max(m.rpsRounds),
				ms(m.Hist.percentile(50)), ms(m.Hist.percentile(90)), ms(m.Hist.percentile(99)), ms(m.Hist.mean()), m.OK+m.Errors, m.Errors)
		}
		if len(ms2) == 2 && ms2[0].Unsupported == "" && ms2[1].Unsupported == "" {
			a, b := ms2[0], ms2[1]
			fmt.Fprintf(tw, "%s\tA/B\t%s\t\t%s\t%s\t%s\t%s\t\t\t\n", op, ratio(a.rps(), b.rps()),
				ratio(a.Hist.percentile(50).Seconds(), b.Hist.percentile(50).Seconds()),
				ratio(a.Hist.percentile(90).Seconds(), b.Hist.percentile(90).Seconds()),
				ratio(a.Hist.percentile(99).Seconds(), b.Hist.percentile(99).Seconds()),
				ratio(a.Hist.mean().Seconds(), b.Hist.mean().Seconds()))
		}
	}
	_ = tw.Flush()

	// Errors, and why ops did not run.
	for _, op := range ops {
		for _, t := range targets {
			m := rep.merged(op, t.Name)
			if m.Unsupported != "" {
				fmt.Fprintf(out, "%s on %s: not run: %s\n", op, t.Name, m.Unsupported)
			}
			if m.Errors > 0 {
				keys := slices.Collect(maps.Keys(m.ErrorsBy))
				sort.Strings(keys)
				parts := make([]string, len(keys))
				for i, k := range keys {
					parts[i] = fmt.Sprintf("%s ×%d", k, m.ErrorsBy[k])
				}
				line := fmt.Sprintf("%s on %s: errors: %s", op, t.Name, strings.Join(parts, ", "))
				if m.FirstErr != nil {
					line += "; first: " + m.FirstErr.Error()
				}
				fmt.Fprintln(out, line)
			}
		}
	}
}

// ratio formats a/b.
func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// ms formats a latency in milliseconds.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}

// errInterrupted is returned by run when a signal stopped the load.
var errInterrupted = errors.New("interrupted")
