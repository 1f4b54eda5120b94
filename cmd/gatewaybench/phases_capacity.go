package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Peak RSS targets (docs/benchmarks.md, Targets) by shape and process; the
// production worker's is read, not checked.
var targetPeakRSS = map[string]int64{"dev gateway": 250 << 20, "production serve": 100 << 20}

// memory reads the memory of the gateway's processes (production: built as
// deploy/Dockerfile builds them) with MemoryJobs jobs of MemoryDelay in
// flight, and their peak (VmHWM) 5 s later.
func (b *bench) memory(ctx context.Context, shape string) error {
	o := b.opts
	d, err := b.deploy(ctx, shape, shape+"-memory", deploySpec{workers: 1, latency: o.MemoryDelay, nodev: shape == "production"})
	if err != nil {
		return err
	}
	defer d.close()
	procs := slices.DeleteFunc(d.measured(), func(p *process) bool { return p.name == "temporal" })
	gw, err := d.gateway(ctx, "bench", false)
	if err != nil {
		return err
	}
	b.logf("memory: submitting %d jobs", o.MemoryJobs)
	start := time.Now()
	created, errs := split(closedLoop(ctx, 16, time.Hour, o.MemoryJobs, gw.submit))
	processing, deadline := 0, start.Add(o.MemoryDelay)
	inFlight := make([]memory, len(procs))
	for ctx.Err() == nil && time.Now().Before(deadline) && processing < len(created) {
		var list jobList
		if err := gw.api.get(ctx, "/v1/jobs?filter[status]=processing&page[size]=1", &list); err != nil {
			return err
		}
		if list.Meta.Total >= processing {
			processing = list.Meta.Total
			for i, p := range procs {
				inFlight[i], _ = readMemory(p.pid())
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	b.logf("memory: %d jobs processing at once after %s", processing, time.Since(start).Round(time.Second))
	if processing < o.MemoryJobs {
		errs = append(errs, fmt.Sprintf("only %d of %d jobs were processing at once; raise -memory-latency", processing, o.MemoryJobs))
	}
	// Let them run a little: heartbeats and progress updates of every job.
	if err := sleep(ctx, min(5*time.Second, time.Until(deadline))); err != nil {
		return err
	}
	for i, p := range procs {
		final, err := readMemory(p.pid())
		if err != nil {
			return err
		}
		x := row{Section: "memory", Key: "memory/peak-" + p.name, System: "gateway", Value: mib(final.Peak), Bytes: final.Peak,
			Measure: fmt.Sprintf("%s: peak RSS (VmHWM), %d jobs in flight", p.name, processing),
			Latency: stats{N: len(created), Errors: len(errs)}, ErrorSamples: firstN(errs, 3)}
		if target, ok := targetPeakRSS[shape+" "+p.name]; ok {
			x.judge(final.Peak < target, fmt.Sprintf("< %d MiB", target>>20))
		}
		b.rep.add(x)
		b.rep.note("memory", "gateway", p.name+": RSS with the jobs processing", "%s = %s anonymous + %s file-backed",
			mib(inFlight[i].RSS), mib(inFlight[i].Anon), mib(inFlight[i].File))
	}
	return nil
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// Overload (docs/benchmarks.md, Overload): the first run's offered rate,
// the targets, and the slices of a run's log.
const (
	overloadFirstRate = 200
	targetAcceptedP99 = 50.0 // ms
	targetShedP99     = 10.0 // ms
	overloadSlice     = 5 * time.Second
)

// overload offers creates beyond what one worker starts, at 200/s and
// then twice the rate it completed; each must be accepted or shed with
// 429 and Retry-After within its target (docs/benchmarks.md, Overload).
func (b *bench) overload(ctx context.Context, shape string) error {
	rate := overloadFirstRate
	var errs []error
	for run := 1; run <= 2; run++ {
		completed, err := b.overloadRun(ctx, shape, run, rate)
		errs = append(errs, err)
		if completed <= 0 {
			break
		}
		rate = int(2*completed + 0.5)
	}
	return errors.Join(errs...)
}

// overloadRun runs one rate on a fresh deployment, after 20 unmeasured
// creates, and returns the jobs per second the worker completed meanwhile.
func (b *bench) overloadRun(ctx context.Context, shape string, run, rate int) (float64, error) {
	dur := b.opts.OverloadFor
	d, err := b.deploy(ctx, shape, fmt.Sprintf("overload-%d", run), deploySpec{workers: 1,
		env: []string{fmt.Sprintf("GATEWAY_MAX_BACKLOG_PER_TENANT=%d", b.opts.OverloadBacklog)}})
	if err != nil {
		return 0, err
	}
	defer d.close()
	db, gw, err := d.storeAndGateway(ctx)
	if err != nil {
		return 0, err
	}
	if _, errs := split(closedLoop(ctx, 1, time.Hour, 20, gw.submit)); len(errs) > 0 {
		return 0, fmt.Errorf("warm-up: %s", errs[0])
	}
	b.logf("overload: %d creates/s offered for %s, backlog bound %d a tenant", rate, dur, b.opts.OverloadBacklog)
	before, _ := countJobs(ctx, db)
	start, cpu := time.Now(), readCPU(d.measured())
	samples := openLoop(ctx, rate, dur, gw.createOrShed)
	used := cpu.since(d.measured()).use(0)
	after, _ := countJobs(ctx, db)
	completed := float64(after.completed-before.completed) / time.Since(start).Seconds()

	for at := start; at.Before(start.Add(dur)); at = at.Add(overloadSlice) {
		in := slices.DeleteFunc(slices.Clone(samples), func(s sample) bool { return s.due.Before(at) || !s.due.Before(at.Add(overloadSlice)) })
		a, _ := summary(outcome(in, ""))
		s, _ := summary(outcome(in, "shed"))
		b.logf("overload: %3.0f s: accepted %4d, p50 %6.1f, p99 %6.1f ms; shed %4d, p50 %5.1f, p99 %5.1f ms",
			at.Sub(start).Seconds(), a.N, a.P50, a.P99, s.N, s.P50, s.P99)
	}
	_, failed := split(samples)
	section, p99s, pass := fmt.Sprintf("overload, run %d: %d/s offered for %s", run, rate, dur), [2]float64{}, true
	for i, o := range []struct {
		kind, measure string
		samples       []sample
		target        float64
	}{{"accepted", "accepted (202)", outcome(samples, ""), targetAcceptedP99}, {"shed", "shed (429, Retry-After)", outcome(samples, "shed"), targetShedP99}} {
		x := row{Section: section, Key: fmt.Sprintf("overload/%d/%s", run, o.kind), System: "gateway", Measure: o.measure,
			Offered: float64(rate), Rate: float64(len(o.samples)) / dur.Seconds()}
		x.Latency, _ = summary(o.samples)
		x.judge(len(failed) == 0 && x.Latency.P99 <= o.target, fmt.Sprintf("p99 ≤ %.0f ms, no failure", o.target))
		b.rep.add(x)
		p99s[i], pass = x.Latency.P99, pass && *x.Pass
	}
	b.rep.add(row{Section: section, System: "gateway", Measure: "failed or timed out", Latency: stats{Errors: len(failed)}, ErrorSamples: firstN(failed, 3)})
	b.rep.note(section, "gateway", "jobs completed meanwhile", "%.1f/s", completed)
	if used != nil {
		b.rep.note(section, "gateway", "cores used", "%s; the load generator %.2f, other work %.2f", formatCores(used.Cores), used.BenchCores, used.OtherCores)
	}
	if !pass {
		return completed, fmt.Errorf("overload at %d/s: accepted p99 %.1f ms, shed p99 %.1f ms, %d failed (targets %.0f ms, %.0f ms, none)",
			rate, p99s[0], p99s[1], len(failed), targetAcceptedP99, targetShedP99)
	}
	return completed, nil
}

// createOrShed creates a job of the gateway's and returns "" when it is
// accepted and "shed" when it is refused with 429 and Retry-After, the
// gateway's answer to a tenant over its backlog bound.
func (s *system) createOrShed(ctx context.Context) (string, error) {
	resp, err := s.api.call(ctx, http.MethodPost, "/v1/llm-tasks", []byte(jobBody), http.StatusAccepted, nil)
	if resp != nil && resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "" {
		return "shed", nil
	}
	return "", err
}

// outcome is the samples of createOrShed that returned id: "" accepted,
// "shed" shed.
func outcome(samples []sample, id string) []sample {
	return slices.DeleteFunc(slices.Clone(samples), func(s sample) bool { return s.err != nil || s.id != id })
}

// storeAndGateway are the production store's database and the gateway.
func (d *deployment) storeAndGateway(ctx context.Context) (*sql.DB, *system, error) {
	db, err := sql.Open("pgx", d.storeURL)
	if err != nil {
		return nil, nil, err
	}
	d.undo = append(d.undo, func() { _ = db.Close() })
	gw, err := d.gateway(ctx, "bench", false)
	return db, gw, err
}

// formatCores lists cores used by process: "postgres 0.41, serve 0.30, …".
func formatCores(cores map[string]float64) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(cores)) {
		out = append(out, fmt.Sprintf("%s %.2f", name, cores[name]))
	}
	return strings.Join(out, ", ")
}

// jobCounts are the store's jobs by status, from job_counts.
type jobCounts struct{ pending, processing, completed, failed int }

func (c jobCounts) finished() int { return c.completed + c.failed }

func countJobs(ctx context.Context, db *sql.DB) (c jobCounts, err error) {
	err = db.QueryRowContext(ctx, `SELECT coalesce(sum(n) FILTER (WHERE status = 'pending'), 0), coalesce(sum(n) FILTER (WHERE status = 'processing'), 0),
		coalesce(sum(n) FILTER (WHERE status = 'completed'), 0), coalesce(sum(n) FILTER (WHERE status = 'failed'), 0) FROM job_counts`).
		Scan(&c.pending, &c.processing, &c.completed, &c.failed)
	return c, err
}

// scaleoutConfig is a worker setup: workers, and each one's workflow task
// and local activity slots (0: the SDK's defaults).
type scaleoutConfig struct {
	Workers int `json:"workers"`
	Slots   int `json:"slots"`
}

// key is the setup as -scaleout-configs writes it.
func (c scaleoutConfig) key() string {
	if c.Slots > 0 {
		return fmt.Sprintf("%dx%d", c.Workers, c.Slots)
	}
	return strconv.Itoa(c.Workers)
}

// parseScaleoutConfigs reads -scaleout-configs: <workers>[x<slots>] each.
func parseScaleoutConfigs(setups []string) ([]scaleoutConfig, error) {
	var out []scaleoutConfig
	for _, setup := range setups {
		workers, slots, hasSlots := strings.Cut(setup, "x")
		c := scaleoutConfig{}
		var err1, err2 error
		if c.Workers, err1 = strconv.Atoi(workers); hasSlots {
			c.Slots, err2 = strconv.Atoi(slots)
		}
		if err1 != nil || err2 != nil || c.Workers < 1 || (hasSlots && c.Slots < 2) {
			return nil, fmt.Errorf("-scaleout-configs: %q is not <workers>[x<slots>], at least 1 worker and 2 slots", setup)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("-scaleout-configs: name at least one setup, such as 1x8,2x8,1")
	}
	return out, nil
}

// scaleoutWarmup is how long a new setup runs before it is measured.
const scaleoutWarmup = 10 * time.Second

// scaleout keeps ScaleoutJobs jobs of ScaleoutLatency in flight on one
// deployment and measures the jobs completed per second of each worker
// setup in turn (docs/benchmarks.md, Scale out).
func (b *bench) scaleout(ctx context.Context, shape string) error {
	o := b.opts
	d, err := b.deploy(ctx, shape, "scaleout", deploySpec{latency: o.ScaleoutLatency})
	if err != nil {
		return err
	}
	defer d.close()
	db, gw, err := d.storeAndGateway(ctx)
	if err != nil {
		return err
	}
	feedCtx, stopFeeding := context.WithCancel(ctx)
	var feeding sync.WaitGroup
	defer func() { stopFeeding(); feeding.Wait() }()
	var submitted, failed atomic.Int64
	// 8 clients create as many jobs as finished, every 50 ms.
	feed := func() {
		for feedCtx.Err() == nil {
			c, err := countJobs(feedCtx, db)
			if need := o.ScaleoutJobs - (int(submitted.Load()) - c.finished()); err == nil && need > 0 {
				for _, s := range closedLoop(feedCtx, 8, time.Hour, need, gw.submit) {
					if s.err == nil {
						submitted.Add(1)
					} else if feedCtx.Err() == nil {
						failed.Add(1)
					}
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for i, c := range o.ScaleoutConfigs {
		for range c.Workers {
			if err := d.addWorker(ctx, "--worker-stop-timeout", "5s", "--max-concurrent-workflow-tasks", strconv.Itoa(c.Slots),
				"--max-concurrent-local-activities", strconv.Itoa(c.Slots)); err != nil {
				return err
			}
		}
		d.stopWorkers(c.Workers)
		if i == 0 {
			feeding.Go(feed)
		}
		b.logf("scaleout: setup %s (workers x slots), warm-up %s, then measured for %s", c.key(), scaleoutWarmup, o.ScaleoutWindow)
		if err := sleep(ctx, scaleoutWarmup); err != nil {
			return err
		}
		before, err1 := countJobs(ctx, db)
		scans, err2 := tableScans(ctx, db, "job_starts")
		cpu := readCPU(d.measured())
		if err := errors.Join(err1, err2, sleep(ctx, o.ScaleoutWindow)); err != nil {
			return err
		}
		after, err1 := countJobs(ctx, db)
		scans1, err2 := tableScans(ctx, db, "job_starts")
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		done := after.finished() - before.finished()
		x := row{Section: "scale out", Key: "scaleout/" + c.key(), System: "gateway", Rate: float64(done) / o.ScaleoutWindow.Seconds(),
			Measure: fmt.Sprintf("jobs completed per second, %d in flight, %s calls, setup %s (workers x slots)", o.ScaleoutJobs, o.ScaleoutLatency, c.key()),
			Latency: stats{N: done, Errors: after.failed - before.failed}, CPU: cpu.since(d.measured()).use(done)}
		b.rep.add(x)
		b.rep.note("scale out", "gateway", c.key()+": job_starts scans (index + seq) per job", "%.2f", (scans1-scans)/float64(max(done, 1)))
		if x.CPU != nil {
			b.rep.note("scale out", "gateway", c.key()+": cores used", "%s; other work %.2f", formatCores(x.CPU.Cores), x.CPU.OtherCores)
		}
		b.logf("scaleout: %s: %.1f jobs/s, %d pending and %d processing at the end", c.key(), x.Rate, after.pending, after.processing)
	}
	b.rep.add(row{Section: "scale out", Key: "scaleout/creates", System: "gateway", Measure: "creates of the scale-out phase",
		Latency: stats{N: int(submitted.Load()), Errors: int(failed.Load())}})
	return nil
}
