package main

import (
	"context"
	"fmt"
	"time"
)

// targetFairnessP95 bounds tenant B's p95 time to start behind tenant A
// over its idle p95 (docs/benchmarks.md, Fairness between tenants).
const targetFairnessP95 = 2.0

// fairness: tenant B submits FairnessBJobs jobs at once on an idle
// gateway, then tenant A FairnessJobs (16 clients) and B as many again; a
// job's time to start is created_at → processed_at of its document.
func (b *bench) fairness(ctx context.Context, shape string) error {
	o := b.opts
	d, err := b.deploy(ctx, shape, "fairness", deploySpec{latency: o.FairnessDelay})
	if err != nil {
		return err
	}
	defer d.close()
	a, err := d.gateway(ctx, "bench-a", true)
	if err != nil {
		return err
	}
	tb, err := d.gateway(ctx, "bench-b", true)
	if err != nil {
		return err
	}
	b.logf("fairness: tenant B submits %d jobs on the idle gateway", o.FairnessBJobs)
	idle, _ := d.timesToStart(ctx, tb)
	b.logf("fairness: tenant A submits %d jobs (16 clients), then tenant B %d", o.FairnessJobs, o.FairnessBJobs)
	start := time.Now()
	aJobs := closedLoop(ctx, 16, time.Hour, o.FairnessJobs, a.submit)
	submitted := time.Since(start)
	behind, toWorkflow := d.timesToStart(ctx, tb)
	b.logf("fairness: waiting for tenant A's jobs to complete")
	aCreated, _ := split(aJobs)
	aDone := d.drain(ctx, a, aCreated)

	idleStats, idleErrs := summary(idle)
	x := row{Section: "fairness", Key: "fairness/flooded", System: "gateway", Measure: fmt.Sprintf("… right after tenant A's %d", o.FairnessJobs)}
	x.Latency, x.ErrorSamples = summary(behind)
	ratio := x.Latency.P95 / max(idleStats.P95, 1e-9)
	x.Value = fmt.Sprintf("p95 %.2f× idle", ratio)
	x.judge(ratio <= targetFairnessP95 && idleStats.N > 0 && idleStats.Errors == 0, fmt.Sprintf("p95 ≤ %.0f× idle", targetFairnessP95))
	b.rep.add(row{Section: "fairness", Key: "fairness/idle", System: "gateway", Latency: idleStats, ErrorSamples: idleErrs,
		Measure: fmt.Sprintf("tenant B: %d jobs' created_at → processed_at, idle gateway", o.FairnessBJobs)})
	b.rep.add(x)
	workflowStats, _ := summary(toWorkflow)
	b.rep.add(row{Section: "fairness", System: "gateway", Measure: "… of which created_at → workflow started", Latency: workflowStats})
	create := row{Section: "fairness", Key: "fairness/a-create", System: "gateway", Rate: float64(len(aCreated)) / submitted.Seconds(),
		Measure: fmt.Sprintf("tenant A: create %d jobs (16 clients)", o.FairnessJobs)}
	create.Latency, create.ErrorSamples = summary(aJobs)
	b.rep.add(create)
	done := row{Section: "fairness", Key: "fairness/a-completed", System: "gateway", Measure: "tenant A: jobs completed (rate: first create → last completed)"}
	done.Latency, done.ErrorSamples = summary(aDone)
	if last := lastEnd(aDone); last.After(start) {
		done.Rate = float64(done.Latency.N) / last.Sub(start).Seconds()
	}
	b.rep.add(done)
	b.rep.note("fairness", "gateway", "sandbox latency of the provider calls", "%s", o.FairnessDelay)
	if !*x.Pass {
		return fmt.Errorf("tenant B's p95 time to start behind tenant A's %d jobs is %.1f ms, %.2f× its idle %.1f ms (target ≤ %.0f×)",
			o.FairnessJobs, x.Latency.P95, ratio, idleStats.P95, targetFairnessP95)
	}
	return nil
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
