package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

const (
	drainTimeout = 5 * time.Minute      // bounds the wait for a phase's jobs to complete
	pollEvery    = 5 * time.Millisecond // how often the polling client GETs its job
)

// e2e measures the gateway, the floor and the baseline end to end on one
// deployment: one at a time, sustained, and in production with 2 workers.
func (b *bench) e2e(ctx context.Context, shape string) error {
	o := b.opts
	d, err := b.deploy(ctx, shape, shape+"-e2e", deploySpec{workers: 1})
	if err != nil {
		return err
	}
	defer d.close()
	gw, err1 := d.gateway(ctx, "bench", true)
	bare, err2 := d.bareSystems(ctx)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	systems := []*system{gw, bare["floor"], bare["baseline"]}
	b.logf("e2e: warm-up")
	for _, sys := range systems {
		if _, errs := split(d.drain(ctx, sys, openLoop(ctx, 10, 3*time.Second, sys.submit))); len(errs) > 0 {
			return fmt.Errorf("warm-up of %s: %s", sys.name, errs[0])
		}
	}
	d.inTurns(ctx, systems, 1, max(1, o.SerialJobs/2), "e2e/serial", "submit→completed, one at a time", d.complete)
	d.inTurns(ctx, []*system{gw}, 1, max(10, o.SerialJobs/3), "e2e/serial-get",
		fmt.Sprintf("submit→completed, one at a time, seen by GET every %s", pollEvery), poll)
	sustained := fmt.Sprintf("jobs completed per second, %d in flight", o.Sustained)
	d.inTurns(ctx, systems, o.Sustained, 0, "e2e/sustained", sustained, d.complete)
	if shape == "production" {
		if err := d.addWorker(ctx); err != nil {
			return err
		}
		d.inTurns(ctx, []*system{gw}, o.Sustained, 0, "e2e/sustained/2-gateway-workers", sustained+", 2 gateway workers", d.complete)
	}
	return nil
}

// complete submits a job and waits until its workflow completed.
func (d *deployment) complete(ctx context.Context, sys *system) (string, error) {
	id, err := sys.submit(ctx)
	if err == nil {
		_, err = awaitClose(ctx, d.obs, sys, id)
	}
	return id, err
}

// poll submits a job and GETs it every pollEvery until it reads completed.
func poll(ctx context.Context, sys *system) (string, error) {
	start := time.Now()
	id, err := sys.submit(ctx)
	for err == nil {
		var doc struct {
			Data struct {
				Attributes struct {
					Status string `json:"status"`
				} `json:"attributes"`
			} `json:"data"`
		}
		if err = sys.api.get(ctx, "/v1/llm-tasks/"+id, &doc); err != nil || doc.Data.Attributes.Status == "completed" {
			break
		}
		if doc.Data.Attributes.Status == "failed" || time.Since(start) > time.Minute {
			err = fmt.Errorf("job %s %s after %s", id, doc.Data.Attributes.Status, time.Since(start).Round(time.Millisecond))
		}
		time.Sleep(pollEvery)
	}
	return "", err
}

// inTurns runs op with clients jobs in flight, n jobs or (n = 0) half of
// SustainedFor per turn, the systems taking turns (a, b, c, c, b, a) so
// that the machine's background load weighs on all alike.
func (d *deployment) inTurns(ctx context.Context, systems []*system, clients, n int, key, measure string,
	op func(context.Context, *system) (string, error)) {
	dur := time.Hour
	if n == 0 {
		dur = d.b.opts.SustainedFor / 2
	}
	type tally struct {
		samples []sample
		cpu     cpuTimes
		done    int
		seconds float64
	}
	tallies := map[string]tally{}
	order := slices.Concat(systems, systems)
	slices.Reverse(order[len(systems):])
	for _, sys := range order {
		d.b.logf("e2e: %s: %s", sys.name, measure)
		t := tallies[sys.name]
		start, cpu := time.Now(), readCPU(d.measured())
		samples := closedLoop(ctx, clients, dur, n, func(ctx context.Context) (string, error) { return op(ctx, sys) })
		t.cpu.add(cpu.since(d.measured()), 1)
		t.samples = append(t.samples, samples...)
		done, secs := steadyCount(samples, start.Add(dur))
		t.done, t.seconds = t.done+done, t.seconds+secs
		tallies[sys.name] = t
	}
	for _, sys := range systems {
		t := tallies[sys.name]
		ok, _ := split(t.samples)
		x := row{Section: "end to end", Key: key, System: sys.name, Measure: measure, CPU: t.cpu.use(len(ok))}
		x.Latency, x.ErrorSamples = summary(t.samples)
		if clients > 1 && t.seconds > 0 {
			x.Rate = float64(t.done) / t.seconds
		}
		d.b.rep.add(x)
		if len(ok) > 0 && ok[0].id != "" {
			d.breakDown(ctx, strings.TrimPrefix(measure, "submit→completed, "), sys, ok)
		}
	}
}

// drain waits until the workflows of the successful samples have closed:
// their latency becomes submit→completed.
func (d *deployment) drain(ctx context.Context, sys *system, samples []sample) []sample {
	ctx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	out := slices.Clone(samples)
	forEach(out, 64, func(i int, s sample) {
		if s.err == nil {
			var at time.Time
			at, out[i].err = awaitClose(ctx, d.obs, sys, s.id)
			out[i].lat = at.Sub(s.due)
		}
	})
	return out
}

// create runs each system at each offered rate (open loop), then with
// MaxWorkers clients back to back, each run on a fresh deployment (no
// inherited backlog); the gateway at targetCreateRate runs CreateRuns times.
func (b *bench) create(ctx context.Context, shape string) error {
	rates := b.opts.Rates
	if b.opts.MaxWorkers > 0 {
		rates = append(slices.Clip(rates), 0) // 0: maximum
	}
	for _, rate := range rates {
		for _, name := range []string{"gateway", "floor", "baseline"} {
			runs := 1
			if rate == targetCreateRate && name == "gateway" {
				runs = b.opts.CreateRuns
			}
			spread := row{Section: "create", Key: fmt.Sprintf("create/%d/runs", rate), System: name,
				Measure: fmt.Sprintf("create at %d/s offered, p99 of each of %d runs", rate, runs)}
			for run := 1; run <= runs; run++ {
				x, err := b.createRun(ctx, shape, name, rate)
				if err != nil {
					return err
				}
				if runs > 1 {
					x.Measure += fmt.Sprintf(", run %d of %d", run, runs)
				}
				b.rep.add(x)
				spread.RunsP99, spread.RunsErrors = append(spread.RunsP99, x.Latency.P99), spread.RunsErrors+x.Latency.Errors
			}
			if runs > 1 {
				spread.Value = fmt.Sprintf("p99 %.1f–%.1f ms %v", slices.Min(spread.RunsP99), slices.Max(spread.RunsP99), spread.RunsP99)
				spread.judge(slices.Max(spread.RunsP99) < targetCreateP99MS, fmt.Sprintf("every p99 < %d ms", targetCreateP99MS))
				b.rep.add(spread)
			}
		}
	}
	return nil
}

// createRun is one create phase on a fresh deployment, after 20
// unmeasured creates; the jobs are not waited for.
func (b *bench) createRun(ctx context.Context, shape, name string, rate int) (row, error) {
	dur := b.opts.Duration
	d, err := b.deploy(ctx, shape, fmt.Sprintf("%s-create-%d-%s", shape, rate, name), deploySpec{workers: 1})
	if err != nil {
		return row{}, err
	}
	defer d.close()
	var sys *system
	if name == "gateway" {
		sys, err = d.gateway(ctx, "bench", false)
	} else {
		var bare map[string]*system
		bare, err = d.bareSystems(ctx)
		sys = bare[name]
	}
	if err == nil {
		if _, errs := split(closedLoop(ctx, 1, time.Hour, 20, sys.submit)); len(errs) > 0 {
			err = fmt.Errorf("warm-up: %s", errs[0])
		}
	}
	if err != nil {
		return row{}, err
	}
	x := row{Section: "create", Key: fmt.Sprintf("create/%d", rate), System: name, Offered: float64(rate),
		Measure: fmt.Sprintf("create at %d/s offered", rate)}
	if rate == 0 {
		x.Key, x.Measure = "create/max", fmt.Sprintf("create, maximum (%d clients)", b.opts.MaxWorkers)
	}
	b.logf("create: %s: %s for %s", name, x.Measure, dur)
	cpu := readCPU(d.measured())
	var samples, shed []sample
	switch {
	case rate > 0:
		samples = openLoop(ctx, rate, dur, sys.submit)
	case name == "gateway":
		// Back to back, the clients soon fill the tenant's backlog bound,
		// and the gateway sheds as it should: those 429s are reported
		// apart, not as failures (docs/benchmarks.md, cmd/gatewaybench).
		samples = closedLoop(ctx, b.opts.MaxWorkers, dur, 0, sys.createOrShed)
		samples, shed = slices.DeleteFunc(slices.Clone(samples), func(s sample) bool { return s.err == nil && s.id == "shed" }), outcome(samples, "shed")
	default:
		samples = closedLoop(ctx, b.opts.MaxWorkers, dur, 0, sys.submit)
	}
	ok, _ := split(samples)
	x.Latency, x.ErrorSamples = summary(samples)
	x.Rate, x.CPU = float64(len(ok))/dur.Seconds(), cpu.since(d.measured()).use(len(ok))
	if len(shed) > 0 {
		s, _ := summary(shed)
		b.rep.note("create", name, "shed at the maximum", "%d creates answered 429 with Retry-After (%.1f/s), p50 %.1f, p99 %.1f ms",
			s.N, float64(s.N)/dur.Seconds(), s.P50, s.P99)
	}
	if rate == targetCreateRate && name == "gateway" {
		x.judge(x.Latency.P99 < targetCreateP99MS, fmt.Sprintf("p99 < %d ms", targetCreateP99MS))
	}
	return x, nil
}
