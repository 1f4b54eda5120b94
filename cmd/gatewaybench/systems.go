package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// system is what a load phase drives: the gateway's API or the bare
// Temporal baseline.
type system interface {
	name() string
	// submit starts one job and returns its workflow id.
	submit(ctx context.Context) (string, error)
	// succeeded checks a completed workflow's result.
	succeeded(result *commonpb.Payloads) error
}

// jobBody is the create request of every load phase: an LLM task, which
// the sandbox answers without any network request.
const jobBody = `{"data":{"type":"llm-task-job","attributes":{"input":{"type":"text","text":"The gateway routes jobs to providers.","prompt":"Summarise in five words."}},"meta":{"client":{"bench":"gatewaybench"}}}}`

// gatewaySystem submits jobs with POST /v1/llm-tasks.
type gatewaySystem struct {
	base  string
	token string
	hc    *http.Client
	// results decodes the jobs' results, which the gateway encrypts
	// (resultDecoder); without it succeeded fails.
	results converter.DataConverter
	// starts says when a job's workflow was started; nil: ask Temporal
	// until it exists.
	starts *startWatch
}

func (s *gatewaySystem) name() string { return "gateway" }

func (s *gatewaySystem) submit(ctx context.Context) (string, error) {
	body, err := call(ctx, s.hc, http.MethodPost, s.base+"/v1/llm-tasks", "/v1/llm-tasks", s.token, []byte(jobBody), http.StatusAccepted)
	if err != nil {
		return "", err
	}
	var doc struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.Data.ID == "" {
		return "", fmt.Errorf("POST /v1/llm-tasks: no job id in %s", truncate(body))
	}
	return doc.Data.ID, nil
}

func (s *gatewaySystem) succeeded(result *commonpb.Payloads) error {
	if s.results == nil {
		return errors.New("job result not checked: the gateway encrypts it and this gateway system has no payload keys (resultDecoder)")
	}
	return endedCompletedWith(s.results, result, "job")
}

// endedCompleted checks that a workflow's result (the gateway's job
// snapshot, the floor's floorResult) has the status "completed"; what
// names the job in the error.
func endedCompleted(result *commonpb.Payloads, what string) error {
	return endedCompletedWith(nil, result, what)
}

// endedCompletedWith is endedCompleted decoding with dc (nil: the SDK's
// default converter).
func endedCompletedWith(dc converter.DataConverter, result *commonpb.Payloads, what string) error {
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	var out struct {
		Status string `json:"status"`
	}
	if err := dc.FromPayloads(result, &out); err != nil {
		return err
	}
	if out.Status != "completed" {
		return fmt.Errorf("%s ended %q", what, out.Status)
	}
	return nil
}

// The baseline: a workflow of three no-op activities, on its own task
// queue, with its worker in this process.
const (
	baselineQueue    = "gatewaybench-baseline"
	baselineWorkflow = "GatewayBenchBaseline"
	baselineActivity = "GatewayBenchNoop"
)

// baselineInput carries about what the gateway's JobInput carries, so
// both workflows move payloads of a similar size.
type baselineInput struct {
	ID        string          `json:"id"`
	Request   json.RawMessage `json:"request"`
	CreatedAt time.Time       `json:"created_at"`
}

// BaselineWorkflow runs three no-op activities one after the other.
func BaselineWorkflow(ctx workflow.Context, in baselineInput) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	for step := range 3 {
		if err := workflow.ExecuteActivity(ctx, baselineActivity, step).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// noop is the baseline's activity.
func noop(context.Context, int) error { return nil }

// newBaseline starts the baseline's worker on c.
func newBaseline(c client.Client) (*taskQueueSystem, error) {
	s := &taskQueueSystem{label: "baseline", queue: baselineQueue, workflow: baselineWorkflow, c: c}
	return s, s.startWorker(BaselineWorkflow, noop, baselineActivity)
}

// startWorker runs the system's worker with its workflow and activity.
func (s *taskQueueSystem) startWorker(wf, act any, activityName string) error {
	s.w = worker.New(s.c, s.queue, worker.Options{Identity: "gatewaybench-" + s.label})
	s.w.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: s.workflow})
	s.w.RegisterActivityWithOptions(act, activity.RegisterOptions{Name: activityName})
	if err := s.w.Start(); err != nil {
		return fmt.Errorf("start %s worker: %w", s.label, err)
	}
	return nil
}

// taskQueueSystem starts a bare Temporal workflow (the baseline or the
// floor) with the SDK, with the options the gateway's API uses (eager
// start, conflict and reuse policies, priority), and runs its worker.
type taskQueueSystem struct {
	label, queue, workflow string
	c                      client.Client
	w                      worker.Worker
	check                  func(*commonpb.Payloads) error // nil: any completion
}

func (s *taskQueueSystem) name() string { return s.label }

func (s *taskQueueSystem) submit(ctx context.Context) (string, error) {
	id := uuid.Must(uuid.NewV7()).String()
	_, err := s.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                s.queue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		EnableEagerStart:         true,
		Priority:                 temporal.Priority{PriorityKey: 3},
	}, s.workflow, baselineInput{ID: id, Request: json.RawMessage(jobBody), CreatedAt: time.Now().UTC()})
	if err != nil {
		return "", err
	}
	return id, nil
}

func (s *taskQueueSystem) succeeded(result *commonpb.Payloads) error {
	if s.check == nil {
		return nil
	}
	return s.check(result)
}

// The floor: the fastest correct hand-written Temporal program for the
// same job. Eager start, and the whole job in one local activity inside
// the first workflow task: one start call and one task completion, as
// the gateway's job, with nothing on top (no routing, projection or
// webhooks). Its worker runs in this process.
const (
	floorQueue    = "gatewaybench-floor"
	floorWorkflow = "GatewayBenchFloor"
	floorActivity = "GatewayBenchAnswer"
)

// floorResult is about what the gateway's workflow returns for an LLM
// task: its status and the sandbox's answer.
type floorResult struct {
	Status string `json:"status"`
	Output string `json:"output"`
}

// FloorWorkflow answers the job in one local activity.
func FloorWorkflow(ctx workflow.Context, in baselineInput) (floorResult, error) {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var out floorResult
	err := workflow.ExecuteLocalActivity(ctx, floorActivity, in).Get(ctx, &out)
	return out, err
}

// answer is the floor's activity: what a zero-latency sandbox answers.
func answer(_ context.Context, in baselineInput) (floorResult, error) {
	return floorResult{Status: "completed", Output: "Gateway routes jobs to providers."}, nil
}

// newFloor starts the floor's worker on c.
func newFloor(c client.Client) (*taskQueueSystem, error) {
	s := &taskQueueSystem{label: "floor", queue: floorQueue, workflow: floorWorkflow, c: c,
		check: func(result *commonpb.Payloads) error { return endedCompleted(result, "floor job") }}
	return s, s.startWorker(FloorWorkflow, answer, floorActivity)
}

// awaitClose waits for a workflow to close and returns when it did (the
// server's time of the close event); an outcome other than success is an
// error. A gateway job's workflow may not exist yet when its create
// answers (it is started from the outbox of accepted jobs): until it does,
// awaitClose asks again every 25 ms, which does not change the time it
// returns.
func awaitClose(ctx context.Context, obs client.Client, sys system, id string) (time.Time, error) {
	var ev *historypb.HistoryEvent
	for {
		iter := obs.GetWorkflowHistory(ctx, id, "", true, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
		if !iter.HasNext() {
			return time.Time{}, fmt.Errorf("workflow %s: no close event", id)
		}
		var err error
		ev, err = iter.Next()
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) && ctx.Err() == nil {
			if gw, ok := sys.(*gatewaySystem); ok && gw.starts != nil {
				if err := gw.starts.await(ctx, id); err != nil {
					return time.Time{}, err
				}
				continue
			}
			time.Sleep(25 * time.Millisecond)
			continue
		}
		if err != nil {
			return time.Time{}, err
		}
		break
	}
	attrs := ev.GetWorkflowExecutionCompletedEventAttributes()
	if attrs == nil {
		return time.Time{}, fmt.Errorf("workflow %s closed with %s", id, ev.GetEventType())
	}
	if err := sys.succeeded(attrs.GetResult()); err != nil {
		return time.Time{}, fmt.Errorf("workflow %s: %w", id, err)
	}
	return ev.GetEventTime().AsTime(), nil
}
