package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// Targets of the overload phase (docs/benchmarks.md, Overload).
const (
	overloadFirstRate     = 200
	targetAcceptedP99     = 50.0 // ms
	targetShedP99         = 10.0 // ms
	overloadCompletedPoll = time.Second
)

// errShed is a create answered 429 with a Retry-After.
var errShed = errors.New("shed: 429 with Retry-After")

// overloadPhase offers creates beyond what the production shape's one
// worker starts, with serve's per-tenant backlog bound set to
// OverloadBacklog: at 200/s, then at twice the rate the worker completed
// jobs during that first run. Each create must be accepted (p99 at most
// targetAcceptedP99) or shed with 429 and Retry-After (p99 at most
// targetShedP99); none may fail otherwise or time out.
func (b *bench) overloadPhase(ctx context.Context, rep *report) error {
	rep.shape = "production"
	defer func() { rep.shape = "dev" }()
	rate := overloadFirstRate
	var errs []error
	for run := 1; run <= 2; run++ {
		completed, err := b.overloadRun(ctx, rep, run, rate)
		if err != nil {
			errs = append(errs, err)
		}
		if completed <= 0 {
			break
		}
		rate = int(2*completed + 0.5)
	}
	return errors.Join(errs...)
}

// overloadRun runs one rate on a fresh deployment and returns the jobs
// per second the worker completed meanwhile.
func (b *bench) overloadRun(ctx context.Context, rep *report, run, rate int) (float64, error) {
	l, err := b.startProductionRun(ctx, rep, fmt.Sprintf("overload-%d", run), 1,
		fmt.Sprintf("GATEWAY_MAX_BACKLOG_PER_TENANT=%d", b.opts.OverloadBacklog))
	if err != nil {
		return 0, err
	}
	defer l.close()
	st, err := store.Open(ctx, l.prod.storeURL)
	if err != nil {
		return 0, err
	}
	defer func() { _ = st.Close() }()
	completedJobs := func() int64 {
		_, n, err := st.ListJobs(ctx, store.JobFilter{Status: jobs.StatusCompleted}, 0, 1)
		if err != nil {
			return 0
		}
		return n
	}

	// Unmeasured, as in the create phase: the first requests set up
	// connections and caches.
	for range 20 {
		if _, err := l.gw.submit(ctx); err != nil {
			return 0, fmt.Errorf("overload warm-up: %w", err)
		}
	}
	d := b.opts.OverloadFor
	b.logf("overload: %d creates/s offered for %s, backlog bound %d a tenant", rate, d, b.opts.OverloadBacklog)
	before, start := completedJobs(), time.Now()
	cpu := readCPU(l.procs)
	samples := openLoop(ctx, rate, d, func(ctx context.Context) (string, error) { return l.gw.submitOrShed(ctx) })
	used := cpu.since(0, l.procs)
	completed := float64(completedJobs()-before) / time.Since(start).Seconds()

	var accepted, shed []time.Duration
	var failed []string
	failures := 0
	for _, s := range samples {
		switch {
		case s.err == nil:
			accepted = append(accepted, s.lat)
		case errors.Is(s.err, errShed):
			shed = append(shed, s.lat)
		default:
			failures++
			if len(failed) < 3 {
				failed = append(failed, s.err.Error())
			}
		}
	}
	b.logOverloadSlices(samples, overloadSlice)
	acc, sh := summarise(accepted, 0), summarise(shed, 0)
	accPass := failures == 0 && (len(accepted) == 0 || acc.P99 <= targetAcceptedP99)
	shedPass := failures == 0 && (len(shed) == 0 || sh.P99 <= targetShedP99)
	section := fmt.Sprintf("overload, run %d: %d/s offered for %s", run, rate, d)
	rep.add(row{Section: "overload", Key: fmt.Sprintf("overload/%d/accepted", run), System: "gateway", Measure: section + ", accepted (202)",
		Offered: float64(rate), Rate: float64(len(accepted)) / d.Seconds(), Latency: acc,
		Target: fmt.Sprintf("p99 ≤ %.0f ms, no failure", targetAcceptedP99), Pass: &accPass})
	rep.add(row{Section: "overload", Key: fmt.Sprintf("overload/%d/shed", run), System: "gateway", Measure: "… shed (429, Retry-After)",
		Rate: float64(len(shed)) / d.Seconds(), Latency: sh,
		Target: fmt.Sprintf("p99 ≤ %.0f ms, no failure", targetShedP99), Pass: &shedPass})
	rep.add(row{Section: "overload", System: "gateway", Measure: "… failed or timed out",
		Latency: stats{N: failures, Errors: failures}, ErrorSamples: failed})
	rep.addInfo("overload", fmt.Sprintf("run %d: jobs completed meanwhile", run), "gateway", fmt.Sprintf("%.1f/s", completed))
	if used != nil {
		rep.addInfo("overload", fmt.Sprintf("run %d: cores used", run), "gateway", fmt.Sprintf("%s; the load generator %.2f, other work %.2f (machine %.0f %% busy)",
			formatCores(used.Cores), used.BenchCores, used.OtherCores, 100*used.MachineBusy))
	}
	if !accPass || !shedPass {
		return completed, fmt.Errorf("overload at %d/s: accepted p99 %.1f ms, shed p99 %.1f ms, %d failed (targets %.0f ms, %.0f ms, none)",
			rate, acc.P99, sh.P99, failures, targetAcceptedP99, targetShedP99)
	}
	return completed, nil
}

// overloadSlice is the span of each line of an overload run's log: when
// in the run its slow answers came.
const overloadSlice = 5 * time.Second

// logOverloadSlices logs, for each slice of the run by when its creates
// were due, how many were accepted and shed, and their p99s.
func (b *bench) logOverloadSlices(samples []sample, slice time.Duration) {
	if len(samples) == 0 {
		return
	}
	first := samples[0].due
	type part struct{ accepted, shed []time.Duration }
	var parts []part
	for _, s := range samples {
		i := int(s.due.Sub(first) / slice)
		for len(parts) <= i {
			parts = append(parts, part{})
		}
		switch {
		case s.err == nil:
			parts[i].accepted = append(parts[i].accepted, s.lat)
		case errors.Is(s.err, errShed):
			parts[i].shed = append(parts[i].shed, s.lat)
		}
	}
	for i, p := range parts {
		acc, sh := summarise(p.accepted, 0), summarise(p.shed, 0)
		b.logf("overload: %3.0f s: accepted %4d, p50 %6.1f, p99 %6.1f ms; shed %4d, p50 %5.1f, p99 %5.1f ms",
			(time.Duration(i) * slice).Seconds(), acc.N, acc.P50, acc.P99, sh.N, sh.P50, sh.P99)
	}
}

// submitOrShed creates a job: nil when it is accepted, errShed when it is
// shed with 429 and a Retry-After, another error otherwise.
func (s *gatewaySystem) submitOrShed(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/v1/llm-tasks", strings.NewReader(jobBody))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return "", nil
	case resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "":
		return "", errShed
	}
	return "", fmt.Errorf("POST /v1/llm-tasks: %d %s", resp.StatusCode, truncate(body))
}
