package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/mocks"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/api/devidp"
	"github.com/ai-job-gateway/gateway/app/apikeys"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
	"github.com/ai-job-gateway/gateway/workflows"
)

// audience is the audience the API verifies tokens for.
const audience = "ai-job-gateway"

// Default identity of the tokens tests mint.
const (
	tenantA = "acme"
	userA   = "alice"
	tenantB = "globex"
	userB   = "bob"
)

// fixedNow is the API's clock in every test.
var fixedNow = time.Date(2025, 3, 4, 5, 6, 7, 89_000_000, time.UTC)

// fixedNowJSON is fixedNow as the API renders it.
const fixedNowJSON = "2025-03-04T05:06:07.089Z"

// Config values echoed in meta.system.
const (
	testRegion = "eu-test-1"
	testNodeID = "api-node-7"
)

// testCatalogYAML is the catalog every test runs against, so capability
// checks do not depend on the built-in catalog:
//   - alpha offers every service and feature (llm model: model-a);
//   - narrow lacks diarization and formality, lists languages, offers two
//     video features and no llm-tasks;
//   - switched-off is disabled at provider level and offers alpha's
//     services (capabilities active);
//   - half-off has transcriptions disabled, translations active;
//   - llm-only is degraded and offers llm-tasks with models model-a, model-b.
const testCatalogYAML = `
providers:
  - id: alpha
    name: Alpha
    adapter: sandbox
    quality: 0.9
    latency_ms_hint: 100
    settings: {latency_ms: 0, fail_rate: 0}
    services: &every-service
      transcriptions:
        features: [language_detection, diarization, timestamps]
        limits: {requests_per_minute: 600, requests_per_day: 100000, max_file_size_mb: 500, max_duration_seconds: 14400}
        pricing: {unit: per_minute, amount: 0.006, currency: USD}
      translations:
        features: [language_detection, formality]
        limits: {requests_per_minute: 300, requests_per_day: 50000, max_file_size_mb: 20, max_duration_seconds: 600}
        pricing: {unit: per_character, amount: 0.00002, currency: EUR}
      video-analyses:
        features: [labels, scenes, faces, speech_to_text, ocr, content_moderation, sentiment, topics, brands, summary]
        limits: {requests_per_minute: 60, requests_per_day: 5000, max_file_size_mb: 5000, max_duration_seconds: 7200}
        pricing: {unit: per_minute, amount: 0.1, currency: USD}
      llm-tasks:
        models: [model-a]
        limits: {requests_per_minute: 600, requests_per_day: 100000, max_file_size_mb: 10, max_duration_seconds: 600}
        pricing: {unit: per_token, amount: 0.000002, currency: USD}
  - id: narrow
    name: Narrow
    adapter: sandbox
    services:
      transcriptions:
        features: [language_detection, timestamps]
        languages: [en, de]
        limits: {requests_per_minute: 60, requests_per_day: 1000, max_file_size_mb: 100, max_duration_seconds: 3600}
        pricing: {unit: per_minute, amount: 0.002, currency: USD}
      translations:
        features: [language_detection]
        source_languages: [en]
        target_languages: [de, fr]
        limits: {requests_per_minute: 60, requests_per_day: 1000, max_file_size_mb: 5, max_duration_seconds: 60}
        pricing: {unit: per_character, amount: 0.00001, currency: USD}
      video-analyses:
        features: [labels, scenes]
        limits: {requests_per_minute: 10, requests_per_day: 100, max_file_size_mb: 1000, max_duration_seconds: 600}
        pricing: {unit: per_minute, amount: 0.02, currency: USD}
  - id: switched-off
    name: Switched off
    adapter: sandbox
    status: disabled
    services: *every-service
  - id: half-off
    name: Half off
    adapter: sandbox
    services:
      transcriptions:
        features: [language_detection, diarization, timestamps]
        status: disabled
        limits: {requests_per_minute: 60, requests_per_day: 1000, max_file_size_mb: 100, max_duration_seconds: 3600}
        pricing: {unit: per_minute, amount: 0.003, currency: USD}
      translations:
        features: [language_detection, formality]
        limits: {requests_per_minute: 60, requests_per_day: 1000, max_file_size_mb: 5, max_duration_seconds: 60}
        pricing: {unit: per_character, amount: 0.00003, currency: USD}
  - id: llm-only
    name: LLM only
    adapter: sandbox
    status: degraded
    services:
      llm-tasks:
        models: [model-a, model-b]
        limits: {requests_per_minute: 30, requests_per_day: 500, max_file_size_mb: 2, max_duration_seconds: 120}
        pricing: {unit: per_token, amount: 0.0000005, currency: USD}
`

// resource is a job resource with its job type.
type resource struct {
	id      string // URL segment and scope prefix
	jobType string
}

// resources are the four job resources.
var resources = []resource{
	{"transcriptions", "transcription-job"},
	{"translations", "translation-job"},
	{"video-analyses", "video-analysis-job"},
	{"llm-tasks", "llm-task-job"},
}

// eachResource runs test for every job resource, each in a parallel
// subtest named after it.
func eachResource(t *testing.T, test func(t *testing.T, res resource)) {
	t.Helper()
	for _, res := range resources {
		t.Run(res.id, func(t *testing.T) {
			t.Parallel()
			test(t, res)
		})
	}
}

// validBodies are minimal valid create requests per resource.
var validBodies = map[string]string{
	"transcriptions": `{"data": {"type": "transcription-job", "attributes": {
		"input": {"type": "audio", "url": "https://media.example.com/talk.mp3"}}}}`,
	"translations": `{"data": {"type": "translation-job", "attributes": {
		"input": {"type": "text", "content": "Hello world", "target_language": "de"}}}}`,
	"video-analyses": `{"data": {"type": "video-analysis-job", "attributes": {
		"input": {"url": "https://media.example.com/clip.mp4", "features": ["labels"]}}}}`,
	"llm-tasks": `{"data": {"type": "llm-task-job", "attributes": {
		"input": {"type": "text", "text": "The quick brown fox.", "prompt": "Summarise the text."}}}}`,
}

// keyTemplate holds one dev signing key, generated once and copied into
// each test's issuer data dir: RSA key generation would otherwise dominate
// the suite's run time.
var keyTemplate string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "api-test-key-")
	if err != nil {
		panic(err)
	}
	if _, err := devidp.Open(dir, "http://127.0.0.1"+devidp.Path); err != nil {
		panic(err)
	}
	keyTemplate = filepath.Join(dir, "dev-oidc", "signing-key.json")
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// startedWorkflow is one ExecuteWorkflow call the Temporal mock saw.
type startedWorkflow struct {
	Options  client.StartWorkflowOptions
	Workflow any
	Input    jobs.Submission
	// Deletion is the input of a deleted job's erasure.
	Deletion *workflows.DeletionInput
	// Resend is the input of a webhook resend.
	Resend *workflows.WebhookResend
}

// bundle is one API served over HTTP with its dependencies.
type bundle struct {
	server   *httptest.Server
	handler  http.Handler
	issuer   *devidp.Issuer
	store    *store.Store
	temporal *mocks.Client
	ops      *jobops.Service

	mu         sync.Mutex
	starts     []startedWorkflow
	cancels    []string
	failStarts int   // the next failStarts starts fail
	startErr   error // returned by every start while set
	cancelErr  error // returned by CancelWorkflow

	// histories are the first events of the workflows that ran (ran).
	histories map[string]*historypb.HistoryEvent
}

// setup serves a fresh API: a dev issuer on the same httptest server, a
// real verifier, a fresh SQLite store, the test catalog and a Temporal mock
// that records starts and cancellations and, when the API waits for a
// cancelled workflow, plays the workflow's part by recording the job as
// failed with CANCELLED.
func setup(t *testing.T) *bundle {
	t.Helper()
	return setupWith(t, storetest.SQLite)
}

// setupWith is setup on the store openStore gives (storetest.Postgres for
// tests about the database).
func setupWith(t *testing.T, openStore func(testing.TB) *store.Store) *bundle {
	t.Helper()
	return setupConfigured(t, openStore, func(*api.Config) {})
}

// setupConfigured is setupWith with the API's configuration adjusted by
// configure (webhook key, a store wrapper).
func setupConfigured(t testing.TB, openStore func(testing.TB) *store.Store, configure func(*api.Config)) *bundle {
	t.Helper()
	return setupJobOps(t, openStore, nil, configure)
}

// setupJobOps is setupConfigured with the job operations' configuration
// adjusted first by configureJobs (URL checks, a store wrapper); either
// function may be nil.
func setupJobOps(t testing.TB, openStore func(testing.TB) *store.Store, configureJobs func(*jobops.Config), configure func(*api.Config)) *bundle {
	t.Helper()
	b := &bundle{}

	var handler http.Handler
	b.server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(b.server.Close)
	baseURL := "http://" + b.server.Listener.Addr().String()

	b.issuer = openIssuer(t, baseURL+devidp.Path)
	b.store = openStore(t)

	catalog, err := providers.ParseCatalog([]byte(testCatalogYAML))
	require.NoError(t, err)

	b.temporal = mocks.NewClient(t)
	b.temporal.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).
		Return(b.executeWorkflow).Maybe()
	b.temporal.On("CancelWorkflow", mock.Anything, mock.Anything, mock.Anything).
		Return(b.cancelWorkflow).Maybe()
	b.temporal.On("GetWorkflow", mock.Anything, mock.Anything, mock.Anything).
		Return(b.getWorkflow).Maybe()
	b.temporal.On("GetWorkflowHistory", mock.Anything, mock.Anything, mock.Anything, mock.Anything, mock.Anything).
		Return(b.getWorkflowHistory).Maybe()

	// A real dispatcher of job starts, quick to retry, on the mock.
	starts := jobops.NewDispatcher(jobops.DispatcherConfig{
		Store:         b.store.Jobs,
		Temporal:      b.temporal,
		SweepInterval: 10 * time.Millisecond,
		MinRetryDelay: 10 * time.Millisecond,
		Generation:    workflows.StampedGeneration,
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		starts.Run(ctx)
	}()
	t.Cleanup(func() {
		stop()
		<-done
	})

	jobsCfg := jobops.Config{
		Generation: workflows.StampedGeneration,
		Jobs:       b.store.Jobs,
		Tenants:    b.store.Routing,
		Statuses:   b.store.Routing,
		Policies:   b.store.Routing,
		Rates:      b.store.Routing,
		Batches:    b.store.Batches,
		Catalog:    catalog,
		Temporal:   b.temporal,
		Starts:     starts,
		Audit:      b.store.Audit,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:        func() time.Time { return fixedNow },
	}
	if configureJobs != nil {
		configureJobs(&jobsCfg)
	}
	ops, err := jobops.New(jobsCfg)
	require.NoError(t, err)
	b.ops = ops

	cfg := api.Config{
		Store:      b.store.Jobs,
		Batches:    b.store.Batches,
		Jobs:       ops,
		Catalog:    catalog,
		Verifier:   auth.NewVerifier(b.issuer.URL(), audience, b.server.Client()),
		APIKeys:    apikeys.New(b.store.APIKeys, b.store.Routing, apikeys.TagsOf([]byte("test tags")), nil, slog.New(slog.NewTextHandler(io.Discard, nil))),
		Audit:      b.store.Audit,
		Tenants:    b.store.Routing,
		Statuses:   b.store.Routing,
		Policies:   b.store.Routing,
		Deliveries: b.store.Webhooks,
		Usage:      b.store.Usage,
		Routes:     []func(gin.IRouter){b.issuer.Routes},
		Region:     testRegion,
		NodeID:     testNodeID,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:        func() time.Time { return fixedNow },
	}
	if configure != nil {
		configure(&cfg)
	}
	srv, err := api.New(cfg)
	require.NoError(t, err)
	handler = srv.Handler()
	b.handler = handler
	b.server.Start()
	return b
}

// openIssuer opens a dev issuer with the template key in a fresh data dir.
func openIssuer(t testing.TB, issuerURL string) *devidp.Issuer {
	t.Helper()
	dataDir := t.TempDir()
	key, err := os.ReadFile(keyTemplate)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dataDir, "dev-oidc"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dataDir, "dev-oidc", "signing-key.json"), key, 0o600))
	issuer, err := devidp.Open(dataDir, issuerURL)
	require.NoError(t, err)
	return issuer
}

func (b *bundle) executeWorkflow(_ context.Context, opts client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	started := startedWorkflow{Options: opts, Workflow: wf}
	if len(args) == 1 {
		started.Input, _ = args[0].(jobs.Submission)
		if in, ok := args[0].(workflows.DeletionInput); ok {
			started.Deletion = &in
		}
		if in, ok := args[0].(workflows.WebhookResend); ok {
			started.Resend = &in
		}
	}
	b.starts = append(b.starts, started)
	if b.startErr != nil {
		return nil, b.startErr
	}
	if b.failStarts > 0 {
		b.failStarts--
		return nil, errors.New("temporal: connection refused")
	}
	run := &mocks.WorkflowRun{}
	run.On("GetRunID").Return("run-" + opts.ID).Maybe()
	return run, nil
}

func (b *bundle) cancelWorkflow(_ context.Context, workflowID, _ string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cancels = append(b.cancels, workflowID)
	return b.cancelErr
}

// getWorkflow returns a run whose Get records the job as the workflow does
// once cancelled: failed with CANCELLED.
func (b *bundle) getWorkflow(_ context.Context, workflowID, _ string) client.WorkflowRun {
	run := &mocks.WorkflowRun{}
	run.On("Get", mock.Anything, mock.Anything).Return(func(ctx context.Context, _ any) error {
		job, err := b.store.Jobs.GetJob(ctx, workflowID)
		if err != nil {
			return err
		}
		if job.Terminal() {
			return nil
		}
		completed := fixedNow.Add(time.Second)
		job.Status = jobs.StatusFailed
		job.ErrorCode = jobs.CodeCancelled
		job.ErrorMessage = "the job was cancelled"
		job.CompletedAt = &completed
		job.Revision++
		if err := b.store.Jobs.SaveJob(ctx, job); err != nil {
			return err
		}
		return errors.New("workflow cancelled")
	})
	return run
}

// ran records that job's workflow ran, started with the submission it
// returns (at priority 3), as jobops.Service.Retry reads it back from the
// workflow's history.
func (b *bundle) ran(t *testing.T, job *jobs.Record) jobs.Submission {
	t.Helper()
	return b.ranWith(t, job, nil)
}

// ranWith is ran with the submission amended by amend (nil: as is).
func (b *bundle) ranWith(t *testing.T, job *jobs.Record, amend func(*jobs.Submission)) jobs.Submission {
	t.Helper()
	sub := jobs.Submission{JobID: job.ID, Service: job.Service, Tenant: job.Tenant, UserID: job.UserID,
		Input: json.RawMessage(job.Input), CreatedAt: job.CreatedAt}
	if amend != nil {
		amend(&sub)
	}
	payload, err := converter.GetDefaultDataConverter().ToPayload(sub)
	require.NoError(t, err)
	event := &historypb.HistoryEvent{EventId: 1, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
		Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{
			WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
				Input:    &commonpb.Payloads{Payloads: []*commonpb.Payload{payload}},
				Priority: &commonpb.Priority{PriorityKey: 3},
			},
		}}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.histories == nil {
		b.histories = map[string]*historypb.HistoryEvent{}
	}
	b.histories[job.ID] = event
	return sub
}

// getWorkflowHistory returns the first event ran recorded for the
// workflow; Temporal's NotFound for any other.
func (b *bundle) getWorkflowHistory(_ context.Context, workflowID, _ string, _ bool, _ enumspb.HistoryEventFilterType) client.HistoryEventIterator {
	b.mu.Lock()
	defer b.mu.Unlock()
	if event, ok := b.histories[workflowID]; ok {
		return &historyIterator{events: []*historypb.HistoryEvent{event}}
	}
	return &historyIterator{err: serviceerror.NewNotFound("workflow not found for ID: " + workflowID)}
}

// historyIterator yields events, or err first, as Temporal's iterator
// does when the history cannot be read.
type historyIterator struct {
	events []*historypb.HistoryEvent
	err    error
}

func (it *historyIterator) HasNext() bool { return it.err != nil || len(it.events) > 0 }

func (it *historyIterator) Next() (*historypb.HistoryEvent, error) {
	if it.err != nil {
		err := it.err
		it.err = nil
		return nil, err
	}
	event := it.events[0]
	it.events = it.events[1:]
	return event, nil
}

// started waits until the workflow of every job the API accepted was
// started (the outbox of starts is empty; at most 10 s), then returns the
// starts the mock saw, failed ones included.
func (b *bundle) started() []startedWorkflow {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if n, err := b.store.Jobs.CountJobStarts(context.Background()); err == nil && n == 0 {
			break
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]startedWorkflow(nil), b.starts...)
}

// startedFor returns the workflow started for a job id.
func (b *bundle) startedFor(t *testing.T, jobID string) startedWorkflow {
	t.Helper()
	var found []startedWorkflow
	for _, s := range b.started() {
		if s.Input.JobID == jobID {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "workflows started for job %s", jobID)
	return found[0]
}

// cancelled returns the workflow ids CancelWorkflow was called with.
func (b *bundle) cancelled() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.cancels...)
}

func (b *bundle) setFailStarts(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failStarts = n
}

func (b *bundle) setStartErr(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.startErr = err
}

func (b *bundle) setCancelErr(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cancelErr = err
}

// assertNoStarts fails the test when the API accepted a job or started
// any workflow; it does not stop the test, so it is safe in t.Cleanup.
func (b *bundle) assertNoStarts(t *testing.T) {
	t.Helper()
	assert.Empty(t, b.started(), "no workflow may be started")
}

// assertNoCancels fails the test when the API cancelled any workflow; it
// does not stop the test, so it is safe in t.Cleanup.
func (b *bundle) assertNoCancels(t *testing.T) {
	t.Helper()
	assert.Empty(t, b.cancelled(), "no workflow may be cancelled")
}

// assertUntouched makes the test, once it and its subtests end, check
// that no workflow was started or cancelled.
func (b *bundle) assertUntouched(t *testing.T) {
	t.Cleanup(func() {
		b.assertNoStarts(t)
		b.assertNoCancels(t)
	})
}

// --- tokens ---------------------------------------------------------------

// mint signs a token with the bundle's issuer.
func (b *bundle) mint(t *testing.T, req devidp.TokenRequest) string {
	t.Helper()
	token, err := b.issuer.Mint(req)
	require.NoError(t, err)
	return token
}

// token mints a token for tenant acme, user alice, with scopes.
func (b *bundle) token(t *testing.T, scopes ...string) string {
	t.Helper()
	return b.mint(t, devidp.TokenRequest{Tenant: tenantA, Subject: userA, Scopes: scopes, Audience: audience})
}

// tokenFor mints a token for another tenant and user.
func (b *bundle) tokenFor(t *testing.T, tenant, user string, scopes ...string) string {
	t.Helper()
	return b.mint(t, devidp.TokenRequest{Tenant: tenant, Subject: user, Scopes: scopes, Audience: audience})
}

// writeToken may create jobs of every resource; readToken may read them.
func (b *bundle) writeToken(t *testing.T) string {
	t.Helper()
	return b.token(t, "transcriptions:write", "translations:write", "video-analyses:write", "llm-tasks:write")
}

func (b *bundle) readToken(t *testing.T) string {
	t.Helper()
	return b.token(t, "transcriptions:read", "translations:read", "video-analyses:read", "llm-tasks:read")
}

// allScopes are the job scopes of every resource.
func allScopes(extra ...string) []string {
	var out []string
	for _, r := range resources {
		out = append(out, r.id+":read", r.id+":write")
	}
	return append(out, extra...)
}

// --- requests -------------------------------------------------------------

// response is a buffered HTTP response.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends a request; body is nil, a string or []byte (sent as is), an
// io.Reader (sent chunked) or anything else (sent as JSON). headers are
// name, value pairs.
func (b *bundle) do(t *testing.T, method, path, token string, body any, headers ...string) *response {
	t.Helper()
	require.Zero(t, len(headers)%2, "headers are name, value pairs")
	var reader io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		reader = strings.NewReader(v)
	case []byte:
		reader = bytes.NewReader(v)
	case io.Reader:
		reader = v
	default:
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		reader = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, b.server.URL+path, reader)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	var sent []byte
	if req.GetBody != nil {
		if r, err := req.GetBody(); err == nil {
			sent, _ = io.ReadAll(r)
		}
	}
	resp, err := b.server.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	answer := &response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
	checkAgainstOpenAPI(t, req, sent, answer)
	return answer
}

// object decodes the response body as a JSON object.
func (r *response) object(t *testing.T) map[string]any {
	t.Helper()
	var out map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &out), "body: %s", r.Body)
	return out
}

// data returns the data member of a single-resource response.
func (r *response) data(t *testing.T) map[string]any {
	t.Helper()
	data, ok := r.object(t)["data"].(map[string]any)
	require.True(t, ok, "data must be an object: %s", r.Body)
	return data
}

// requireStatus checks the status, showing the body on failure.
func (r *response) requireStatus(t *testing.T, status int) {
	t.Helper()
	require.Equal(t, status, r.Status, "body: %s", r.Body)
}

// requireError checks an error response: status, the {error: {code,
// message}} shape with nothing else but pointer (which the message starts
// with) and request_id, and that the message names each of
// pointers (JSON pointers, or header and scope names) as a whole. It
// returns the message.
func requireError(t *testing.T, r *response, status int, code string, pointers ...string) string {
	t.Helper()
	require.Equal(t, status, r.Status, "body: %s", r.Body)
	require.Contains(t, r.Header.Get("Content-Type"), "application/json")
	var body struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			Pointer   string `json:"pointer"`
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&body), "error body must be {error: {code, message, pointer, request_id}}: %s", r.Body)
	if p := body.Error.Pointer; p != "" {
		require.True(t, strings.HasPrefix(body.Error.Message, p+": "), "the message %q starts with error.pointer %s", body.Error.Message, p)
	}
	require.Equal(t, code, body.Error.Code, "body: %s", r.Body)
	require.NotEmpty(t, body.Error.Message)
	require.Equal(t, r.Header.Get("X-Request-Id"), body.Error.RequestID, "the error names the request's id")
	require.NotEmpty(t, body.Error.RequestID)
	for _, p := range pointers {
		require.True(t, mentions(body.Error.Message, p), "the message %q must name %s", body.Error.Message, p)
	}
	return body.Error.Message
}

// mentions reports whether msg contains name as a whole: a pointer such as
// /data/attributes/input must not match /data/attributes/input/url.
func mentions(msg, name string) bool {
	inName := func(r byte) bool {
		return r == '/' || r == '_' || r == '-' || r == '~' ||
			'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	for from := 0; ; {
		i := strings.Index(msg[from:], name)
		if i < 0 {
			return false
		}
		start, end := from+i, from+i+len(name)
		if (start == 0 || !inName(msg[start-1])) && (end == len(msg) || !inName(msg[end])) {
			return true
		}
		from = start + 1
	}
}

// rejectCase is a request body the API must refuse with status (422 when
// zero) and code (VALIDATION_ERROR when empty), the message naming
// pointers.
type rejectCase struct {
	name     string
	body     any
	status   int
	code     string
	pointers []string
}

// requireRejects sends each case's body with send, in a parallel subtest
// named after it, and checks the error; then runs more checks, if any, on
// the response.
func requireRejects(t *testing.T, cases []rejectCase, send func(t *testing.T, body any) *response, more ...func(*testing.T, *response)) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, code := tc.status, tc.code
			if status == 0 {
				status = http.StatusUnprocessableEntity
			}
			if code == "" {
				code = "VALIDATION_ERROR"
			}
			r := send(t, tc.body)
			requireError(t, r, status, code, tc.pointers...)
			for _, check := range more {
				check(t, r)
			}
		})
	}
}

// create posts a create request and requires 202; it returns data.
func (b *bundle) create(t *testing.T, resource, token string, body any, headers ...string) map[string]any {
	t.Helper()
	r := b.do(t, http.MethodPost, "/v1/"+resource, token, body, headers...)
	r.requireStatus(t, http.StatusAccepted)
	return r.data(t)
}

// --- request bodies -------------------------------------------------------

// edit changes a request document at a JSON pointer.
type edit struct {
	pointer string
	value   any
	remove  bool
}

// set replaces (or adds) the member at pointer.
func set(pointer string, value any) edit { return edit{pointer: pointer, value: value} }

// del removes the member at pointer.
func del(pointer string) edit { return edit{pointer: pointer, remove: true} }

// body returns the valid create request of resource with edits applied.
func body(t *testing.T, resource string, edits ...edit) map[string]any {
	t.Helper()
	raw, ok := validBodies[resource]
	require.True(t, ok, "no valid body for %s", resource)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &doc))
	for _, e := range edits {
		applyEdit(t, doc, e)
	}
	return doc
}

// applyEdit applies e to doc, creating intermediate objects as needed.
func applyEdit(t *testing.T, doc map[string]any, e edit) {
	t.Helper()
	tokens := strings.Split(strings.TrimPrefix(e.pointer, "/"), "/")
	for i, tok := range tokens {
		tokens[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
	}
	var parent any = doc
	for _, tok := range tokens[:len(tokens)-1] {
		switch p := parent.(type) {
		case map[string]any:
			next, ok := p[tok]
			if !ok || next == nil {
				next = map[string]any{}
				p[tok] = next
			}
			parent = next
		case []any:
			i, err := strconv.Atoi(tok)
			require.NoError(t, err)
			parent = p[i]
		default:
			t.Fatalf("edit %s: cannot descend into %T", e.pointer, parent)
		}
	}
	last := tokens[len(tokens)-1]
	p, ok := parent.(map[string]any)
	require.True(t, ok, "edit %s: parent is not an object", e.pointer)
	if e.remove {
		delete(p, last)
		return
	}
	p[last] = e.value
}

// --- seeded jobs ----------------------------------------------------------

// seed stores a job as the workflow would have projected it; zero fields
// get defaults (a new id, tenant acme, user alice, now).
func (b *bundle) seed(t *testing.T, job jobs.Record) *jobs.Record {
	t.Helper()
	fillSeed(&job)
	require.NoError(t, b.store.Jobs.SaveJob(context.Background(), &job))
	return &job
}

// fillSeed gives a seeded job what it lacks.
func fillSeed(job *jobs.Record) {
	if job.ID == "" {
		job.ID = uuid.Must(uuid.NewV7()).String()
	}
	if job.Tenant == "" {
		job.Tenant = tenantA
	}
	if job.UserID == "" {
		job.UserID = userA
	}
	if job.Input == "" {
		job.Input = seedInputs[string(job.Service)]
	}
	if job.CreatedAt.IsZero() {
		job.CreatedAt = fixedNow
	}
	if job.Status != jobs.StatusPending {
		processed := job.CreatedAt.Add(2 * time.Second)
		job.ProcessedAt = &processed
		if job.Provider == "" {
			job.Provider = "alpha"
		}
		if job.Routing == "" {
			job.Routing = `{"provider_id":"` + job.Provider + `","reason":"explicit_choice","attempt":1,"decided_at":"2025-03-04T05:06:09Z"}`
			job.RoutingHistory = "[" + job.Routing + "]"
		}
	}
	if job.Terminal() && job.CompletedAt == nil {
		completed := job.CreatedAt.Add(time.Minute)
		job.CompletedAt = &completed
	}
	job.Revision = 1
}

// seedInputs are stored inputs per service.
var seedInputs = map[string]string{
	"transcriptions": `{"type":"audio","url":"https://media.example.com/talk.mp3"}`,
	"translations":   `{"type":"text","content":"Hello world","target_language":"de"}`,
	"video-analyses": `{"url":"https://media.example.com/clip.mp4","features":["labels"]}`,
	"llm-tasks":      `{"type":"text","text":"The quick brown fox.","prompt":"Summarise the text."}`,
}

// jobPath is the path of a job of resource.
// seedUnstarted records a pending job of service as the API does, with
// its start in the outbox leased for an hour, so no dispatcher makes it
// meanwhile.
func (b *bundle) seedUnstarted(t *testing.T, service string) string {
	t.Helper()
	job := &jobs.Record{Service: jobs.ServiceID(service), Status: jobs.StatusPending}
	fillSeed(job)
	input, err := json.Marshal(jobs.Submission{JobID: job.ID, Service: job.Service, Tenant: job.Tenant, UserID: job.UserID,
		Input: json.RawMessage(job.Input), CreatedAt: job.CreatedAt})
	require.NoError(t, err)
	created, err := b.store.Jobs.CreateJob(t.Context(), job, &store.JobStart{Input: string(input), Priority: 3, NextAttemptAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	require.True(t, created)
	return job.ID
}

func jobPath(resource, id string, rest ...string) string {
	return "/v1/" + resource + "/" + id + strings.Join(rest, "")
}

func TestMentions(t *testing.T) {
	t.Parallel()
	require.True(t, mentions("/data/attributes/input: is required", "/data/attributes/input"))
	require.True(t, mentions(`the token lacks the scope "llm-tasks:read"`, "llm-tasks:read"))
	require.True(t, mentions("/a/b and /a/b/c", "/a/b/c"))
	require.False(t, mentions("/data/attributes/input/url: is required", "/data/attributes/input"))
	require.False(t, mentions("/data/attributes/input/features/1: repeats", "/data/attributes/input/features"))
	require.False(t, mentions("no tenant_id claim", "tenant"))
	require.False(t, mentions("", "/data"))
}

// sampleResults are results of each service, shaped as providers return
// them (docs/api.md, Jobs), for seeded completed jobs.
var sampleResults = map[string]string{
	"transcriptions": `{"format":"json","duration":2.5,"text":"done"}`,
	"translations":   `{"source_language":"en","target_language":"de","content":"fertig","character_count":6}`,
	"video-analyses": `{"summary":"done"}`,
	"llm-tasks":      `{"content":"done","finish_reason":"completed"}`,
}

// sqliteInto opens a SQLite store as storetest.SQLite does and keeps it in
// *st, for configure functions that need more of it than the harness
// wires.
func sqliteInto(st **store.Store) func(testing.TB) *store.Store {
	return func(t testing.TB) *store.Store {
		*st = storetest.SQLite(t)
		return *st
	}
}
