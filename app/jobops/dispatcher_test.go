package jobops_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
	"github.com/ai-job-gateway/gateway/workflows"
)

// bundle is a dispatcher on a fresh SQLite store and a Temporal mock that
// records starts.
type bundle struct {
	store *store.Store
	d     *jobops.Dispatcher

	mu      sync.Mutex
	starts  []client.StartWorkflowOptions
	inputs  []jobs.Submission
	results []error       // returned by the next starts, in order; then nil
	gate    chan struct{} // when set, each start waits for a value
}

func setup(t *testing.T, eager bool) *bundle {
	t.Helper()
	return setupConfigured(t, func(cfg *jobops.DispatcherConfig) { cfg.EagerStart = eager })
}

// setupConfigured is setup with the dispatcher's configuration adjusted.
func setupConfigured(t *testing.T, configure func(*jobops.DispatcherConfig)) *bundle {
	t.Helper()
	b := &bundle{store: storetest.SQLite(t)}
	tc := mocks.NewClient(t)
	tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.JobWorkflowName, mock.Anything).
		Return(b.executeWorkflow).Maybe()
	cfg := jobops.DispatcherConfig{
		Store:         b.store.Jobs,
		Temporal:      tc,
		SweepInterval: 10 * time.Millisecond,
		MinRetryDelay: 20 * time.Millisecond,
		MaxRetryDelay: 40 * time.Millisecond,
		Generation:    workflows.StampedGeneration,
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	configure(&cfg)
	b.d = jobops.NewDispatcher(cfg)
	return b
}

// countingStore counts the starts handed back to the outbox.
type countingStore struct {
	*store.JobStore
	released atomic.Int32
}

func (s *countingStore) ReleaseJobStarts(ctx context.Context, jobIDs []string, now time.Time) error {
	s.released.Add(int32(len(jobIDs)))
	return s.JobStore.ReleaseJobStarts(ctx, jobIDs, now)
}

// run runs the dispatcher until the returned stop is called (or the test
// ends); stop waits for Run to return.
func (b *bundle) run(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.d.Run(ctx)
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return stop
}

// runGated is run with a closed gate: every start waits at it until
// openGate.
func (b *bundle) runGated(t *testing.T) (stop func()) {
	t.Helper()
	b.gate = make(chan struct{})
	return b.run(t)
}

func (b *bundle) executeWorkflow(ctx context.Context, opts client.StartWorkflowOptions, _ any, args ...any) (client.WorkflowRun, error) {
	b.mu.Lock()
	gate := b.gate
	b.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.starts = append(b.starts, opts)
	b.inputs = append(b.inputs, args[0].(jobs.Submission))
	if len(b.results) > 0 {
		err := b.results[0]
		b.results = b.results[1:]
		return nil, err
	}
	return &mocks.WorkflowRun{}, nil
}

// openGate lets the starts waiting at the gate, and all later ones,
// through, and waits until every start was made.
func (b *bundle) openGate(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	close(b.gate)
	b.gate = nil
	b.mu.Unlock()
	b.waitOutboxEmpty(t)
}

func (b *bundle) started() []client.StartWorkflowOptions {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]client.StartWorkflowOptions(nil), b.starts...)
}

// record records a pending job and its start as the API does, due at due.
func (b *bundle) record(t *testing.T, priority int, due time.Time) store.JobStart {
	t.Helper()
	id := uuid.Must(uuid.NewV7()).String()
	now := time.Now().UTC()
	input, err := json.Marshal(jobs.Submission{JobID: id, Service: "llm-tasks", Tenant: "acme", UserID: "alice",
		Input: json.RawMessage(`{"type":"text","content":"hi"}`), CreatedAt: now})
	require.NoError(t, err)
	job := &jobs.Record{ID: id, Service: "llm-tasks", Tenant: "acme", UserID: "alice", Status: jobs.StatusPending,
		Input: `{"type":"text","content":"hi"}`, Options: "{}", CreatedAt: now}
	start := store.JobStart{Input: string(input), Priority: priority, NextAttemptAt: due}
	created, err := b.store.Jobs.CreateJob(t.Context(), job, &start)
	require.NoError(t, err)
	require.True(t, created)
	return start
}

// accept records a job and its start as the API does: leased to this
// dispatcher and offered to it while it has room, due at once otherwise.
func (b *bundle) accept(t *testing.T, priority int) (start store.JobStart, leased bool) {
	t.Helper()
	due := b.d.Lease("acme")
	start = b.record(t, priority, due)
	b.d.Offer(start, time.Millisecond)
	return start, due.After(time.Now())
}

// waitOutboxEmpty waits until every start was made.
func (b *bundle) waitOutboxEmpty(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		n, err := b.store.Jobs.CountJobStarts(t.Context())
		return err == nil && n == 0
	}, 10*time.Second, 5*time.Millisecond, "the outbox of starts empties")
}

func TestOfferedStartIsMadeAndCleared(t *testing.T) {
	t.Parallel()
	for _, eager := range []bool{true, false} {
		b := setup(t, eager)
		b.run(t)
		start, offered := b.accept(t, 1)
		require.True(t, offered)
		b.waitOutboxEmpty(t)

		starts := b.started()
		require.Len(t, starts, 1)
		opts := starts[0]
		require.Equal(t, start.JobID, opts.ID, "the workflow id is the job id")
		require.Equal(t, workflows.TaskQueue, opts.TaskQueue)
		require.Equal(t, eager, opts.EnableEagerStart)
		require.Equal(t, 1, opts.Priority.PriorityKey)
		require.Equal(t, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, opts.WorkflowIDConflictPolicy)
		require.Equal(t, enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE, opts.WorkflowIDReusePolicy)
		b.mu.Lock()
		in := b.inputs[0]
		b.mu.Unlock()
		require.Equal(t, start.JobID, in.JobID)
		require.Equal(t, "acme", in.Tenant)
		require.JSONEq(t, `{"type":"text","content":"hi"}`, string(in.Input))
		require.Equal(t, workflows.StampedGeneration, in.Generation, "the configured generation is stamped")
	}
}

func TestStartsLeftInTheOutboxAreMade(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	// Left by a process that stopped: their leases ran out. And one whose
	// lease still runs, which stays.
	low := b.record(t, 5, time.Now().Add(-time.Minute))
	high := b.record(t, 1, time.Now().Add(-time.Second))
	leased := b.record(t, 3, time.Now().Add(time.Hour))
	b.run(t)
	require.Eventually(t, func() bool { return len(b.started()) == 2 }, 10*time.Second, 5*time.Millisecond)
	starts := b.started()
	require.Equal(t, []string{high.JobID, low.JobID}, []string{starts[0].ID, starts[1].ID}, "most urgent first")
	_, err := b.store.Jobs.GetJobStart(t.Context(), leased.JobID)
	require.NoError(t, err, "a leased start is its holder's to make")
}

// TestFailedStartIsRetried: a start that fails is retried, whether the
// failure is transient or one of the refusals Temporal also answers
// invalid-argument for that are mistakes of the deployment (a lowered
// limit, a task queue name); those starts wait, retried, instead of
// failing every job.
func TestFailedStartIsRetried(t *testing.T) {
	t.Parallel()
	for name, failures := range map[string][]error{
		"transient":  {errors.New("connection refused"), serviceerror.NewUnavailable("try later")},
		"deployment": {serviceerror.NewInvalidArgument("TaskQueue length exceeds limit."), serviceerror.NewInvalidArgument("Identity length exceeds limit.")},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			b.results = failures
			b.run(t)
			start, _ := b.accept(t, 3)
			b.waitOutboxEmpty(t)
			starts := b.started()
			require.Len(t, starts, 3, "two failures, then the start")
			for _, s := range starts {
				require.Equal(t, start.JobID, s.ID)
			}
			job, err := b.store.Jobs.GetJob(t.Context(), start.JobID)
			require.NoError(t, err)
			require.Equal(t, jobs.StatusPending, job.Status, "its workflow runs it")
		})
	}
}

// requireNotStarted checks a job ended failed at its start: JOB_NOT_STARTED
// with a message mentioning why, completed, and out of the outbox.
func (b *bundle) requireNotStarted(t *testing.T, jobID, why string) {
	t.Helper()
	job, err := b.store.Jobs.GetJob(t.Context(), jobID)
	require.NoError(t, err)
	require.Equal(t, jobs.StatusFailed, job.Status)
	require.Equal(t, jobs.CodeNotStarted, job.ErrorCode)
	require.Contains(t, job.ErrorMessage, why)
	require.NotNil(t, job.CompletedAt)
	_, err = b.store.Jobs.GetJobStart(t.Context(), jobID)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestStartRefusedForGoodFailsTheJob(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	// What Temporal answers a workflow input over its payload limit.
	b.results = []error{serviceerror.NewInvalidArgument("Blob data size exceeds limit.")}
	b.run(t)
	start, _ := b.accept(t, 3)
	b.waitOutboxEmpty(t)
	b.requireNotStarted(t, start.JobID, "Blob data size exceeds limit.")
	time.Sleep(200 * time.Millisecond) // several retry delays
	require.Len(t, b.started(), 1, "not retried")
}

func TestUnreadableStartFailsTheJob(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.run(t)
	id := uuid.Must(uuid.NewV7()).String()
	job := &jobs.Record{ID: id, Service: "llm-tasks", Tenant: "acme", UserID: "alice", Status: jobs.StatusPending,
		Input: `{}`, Options: "{}", CreatedAt: time.Now().UTC()}
	created, err := b.store.Jobs.CreateJob(t.Context(), job, &store.JobStart{Input: `{"job_id":`, NextAttemptAt: time.Now()})
	require.NoError(t, err)
	require.True(t, created)
	b.waitOutboxEmpty(t)
	b.requireNotStarted(t, id, "cannot be read")
	require.Empty(t, b.started())
}

// failingStore cannot record a job's failure.
type failingStore struct {
	*store.JobStore
	failed atomic.Int32
}

func (s *failingStore) FailJobStart(context.Context, string, string, string, time.Time) error {
	s.failed.Add(1)
	return errors.New("database is away")
}

func TestStartRefusedForGoodIsRetriedUntilTheFailureIsRecorded(t *testing.T) {
	t.Parallel()
	var failing *failingStore
	b := setupConfigured(t, func(cfg *jobops.DispatcherConfig) {
		failing = &failingStore{JobStore: cfg.Store.(*store.JobStore)}
		cfg.Store = failing
	})
	b.results = []error{serviceerror.NewInvalidArgument("Blob data size exceeds limit."), serviceerror.NewInvalidArgument("Blob data size exceeds limit.")}
	start := b.record(t, 3, time.Now().Add(time.Hour))
	err := b.d.StartNow(t.Context(), start.JobID)
	require.ErrorContains(t, err, "Blob data size exceeds limit.")
	require.NotErrorIs(t, err, jobops.ErrNotStarted, "the job did not fail")
	require.EqualValues(t, 1, failing.failed.Load())
	got, err := b.store.Jobs.GetJobStart(t.Context(), start.JobID)
	require.NoError(t, err, "the start stays, to be refused and failed again")
	require.Equal(t, 1, got.Attempts)
	job, err := b.store.Jobs.GetJob(t.Context(), start.JobID)
	require.NoError(t, err)
	require.Equal(t, jobs.StatusPending, job.Status)
}

func TestStartOfAFinishedWorkflowCountsAsMade(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.results = []error{serviceerror.NewWorkflowExecutionAlreadyStarted("already started", "", "")}
	b.run(t)
	b.accept(t, 3)
	b.waitOutboxEmpty(t)
	require.Len(t, b.started(), 1, "not retried: the job ran")
}

func TestBacklogBeyondTheQueueWaitsInTheOutbox(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.runGated(t)
	const n = 150 // more than the dispatcher holds in memory
	var offered int
	var urgent store.JobStart
	for i := range n {
		priority := 5
		if i == n-1 {
			priority = 1 // accepted last, beyond the queue
		}
		s, ok := b.accept(t, priority)
		if ok {
			offered++
		}
		urgent = s
	}
	require.Less(t, offered, n/2, "starts are leased while the queue is less than half full")
	require.Positive(t, offered)
	b.openGate(t)
	seen := map[string]int{}
	for i, s := range b.started() {
		seen[s.ID] = i
	}
	require.Len(t, seen, n, "every start was made, those left in the outbox too")
	// At most the queue (128) and the start held at the gate go before it:
	// of the starts waiting in the outbox, the most urgent is made first.
	at, ok := seen[urgent.JobID]
	require.True(t, ok)
	require.LessOrEqual(t, at, 129)
}

func TestBacklogIsSweptAsTheQueueRunsLow(t *testing.T) {
	t.Parallel()
	var counted *countingStore
	b := setupConfigured(t, func(cfg *jobops.DispatcherConfig) {
		counted = &countingStore{JobStore: cfg.Store.(*store.JobStore)}
		cfg.Store = counted
		cfg.SweepInterval = time.Hour // only the queue running low wakes the sweep
	})
	b.runGated(t)
	const n = 300
	var leased int
	for range n {
		if _, ok := b.accept(t, 3); ok {
			leased++
		}
	}
	require.Less(t, leased, n/2)
	require.Zero(t, counted.released.Load(), "a start recorded due costs no second statement")
	b.openGate(t)
	require.Len(t, b.started(), n)
}

func TestOfferWhenTheQueueFilledMeanwhile(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.runGated(t)
	// Offered beyond Lease's answer (as concurrent requests may): what
	// the queue cannot hold is handed back to the outbox.
	const n = 150
	for range n {
		b.d.Offer(b.record(t, 3, time.Now().Add(time.Hour)), time.Millisecond)
	}
	b.openGate(t)
	require.Len(t, b.started(), n)
}

func TestStopHandsBackWhatItHeld(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	stop := b.runGated(t)
	var offered []store.JobStart
	for range 5 {
		s, ok := b.accept(t, 3)
		require.True(t, ok)
		offered = append(offered, s)
	}
	stop()
	require.Empty(t, b.started())
	for _, s := range offered {
		got, err := b.store.Jobs.GetJobStart(t.Context(), s.JobID)
		require.NoError(t, err)
		require.False(t, got.NextAttemptAt.After(time.Now()), "due at once for the next dispatcher, not when the lease ends")
	}
}

func TestStartNow(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	start := b.record(t, 3, time.Now().Add(time.Hour))
	require.NoError(t, b.d.StartNow(t.Context(), start.JobID))
	require.Len(t, b.started(), 1)
	_, err := b.store.Jobs.GetJobStart(t.Context(), start.JobID)
	require.ErrorIs(t, err, store.ErrNotFound)

	require.NoError(t, b.d.StartNow(t.Context(), start.JobID), "a start made already is not an error")
	require.Len(t, b.started(), 1, "and is not made again")

	failing := b.record(t, 3, time.Now().Add(time.Hour))
	b.results = []error{errors.New("connection refused")}
	require.ErrorContains(t, b.d.StartNow(t.Context(), failing.JobID), "connection refused")
	got, err := b.store.Jobs.GetJobStart(t.Context(), failing.JobID)
	require.NoError(t, err)
	require.Equal(t, 1, got.Attempts)

	// Refused for good: the job fails, and StartNow says so.
	refused := b.record(t, 3, time.Now().Add(time.Hour))
	b.results = []error{serviceerror.NewInvalidArgument("Blob data size exceeds limit.")}
	err = b.d.StartNow(t.Context(), refused.JobID)
	require.ErrorIs(t, err, jobops.ErrNotStarted)
	b.requireNotStarted(t, refused.JobID, "Blob data size exceeds limit.")
}
