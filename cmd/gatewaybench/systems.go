package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
	"github.com/ai-job-gateway/gateway/store"
)

// system is what a load phase drives: the gateway's API, the floor or the
// baseline. submit starts one job and returns its workflow id.
type system struct {
	name    string
	submit  func(context.Context) (string, error)
	results converter.DataConverter // decodes a result's status; nil: any completion succeeds
	starts  *startWatch             // nil: ask Temporal until the workflow exists
	api     *gatewayClient          // the gateway's
}

// succeeded checks a completed workflow's result: the gateway's job
// snapshot or the floor's floorResult says "completed".
func (s *system) succeeded(result *commonpb.Payloads) error {
	if s.results == nil {
		return nil
	}
	var out struct {
		Status string `json:"status"`
	}
	if err := s.results.FromPayloads(result, &out); err != nil {
		return err
	}
	if out.Status != "completed" {
		return fmt.Errorf("%s job ended %q", s.name, out.Status)
	}
	return nil
}

// benchScopes are the scopes of the benchmark's tokens.
const benchScopes = "transcriptions:read transcriptions:write translations:read translations:write " +
	"video-analyses:read video-analyses:write llm-tasks:read llm-tasks:write"

// jobBody is the create request of every phase: an LLM task, which the
// sandbox answers without any network request.
const jobBody = `{"data":{"type":"llm-task-job","attributes":{"input":{"type":"text","text":"The gateway routes jobs to providers.","prompt":"Summarise in five words."}},"meta":{"client":{"bench":"gatewaybench"}}}}`

// gatewayClient calls the gateway's API with one token.
type gatewayClient struct {
	base, token string
	hc          *http.Client
}

// client is a gatewayClient with a token of tenant ("": none) and scopes.
func (d *deployment) client(tenant, scopes string) (*gatewayClient, error) {
	token, err := d.token(tenant, scopes)
	return &gatewayClient{base: d.api.url(""), token: token, hc: d.b.hc}, err
}

// call sends a request with the token; an answer other than want is an
// error, and a JSON answer is decoded into into unless it is nil.
func (c *gatewayClient) call(ctx context.Context, method, path string, body []byte, want int, into any) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != want {
		if len(answer) > 300 {
			answer = append(answer[:300], "…"...)
		}
		err = fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, answer)
	}
	if err == nil && into != nil {
		err = json.Unmarshal(answer, into)
	}
	return resp, err
}

// create creates a job (jobBody) and returns its id.
func (c *gatewayClient) create(ctx context.Context) (string, error) {
	var doc struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	_, err := c.call(ctx, http.MethodPost, "/v1/llm-tasks", []byte(jobBody), http.StatusAccepted, &doc)
	if err == nil && doc.Data.ID == "" {
		err = errors.New("POST /v1/llm-tasks: no job id")
	}
	return doc.Data.ID, err
}

func (c *gatewayClient) get(ctx context.Context, path string, into any) error {
	_, err := c.call(ctx, http.MethodGet, path, nil, http.StatusOK, into)
	return err
}

// gateway is the gateway as a system with a token of tenant, its results
// decoded with the store's secrets; with watch, its starts watched.
func (d *deployment) gateway(ctx context.Context, tenant string, watch bool) (*system, error) {
	api, err := d.client(tenant, benchScopes)
	if err == nil && d.st == nil {
		if d.st, err = store.Open(ctx, d.storeURL); err == nil {
			d.starts = &startWatch{outbox: d.st, waiting: map[string][]chan struct{}{}}
			wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
			var running sync.WaitGroup
			running.Go(func() { d.starts.run(wctx) })
			d.undo = append(d.undo, func() { stop(); running.Wait(); _ = d.st.Close() })
		}
	}
	if err != nil {
		return nil, err
	}
	sys := &system{name: "gateway", submit: api.create, api: api}
	if watch {
		sys.starts = d.starts
	}
	sys.results, err = resultDecoder(d.st.Keys.PayloadSecrets())
	return sys, err
}

// resultDecoder decodes job results encrypted with benchPayloadKeys in
// scopes whose secrets are in secrets, read only: the benchmark never
// makes a scope's secret (docs/operations.md, Payload encryption).
func resultDecoder(secrets payloadcodec.ScopeSecrets) (converter.DataConverter, error) {
	keys, err := payloadcodec.ParseKeys(benchPayloadKeys)
	if err != nil {
		return nil, err
	}
	enc := payloadcodec.New(keys, secrets, payloadcodec.Options{}).ReadOnly()
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), enc.Decoder()), nil
}

// bareInput carries about what the gateway's JobInput carries, so that
// the floor and the baseline move payloads of a similar size.
type bareInput struct {
	ID        string          `json:"id"`
	Request   json.RawMessage `json:"request"`
	CreatedAt time.Time       `json:"created_at"`
}

// floorResult is about what the gateway's workflow returns for an LLM
// task: its status and the sandbox's answer.
type floorResult struct {
	Status string `json:"status"`
	Output string `json:"output"`
}

// FloorWorkflow is the fastest correct hand-written Temporal program for
// the job: the whole job in one local activity inside the first workflow
// task, with nothing on top (no routing, projection or webhooks).
func FloorWorkflow(ctx workflow.Context, in bareInput) (floorResult, error) {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var out floorResult
	err := workflow.ExecuteLocalActivity(ctx, answer, in).Get(ctx, &out)
	return out, err
}

// answer is what a zero-latency sandbox answers.
func answer(context.Context, bareInput) (floorResult, error) {
	return floorResult{Status: "completed", Output: "Gateway routes jobs to providers."}, nil
}

// BaselineWorkflow is what a straightforward Temporal program would do:
// three no-op regular activities, one after the other.
func BaselineWorkflow(ctx workflow.Context, _ bareInput) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	for step := range 3 {
		if err := workflow.ExecuteActivity(ctx, noop, step).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

func noop(context.Context, int) error { return nil }

// bareSystems are the floor and the baseline, their workers in this
// process, started with the gateway's start options.
func (d *deployment) bareSystems(ctx context.Context) (map[string]*system, error) {
	c, err := dial(ctx, d.temporal)
	if err != nil {
		return nil, err
	}
	d.undo = append(d.undo, c.Close)
	start := func(name string, wf any, results converter.DataConverter) (*system, error) {
		queue := "gatewaybench-" + name
		w := worker.New(c, queue, worker.Options{Identity: queue})
		w.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: queue})
		w.RegisterActivity(noop)
		if err := w.Start(); err != nil {
			return nil, fmt.Errorf("start the %s's worker: %w", name, err)
		}
		d.undo = append(d.undo, w.Stop)
		return &system{name: name, results: results, submit: func(ctx context.Context) (string, error) {
			id := uuid.Must(uuid.NewV7()).String()
			_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
				ID: id, TaskQueue: queue, EnableEagerStart: true, Priority: temporal.Priority{PriorityKey: 3},
				WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
				WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
			}, queue, bareInput{ID: id, Request: json.RawMessage(jobBody), CreatedAt: time.Now().UTC()})
			return id, err
		}}, nil
	}
	floor, err1 := start("floor", FloorWorkflow, converter.GetDefaultDataConverter())
	baseline, err2 := start("baseline", BaselineWorkflow, nil)
	return map[string]*system{"floor": floor, "baseline": baseline}, errors.Join(err1, err2)
}

// awaitClose waits for a workflow to complete and returns its close
// event's time; a gateway job's workflow may not exist yet (it starts
// from the outbox): until it does, it waits for the start watch.
func awaitClose(ctx context.Context, obs client.Client, sys *system, id string) (time.Time, error) {
	for {
		iter := obs.GetWorkflowHistory(ctx, id, "", true, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
		if !iter.HasNext() {
			return time.Time{}, fmt.Errorf("workflow %s: no close event", id)
		}
		ev, err := iter.Next()
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) && ctx.Err() == nil {
			if sys.starts == nil {
				time.Sleep(25 * time.Millisecond)
			} else if err := sys.starts.await(ctx, id); err != nil {
				return time.Time{}, err
			}
			continue
		}
		if err != nil {
			return time.Time{}, err
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
}

// startWatch tells when jobs' starts left the outbox, in one query for all
// of them: asking Temporal for workflows not started yet cost its server
// more than the jobs did.
type startWatch struct {
	outbox  *store.Store
	mu      sync.Mutex
	waiting map[string][]chan struct{}
}

// startPoll is how often the outbox is read while jobs wait.
const startPoll = 10 * time.Millisecond

// await waits until job id's workflow was started.
func (w *startWatch) await(ctx context.Context, id string) error {
	started := make(chan struct{})
	w.mu.Lock()
	w.waiting[id] = append(w.waiting[id], started)
	w.mu.Unlock()
	select {
	case <-started:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run reads the outbox for the waiting jobs every startPoll until ctx ends.
func (w *startWatch) run(ctx context.Context) {
	for tick := time.NewTicker(startPoll); ctx.Err() == nil; <-tick.C {
		w.mu.Lock()
		ids := slices.Collect(maps.Keys(w.waiting))
		w.mu.Unlock()
		if len(ids) == 0 {
			continue
		}
		unstarted, err := w.outbox.Jobs.UnstartedJobs(ctx, ids)
		w.mu.Lock()
		for _, id := range ids {
			if err == nil && !unstarted[id] {
				for _, started := range w.waiting[id] {
					close(started)
				}
				delete(w.waiting, id)
			}
		}
		w.mu.Unlock()
	}
}
