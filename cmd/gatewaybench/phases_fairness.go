package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// targetFairnessP95 bounds tenant B's p95 time to start behind tenant A
// over its idle p95 (docs/benchmarks.md, Fairness between tenants).
const targetFairnessP95 = 2.0

// fairness judges the median ratio of FairnessRuns runs of fairnessOnce,
// each on a fresh deployment: one run's p95 of ten jobs is noisy.
func (b *bench) fairness(ctx context.Context, shape string) error {
	var ratios []float64
	for run := 1; run <= b.opts.FairnessRuns; run++ {
		ratio, err := b.fairnessOnce(ctx, shape, run)
		if err != nil {
			return err
		}
		ratios = append(ratios, ratio)
	}
	slices.Sort(ratios)
	median := ratios[len(ratios)/2] // of an even count, the upper middle
	// The runs' ratios go in Value: RunsP99 holds milliseconds.
	x := row{Section: "fairness", Key: "fairness/flooded", System: "gateway",
		Measure: fmt.Sprintf("tenant B's p95 behind A over idle, median of %d runs", len(ratios)),
		Value:   fmt.Sprintf("%.2f× idle, runs %.2f", median, ratios)}
	x.judge(median <= targetFairnessP95, fmt.Sprintf("median ≤ %.0f× idle", targetFairnessP95))
	b.rep.add(x)
	if !*x.Pass {
		return fmt.Errorf("tenant B's p95 time to start behind tenant A's %d jobs is %s (target ≤ %.0f×)", b.opts.FairnessJobs, x.Value, targetFairnessP95)
	}
	return nil
}

// fairnessOnce: tenant B submits FairnessBJobs jobs at once on an idle
// gateway, then tenant A FairnessJobs (16 clients) and B as many again; a
// job's time to start is created_at → processed_at of its document. It
// returns B's p95 behind A over its idle p95.
func (b *bench) fairnessOnce(ctx context.Context, shape string, run int) (float64, error) {
	o := b.opts
	d, err := b.deploy(ctx, shape, "fairness", deploySpec{latency: o.FairnessDelay})
	if err != nil {
		return 0, err
	}
	defer d.close()
	a, err1 := d.gateway(ctx, "bench-a", true)
	tb, err2 := d.gateway(ctx, "bench-b", true)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	b.logf("fairness run %d: tenant B submits %d jobs on the idle gateway", run, o.FairnessBJobs)
	idle, _ := d.timesToStart(ctx, tb)
	b.logf("fairness run %d: tenant A submits %d jobs (16 clients), then tenant B %d", run, o.FairnessJobs, o.FairnessBJobs)
	start := time.Now()
	aJobs := closedLoop(ctx, 16, time.Hour, o.FairnessJobs, a.submit)
	behind, toWorkflow := d.timesToStart(ctx, tb)
	b.logf("fairness run %d: waiting for tenant A's jobs to complete", run)
	aCreated, _ := split(aJobs)
	aDone := d.drain(ctx, a, aCreated)

	section := fmt.Sprintf("fairness run %d", run)
	idleStats, idleErrs := summary(idle)
	x := row{Section: section, System: "gateway", Measure: fmt.Sprintf("… right after tenant A's %d", o.FairnessJobs)}
	x.Latency, x.ErrorSamples = summary(behind)
	ratio := x.Latency.P95 / max(idleStats.P95, 1e-9)
	x.Value = fmt.Sprintf("p95 %.2f× idle", ratio)
	b.rep.add(row{Section: section, System: "gateway", Latency: idleStats, ErrorSamples: idleErrs,
		Measure: fmt.Sprintf("tenant B: %d jobs' created_at → processed_at, idle gateway", o.FairnessBJobs)})
	b.rep.add(x)
	workflowStats, _ := summary(toWorkflow)
	b.rep.add(row{Section: section, System: "gateway", Measure: "… of which created_at → workflow started", Latency: workflowStats})
	done := row{Section: section, System: "gateway", Measure: "tenant A: jobs completed (rate: first create → last completed)"}
	done.Latency, done.ErrorSamples = summary(aDone)
	done.Rate = float64(done.Latency.N) / max(lastEnd(aDone).Sub(start).Seconds(), 1e-9)
	b.rep.add(done)
	if idleStats.N == 0 || x.Latency.N == 0 || idleStats.Errors > 0 || x.Latency.Errors > 0 {
		return 0, fmt.Errorf("fairness run %d: tenant B's jobs failed (%d of %d idle, %d of %d behind A)",
			run, idleStats.Errors, idleStats.N, x.Latency.Errors, x.Latency.N)
	}
	return ratio, nil
}

// timesToStart submits FairnessBJobs jobs at once and returns, once they
// completed, their times to start and from created_at to their workflows.
func (d *deployment) timesToStart(ctx context.Context, sys *system) (jobs, toWorkflow []sample) {
	jobs = closedLoop(ctx, d.b.opts.FairnessBJobs, time.Hour, d.b.opts.FairnessBJobs, sys.submit)
	ctx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	toWorkflow = make([]sample, len(jobs))
	forEach(jobs, len(jobs), func(i int, s sample) {
		var doc struct {
			Data struct {
				Attributes struct {
					CreatedAt   time.Time  `json:"created_at"`
					ProcessedAt *time.Time `json:"processed_at"`
				} `json:"attributes"`
			} `json:"data"`
		}
		err := s.err
		if err == nil {
			_, err = awaitClose(ctx, d.obs, sys, s.id)
		}
		if err == nil {
			err = sys.api.get(ctx, "/v1/llm-tasks/"+s.id, &doc)
		}
		at := doc.Data.Attributes
		if err == nil && at.ProcessedAt == nil {
			err = fmt.Errorf("job %s: completed without processed_at", s.id)
		}
		if err == nil {
			desc, derr := d.obs.DescribeWorkflowExecution(ctx, s.id, "")
			err = derr
			toWorkflow[i].lat = desc.GetWorkflowExecutionInfo().GetStartTime().AsTime().Sub(at.CreatedAt)
		}
		if jobs[i].err, toWorkflow[i].err = err, err; err == nil {
			jobs[i].lat = at.ProcessedAt.Sub(at.CreatedAt)
		}
	})
	return jobs, toWorkflow
}
