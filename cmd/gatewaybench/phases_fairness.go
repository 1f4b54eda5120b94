package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// Fairness between tenants (docs/benchmarks.md): tenant B's ten jobs,
// submitted right after tenant A's thousand, start at most this many
// times later (p95) than on an idle gateway.
const (
	fairnessTenantJobs = 10
	targetFairnessP95  = 2.0
)

// fairnessPhase starts a gateway whose provider calls take FairnessDelay.
// Tenant B submits ten jobs on the idle gateway; then tenant A submits
// FairnessJobs, more than the gateway runs at once, and B ten more. A
// job's time to start is created_at → processed_at of its document. The
// phase fails when B's p95 behind A exceeds targetFairnessP95 times its
// idle p95.
func (b *bench) fairnessPhase(ctx context.Context, rep *report) error {
	o := b.opts
	dbURL, storeKind, err := b.storeURL(ctx, "fairness")
	if err != nil {
		return err
	}
	b.logf("fairness: starting gateway dev (store %s, sandbox latency %s)", storeKind, o.FairnessDelay)
	g, err := startGateway(ctx, b.bin, b.work, gatewaySpec{name: "fairness", databaseURL: dbURL,
		catalog: catalog("bench-fair", o.FairnessDelay), pprof: o.ProfileDir != ""})
	if err != nil {
		return err
	}
	defer g.stop()
	obs, err := dial(ctx, g.temporal)
	if err != nil {
		return err
	}
	defer obs.Close()
	if dbURL == "" {
		dbURL = "sqlite:" + filepath.Join(g.dataDir, "gateway.db")
	}
	results, _, closeResults, err := jobResults(ctx, dbURL)
	if err != nil {
		return err
	}
	defer closeResults()
	tenants := map[string]*gatewaySystem{}
	for _, t := range []string{"bench-a", "bench-b"} {
		token, err := g.token(t, benchScopes)
		if err != nil {
			return err
		}
		tenants[t] = &gatewaySystem{base: g.url(""), token: token, hc: b.hc, results: results}
	}
	a, tb := tenants["bench-a"], tenants["bench-b"]

	b.logf("fairness: tenant B submits %d jobs on the idle gateway", fairnessTenantJobs)
	idleJobs, _ := b.timesToStart(ctx, obs, tb, g)

	b.logf("fairness: tenant A submits %d jobs (16 clients), then tenant B %d", o.FairnessJobs, fairnessTenantJobs)
	floodStart := time.Now()
	aJobs := make([]sample, o.FairnessJobs)
	forEach(aJobs, 16, func(i int, _ sample) {
		due := time.Now()
		id, err := a.submit(ctx)
		aJobs[i] = sample{due: due, lat: time.Since(due), id: id, err: err}
	})
	submitted := time.Since(floodStart)
	floodJobs, toWorkflow := b.timesToStart(ctx, obs, tb, g)

	b.logf("fairness: waiting for tenant A's jobs to complete")
	aLats, aErrs, aFirst := split(aJobs)
	var last time.Time
	waits := make([]sample, 0, len(aJobs))
	for _, s := range aJobs {
		if s.err == nil {
			waits = append(waits, s)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, o.DrainTimeout)
	defer cancel()
	forEach(waits, 16, func(i int, s sample) {
		closed, err := awaitClose(wctx, obs, a, s.id)
		waits[i].err = err
		waits[i].due = closed
	})
	_, closeErrs, closeFirst := split(waits)
	for _, s := range waits {
		if s.err == nil && s.due.After(last) {
			last = s.due
		}
	}
	done := len(waits) - closeErrs
	var thr float64
	if done > 0 {
		thr = float64(done) / last.Sub(floodStart).Seconds()
	}

	for _, d := range []struct {
		phase string
		jobs  []sample
	}{{"fairness: tenant A", aJobs}, {"fairness: tenant B behind A", floodJobs}} {
		if bd, err := breakDown(ctx, obs, d.phase, "gateway", traces(d.jobs), 50, false); err == nil {
			rep.Breakdowns = append(rep.Breakdowns, *bd)
		} else {
			b.logf("breakdown of %s: %v", d.phase, err)
		}
	}
	idle, idleN, idleErrs := split(idleJobs)
	flooded, floodN, floodErrs := split(floodJobs)
	idleStats, floodStats := summarise(idle, idleN), summarise(flooded, floodN)
	ratio := 0.0
	if idleStats.P95 > 0 {
		ratio = floodStats.P95 / idleStats.P95
	}
	pass := ratio > 0 && ratio <= targetFairnessP95 && idleStats.Errors+floodStats.Errors == 0
	rep.add(row{Section: "fairness", Key: "fairness/idle", System: "gateway",
		Measure: fmt.Sprintf("tenant B: %d jobs' created_at → processed_at, idle gateway", fairnessTenantJobs),
		Latency: idleStats, ErrorSamples: idleErrs})
	rep.add(row{Section: "fairness", Key: "fairness/flooded", System: "gateway",
		Measure: fmt.Sprintf("… right after tenant A's %d", o.FairnessJobs), Value: fmt.Sprintf("p95 %.2f× idle", ratio),
		Latency: floodStats, Target: fmt.Sprintf("p95 ≤ %.0f× idle", targetFairnessP95), Pass: &pass, ErrorSamples: floodErrs})
	rep.add(row{Section: "fairness", System: "gateway", Measure: "… of which created_at → workflow started",
		Latency: summarise(toWorkflow, 0)})
	rep.add(row{Section: "fairness", Key: "fairness/a-create", System: "gateway",
		Measure: fmt.Sprintf("tenant A: create %d jobs (16 clients)", o.FairnessJobs), Rate: float64(len(aLats)) / submitted.Seconds(),
		Latency: summarise(aLats, aErrs), ErrorSamples: aFirst})
	rep.add(row{Section: "fairness", Key: "fairness/a-completed", System: "gateway",
		Measure: fmt.Sprintf("tenant A: %d jobs completed, first create → last completed", done), Rate: thr,
		Latency: stats{N: done, Errors: closeErrs}, ErrorSamples: closeFirst})
	rep.addInfo("fairness", "sandbox latency of the provider calls", "gateway", o.FairnessDelay.String())
	rep.Headline["dev_fairness_b_p95_vs_idle"] = ratio
	if !pass {
		return fmt.Errorf("tenant B's p95 time to start behind tenant A's %d jobs is %.1f ms, %.2f× its idle %.1f ms (target ≤ %.0f×)",
			o.FairnessJobs, floodStats.P95, ratio, idleStats.P95, targetFairnessP95)
	}
	return nil
}

// timesToStart submits fairnessTenantJobs jobs as sys at once, waits
// for them to complete and returns them with each one's time to start
// (created_at → processed_at) as latency, and the times from created_at
// to their workflows starting.
func (b *bench) timesToStart(ctx context.Context, obs client.Client, sys *gatewaySystem, g *process) (jobs []sample, toWorkflow []time.Duration) {
	jobs = make([]sample, fairnessTenantJobs)
	forEach(jobs, len(jobs), func(i int, _ sample) {
		due := time.Now()
		id, err := sys.submit(ctx)
		jobs[i] = sample{due: due, id: id, err: err}
	})
	wctx, cancel := context.WithTimeout(ctx, b.opts.DrainTimeout)
	defer cancel()
	wf := make([]time.Duration, len(jobs))
	forEach(jobs, len(jobs), func(i int, s sample) {
		if s.err != nil {
			return
		}
		started, err := awaitStarted(wctx, obs, sys, s.id)
		if err != nil {
			jobs[i].err = err
			return
		}
		var doc struct {
			Data struct {
				Attributes struct {
					CreatedAt   time.Time  `json:"created_at"`
					ProcessedAt *time.Time `json:"processed_at"`
				} `json:"attributes"`
			} `json:"data"`
		}
		if err := getJSON(wctx, b.hc, g.url("/v1/llm-tasks/"+s.id), sys.token, &doc); err != nil {
			jobs[i].err = err
			return
		}
		at := doc.Data.Attributes
		if at.ProcessedAt == nil {
			jobs[i].err = fmt.Errorf("job %s: completed without processed_at", s.id)
			return
		}
		jobs[i].lat, wf[i] = at.ProcessedAt.Sub(at.CreatedAt), started.Sub(at.CreatedAt)
	})
	for i, s := range jobs {
		if s.err == nil {
			toWorkflow = append(toWorkflow, wf[i])
		}
	}
	return jobs, toWorkflow
}

// awaitStarted waits for a job's workflow to complete and returns when it
// started.
func awaitStarted(ctx context.Context, obs client.Client, sys system, id string) (time.Time, error) {
	if _, err := awaitClose(ctx, obs, sys, id); err != nil {
		return time.Time{}, err
	}
	iter := obs.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	ev, err := iter.Next()
	if err != nil {
		return time.Time{}, err
	}
	if ev.GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED {
		return time.Time{}, fmt.Errorf("workflow %s: its first event is %s", id, ev.GetEventType())
	}
	return ev.GetEventTime().AsTime(), nil
}

// traces are the jobs that were created, for breakDown.
func traces(jobs []sample) []traced {
	var t []traced
	for _, s := range jobs {
		if s.id != "" {
			t = append(t, traced{id: s.id, due: s.due, lat: s.lat})
		}
	}
	return t
}
