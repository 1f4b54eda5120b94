package workflows

import (
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// outageWaitChange names the GetVersion marker of waiting out an outage:
// when every provider left for a job has an open circuit breaker, the job
// waits on a timer until the first probes, then routes again
// (docs/providers.md, Waiting out an outage). Only jobs that wait record
// it: their routing decision asked for a wait, which a decision before
// this change never did.
const outageWaitChange = "outage-wait"

// minOutageWait is the shortest wait: a probe time already passed still
// gives the breakers a moment.
const minOutageWait = time.Second

// waitReported is how often a job that keeps waiting for the same
// providers projects its wait again.
const waitReported = time.Minute

// waitOutOutage projects why the job waits (attributes.waiting, and a
// *.progress event when it is processing), sleeps until route.Wait.Until,
// and lets the providers whose failure the outage explains be tried
// again. It reports false, without waiting, for a job of a version
// before the change: it fails as it did.
func (j *job) waitOutOutage(ctx workflow.Context, route activities.RouteOutput, attempt int) (bool, error) {
	wait := route.Wait
	if j.version(ctx, outageWaitChange, 1) == workflow.DefaultVersion {
		return false, nil
	}
	now := workflow.Now(ctx).UTC()
	if j.waitingSince == nil {
		j.waitingSince = &now
	}
	// Projected (and notified) when the providers waited for change, and
	// at most once a waitReported otherwise: a job whose probes are taken
	// routes again every few seconds.
	if w := j.snap.Waiting; w == nil || !slices.Equal(w.Providers, wait.Providers) || now.Sub(j.waitReportedAt) >= waitReported {
		j.snap.Waiting = &jobs.Waiting{Reason: jobs.WaitReasonCircuitOpen, Message: wait.Message, Since: *j.waitingSince,
			Until: wait.Until.UTC(), Providers: wait.Providers}
		if err := j.save(ctx); err != nil {
			return false, err
		}
		if j.hooks != nil && j.snap.Status == jobs.StatusProcessing {
			j.hooks.add(jobs.EventProgress, j.snap, now)
		}
		j.waitReportedAt = now
	}
	workflow.GetLogger(ctx).Info("waiting out an outage", "until", wait.Until, "providers", wait.Providers, "attempt", attempt)
	options := workflow.TimerOptions{Summary: "wait out the outage: " + wait.Message}
	if err := workflow.NewTimerWithOptions(ctx, max(wait.Until.Sub(now), minOutageWait), options).Get(ctx, nil); err != nil {
		return false, err
	}
	j.failed = slices.DeleteFunc(j.failed, func(id string) bool { return slices.Contains(wait.Retry, id) })
	return true, nil
}
