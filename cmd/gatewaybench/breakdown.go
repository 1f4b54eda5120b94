package main

import (
	"context"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// breakdown is where a job's submit→completed time went, from its
// workflow history (means over the jobs, in ms). For the gateway, local
// activities (routing, projection writes) run inside workflow tasks.
type breakdown struct {
	Phase         string  `json:"phase"`
	System        string  `json:"system"`
	Jobs          int     `json:"jobs"`
	Submit        float64 `json:"submit_to_started_ms"`      // client send → WorkflowExecutionStarted
	TaskQueue     float64 `json:"workflow_task_queue_ms"`    // WorkflowTaskScheduled → Started
	TaskRun       float64 `json:"workflow_task_run_ms"`      // WorkflowTaskStarted → Completed
	ActivityQueue float64 `json:"activity_queue_ms"`         // ActivityTaskScheduled → Started
	ActivityRun   float64 `json:"activity_run_ms"`           // ActivityTaskStarted → Completed
	Other         float64 `json:"other_ms"`                  // the rest of the total
	Total         float64 `json:"submit_to_completed_ms"`    // client send → WorkflowExecutionCompleted
	WorkflowTasks float64 `json:"workflow_tasks_per_job"`    // including retried ones
	Attempts      float64 `json:"activity_attempts_per_job"` // retries show here
}

// traced is a job to break down: its workflow id and when it was sent.
type traced struct {
	id  string
	due time.Time
	lat time.Duration
}

// breakDown reads the histories of up to n of the jobs (the slowest when
// slowest, otherwise spread evenly) and averages where their time went.
func breakDown(ctx context.Context, obs client.Client, phase, system string, jobs []traced, n int, slowest bool) (*breakdown, error) {
	jobs = slices.Clone(jobs)
	if slowest {
		slices.SortFunc(jobs, func(a, b traced) int { return int(b.lat - a.lat) })
		jobs = jobs[:min(n, len(jobs))]
	} else if len(jobs) > n {
		step := float64(len(jobs)) / float64(n)
		var picked []traced
		for i := range n {
			picked = append(picked, jobs[int(float64(i)*step)])
		}
		jobs = picked
	}
	b := &breakdown{Phase: phase, System: system}
	for _, j := range jobs {
		var started, closed time.Time
		scheduled := map[int64]time.Time{}
		var taskStart time.Time
		iter := obs.GetWorkflowHistory(ctx, j.id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				return nil, err
			}
			at := ev.GetEventTime().AsTime()
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
				started = at
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
				scheduled[ev.GetEventId()] = at
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
				b.WorkflowTasks++
				if s, ok := scheduled[ev.GetWorkflowTaskStartedEventAttributes().GetScheduledEventId()]; ok {
					b.TaskQueue += ms(at.Sub(s))
				}
				taskStart = at
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
				b.TaskRun += ms(at.Sub(taskStart))
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				scheduled[ev.GetEventId()] = at
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
				a := ev.GetActivityTaskStartedEventAttributes()
				b.Attempts += float64(a.GetAttempt())
				if s, ok := scheduled[a.GetScheduledEventId()]; ok {
					b.ActivityQueue += ms(at.Sub(s))
				}
				scheduled[-ev.GetEventId()] = at
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED, enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
				var startedID int64
				switch {
				case ev.GetActivityTaskCompletedEventAttributes() != nil:
					startedID = ev.GetActivityTaskCompletedEventAttributes().GetStartedEventId()
				case ev.GetActivityTaskFailedEventAttributes() != nil:
					startedID = ev.GetActivityTaskFailedEventAttributes().GetStartedEventId()
				default:
					startedID = ev.GetActivityTaskTimedOutEventAttributes().GetStartedEventId()
				}
				if s, ok := scheduled[-startedID]; ok {
					b.ActivityRun += ms(at.Sub(s))
				}
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
				closed = at
			}
		}
		if started.IsZero() || closed.IsZero() {
			continue
		}
		b.Jobs++
		b.Submit += ms(started.Sub(j.due))
		b.Total += ms(closed.Sub(j.due))
	}
	if b.Jobs == 0 {
		return b, nil
	}
	n64 := float64(b.Jobs)
	for _, f := range []*float64{&b.Submit, &b.TaskQueue, &b.TaskRun, &b.ActivityQueue, &b.ActivityRun, &b.Total, &b.WorkflowTasks, &b.Attempts} {
		*f /= n64
	}
	b.Other = b.Total - b.Submit - b.TaskQueue - b.TaskRun - b.ActivityQueue - b.ActivityRun
	return b, nil
}
